"""Files of plain arrays (``.npz``): exported weights, checkpoints, the compile
cache. tfc writes plain arrays only and reads them with ``allow_pickle=False``;
a file holding pickled objects is refused with what is wrong with it, never
numpy's advice to load it with ``allow_pickle=True``."""

PICKLED = ("holds pickled Python objects (an object array), which tfc never writes and refuses to "
           "load (unpickling runs code from the file)")


def is_pickled(e: BaseException) -> bool:
    """Is ``e`` numpy's refusal of pickled data (``allow_pickle=False``)?"""
    return isinstance(e, ValueError) and "allow_pickle" in str(e)

