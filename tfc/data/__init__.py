"""``tfc.data``: input pipelines (``Dataset``) as TensorFlow's ``tf.data`` (docs/data.md)."""
from tfc.data.dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset

__all__ = ["AUTOTUNE", "Dataset", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY"]


def __dir__():
    return list(__all__)
