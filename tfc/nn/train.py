"""``tfc.train``: checkpoints (TensorFlow's name for the namespace)."""
from tfc.nn.checkpoint import Checkpoint, RestoreStatus  # noqa: F401
