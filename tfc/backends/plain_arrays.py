"""Files of plain arrays (``.npz``): exported weights, checkpoints, the compile
cache. tfc writes plain arrays only and reads them with ``allow_pickle=False``;
numpy's refusal of pickled data advises loading it with ``allow_pickle=True``:
``refusal`` says what is wrong with the file instead."""

# an .npz member that numpy refuses (an object array)
PICKLED = ("an object array (pickled Python objects), which tfc never writes and refuses to load: "
           "unpickling would run code from the file")
# a whole file that is neither .npz nor .npy (numpy takes anything else for a pickle)
NOT_ARRAYS = "not an .npz archive of arrays (numpy would read it as a pickle, which tfc never loads)"


def refusal(e: BaseException) -> str | None:
    """What is wrong with the file, where ``e`` is numpy refusing pickled data;
    None for any other error."""
    if not isinstance(e, ValueError) or "allow_pickle" not in str(e):
        return None
    return PICKLED if "Object arrays" in str(e) else NOT_ARRAYS
