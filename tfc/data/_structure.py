"""Elements of a dataset: nested structures of tensors, as ``tf.data`` sees them.

Tuples (namedtuples too) and dicts are structure; anything else, lists
included, is one component, converted to a tensor (``from_tensor_slices([1, 2])``
slices one tensor, as in TensorFlow). Components are flattened in a fixed order
(dicts in their key order) and packed back into the same structure.
"""
from __future__ import annotations

from tfc.core.tensor import Tensor, constant, convert_to_tensor
from tfc.core.variable import Variable


def is_structure(x) -> bool:
    return isinstance(x, (tuple, dict))


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def flatten(s) -> list:
    """The components of ``s`` in order."""
    if isinstance(s, dict):
        return [c for v in s.values() for c in flatten(v)]
    if isinstance(s, tuple):
        return [c for v in s for c in flatten(v)]
    return [s]


def pack(s, flat):
    """``s`` with its components replaced, in order, by ``flat``."""
    it = iter(flat)
    out = _pack(s, it)
    if next(it, _END) is not _END:
        raise ValueError("tfc.data: more components than the structure holds")
    return out


_END = object()


def _pack(s, it):
    if isinstance(s, dict):
        return type(s)((k, _pack(v, it)) for k, v in s.items())
    if _is_namedtuple(s):
        return type(s)(*(_pack(v, it) for v in s))
    if isinstance(s, tuple):
        return tuple(_pack(v, it) for v in s)
    return next(it)


def paths(s, prefix: str = "") -> list[str]:
    """A name for each component, for error messages: ``[0]``, ``['image']``."""
    if isinstance(s, dict):
        return [p for k, v in s.items() for p in paths(v, f"{prefix}[{k!r}]")]
    if isinstance(s, tuple):
        return [p for i, v in enumerate(s) for p in paths(v, f"{prefix}[{i}]")]
    return [prefix or "the element"]


def flatten_as(structure, value, what: str) -> list:
    """The components of ``value`` in the order of ``structure``, which it must
    match (dicts by their keys, in any order; any tuples for tuples); a
    TypeError naming the first place where it does not."""
    out: list = []
    _flatten_as(structure, value, "", what, out)
    return out


def _flatten_as(s, v, path, what, out):
    where = path or "the element"
    if isinstance(s, dict):
        if not isinstance(v, dict) or set(v) != set(s):
            raise TypeError(f"{what}: {where} should be a dict with keys {sorted(s, key=repr)}, got {_kind(v)}")
        for k in s:
            _flatten_as(s[k], v[k], f"{path}[{k!r}]", what, out)
    elif isinstance(s, tuple):
        if not isinstance(v, tuple) or len(v) != len(s):
            raise TypeError(f"{what}: {where} should be a tuple of {len(s)}, got {_kind(v)}")
        for i, (a, b) in enumerate(zip(s, v)):
            _flatten_as(a, b, f"{path}[{i}]", what, out)
    elif is_structure(v):
        raise TypeError(f"{what}: {where} should be one component, got {_kind(v)}")
    else:
        out.append(v)


def _kind(v) -> str:
    if isinstance(v, dict):
        return f"a dict with keys {sorted(v, key=repr)}"
    if isinstance(v, tuple):
        return f"a tuple of {len(v)}"
    return f"a value of type {type(v).__name__}"


def to_tensors(s, what: str, symbolic: bool = False):
    """``s`` with every component a tfc tensor (a list is one component: a list
    of tensors is stacked into one, as ``tf.convert_to_tensor`` does).
    ``symbolic``: symbolic tensors of a function being traced are accepted (a
    dataset built inside the function, iterated by its tensor loops)."""
    flat = flatten(s)
    out = []
    for p, c in zip(paths(s), flat):
        if c is None:
            raise TypeError(f"{what}: component {p} is None; an element holds tensors only")
        if isinstance(c, Tensor) and c.symbolic and symbolic:
            out.append(c)
            continue
        if isinstance(c, Tensor) and c.symbolic:
            raise RuntimeError(f"{what}: component {p} is a symbolic tensor of a function being traced; "
                               f"a dataset's elements are computed eagerly")
        try:
            out.append(constant(c) if isinstance(c, Variable) else component(c))  # a variable's value now
        except (TypeError, ValueError) as e:
            raise type(e)(f"{what}: component {p}: {e}") from None
    return pack(s, out)


def component(c, dtype=None) -> Tensor:
    """One component as a tensor: a list holding tensors is their stack, of
    their dtype, numbers in it converted to it (as ``tf.convert_to_tensor``
    packs it; converted as an array it became float32, and a symbolic tensor
    cannot be read)."""
    if isinstance(c, Tensor):
        return c
    if isinstance(c, list):
        first = _first_tensor(c)
        if first is not None:
            from tfc.ops.shapes import stack

            return stack([component(x, first.dtype) for x in c])
    return convert_to_tensor(c, dtype)


def _first_tensor(items):
    for x in items:
        t = x if isinstance(x, Tensor) else _first_tensor(x) if isinstance(x, list) else None
        if t is not None:
            return t
    return None
