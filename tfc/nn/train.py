"""``tfc.train``: checkpoints (TensorFlow's name for the namespace)."""
from tfc.nn.checkpoint import Checkpoint, RestoreStatus

__all__ = ["Checkpoint", "RestoreStatus"]


def __dir__():
    """Only the public names."""
    return list(__all__)
