"""The op declarations, one module per family. Importing this package
registers every op and attaches the Tensor operators."""
from tfc.ops import creation, linalg, math, reductions, shapes  # noqa: F401
from tfc.ops import collective, control_flow, conv, nn, random, summary  # noqa: F401
from tfc.ops import operators  # noqa: F401  (last: uses the ops above)
