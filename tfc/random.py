"""``tfc.random``: random tensors and the global seed (Philox4x32-10, counter
based: docs/random.md)."""
from tfc.ops.random import normal, set_seed, uniform  # noqa: F401

__all__ = ["uniform", "normal", "set_seed"]
