"""``tfc.random``: random tensors and the global seed (Philox4x32-10, counter
based: docs/random.md)."""
from tfc.ops.random import categorical, normal, set_seed, shuffle, truncated_normal, uniform  # noqa: F401

__all__ = ["uniform", "normal", "truncated_normal", "categorical", "shuffle", "set_seed"]
