"""Nested structures of tensors (lists, tuples, namedtuples, dicts), flattened
in a fixed order and packed back, as TensorFlow's ``tf.nest`` does."""
from __future__ import annotations


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_nested(x) -> bool:
    return isinstance(x, (list, tuple, dict))


def flatten(structure) -> list:
    """Leaves in order; dicts by sorted key."""
    out: list = []
    _flatten(structure, out)
    return out


def _flatten(s, out):
    if isinstance(s, dict):
        for k in sorted(s, key=repr):
            _flatten(s[k], out)
    elif isinstance(s, (list, tuple)):
        for x in s:
            _flatten(x, out)
    else:
        out.append(s)


def pack_sequence_as(structure, flat):
    """``structure`` with its leaves replaced, in order, by ``flat``."""
    it = iter(flat)
    result = _pack(structure, it)
    rest = list(it)
    if rest:
        raise ValueError(f"pack_sequence_as: {len(rest)} values left over")
    return result


def _pack(s, it):
    if isinstance(s, dict):
        packed = {k: _pack(s[k], it) for k in sorted(s, key=repr)}
        return type(s)((k, packed[k]) for k in s) if type(s) is not dict else {k: packed[k] for k in s}
    if _is_namedtuple(s):
        return type(s)(*(_pack(x, it) for x in s))
    if isinstance(s, (list, tuple)):
        return type(s)(_pack(x, it) for x in s)
    return next(it)


def map_structure(fn, *structures):
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*xs) for xs in zip(*flats)])


def structure_signature(s):
    """A hashable description of the structure (not the leaves)."""
    if isinstance(s, dict):
        return ("dict", tuple((repr(k), structure_signature(s[k])) for k in sorted(s, key=repr)))
    if isinstance(s, (list, tuple)):
        return (type(s).__name__, tuple(structure_signature(x) for x in s))
    return "*"
