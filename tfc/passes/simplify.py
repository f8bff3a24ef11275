"""Algebraic simplification: x*1, x+(-0.0), x-(+0.0) -> x (and x+0, x-0 for
integers; a float x + 0.0 is +0.0 where x is -0.0, so it stays); x-x -> 0 for integers;
x**2 -> x*x (pow by a constant 2, integer_pow with n=2); transpose(transpose(x)) -> one transpose (or x);
matmul(transpose(x), y) -> matmul(x, y, transpose_a) where the transpose swaps the last two axes (eager's bits:
both hand BLAS the same view; a copied transpose would take BLAS's other path);
reshape(reshape(x)) -> one reshape; a reshape to the same type -> x;
reshape(f(a, b)) -> f(reshape(a), reshape(b)) for an elementwise f used only by
the reshape (operands of its shape, or 0-d), so that fusion sees one shape
through the chain (the values are the same element by element). A rewrite
applies only when the result keeps its type (so a broadcasting x*1 stays)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from tfc.dialects.tensor import ConstantOp, RegistryOp, build_op, spec_of, tensor_type
from tfc.passes.pipeline import require_tensor_ir


def const_value(ssa):
    return ssa.owner.numpy() if isinstance(ssa.owner, ConstantOp) else None


def _is(ssa, value) -> bool:
    v = const_value(ssa)
    return v is not None and v.size > 0 and bool(np.all(v == value))


def _is_zero_keeping(ssa, negative: bool) -> bool:
    """``ssa`` is a constant zero that adding (``negative``: -0.0) or
    subtracting (+0.0) leaves every x unchanged, the sign of a zero included."""
    v = const_value(ssa)
    if v is None or v.size == 0 or not np.all(v == 0):
        return False
    return not np.issubdtype(v.dtype, np.floating) or bool(np.all(np.signbit(v) == negative))


def _is_scalar(ssa, value) -> bool:
    v = const_value(ssa)
    return v is not None and v.size == 1 and v.reshape(()) == value


def _name(ssa):
    return ssa.owner.OPDEF.name if isinstance(ssa.owner, RegistryOp) else None


def _replace(op, new_ops, value):
    for n in new_ops:
        n.location = op.location
    Rewriter.replace_op(op, new_ops, [value])


_STRIDED_VIEWS = frozenset({"transpose", "getitem", "broadcast_to"})  # kernels that may return strided views


def _sinks_reshape(v) -> bool:
    """``v`` is made by an elementwise op (a scalar body) that nothing else
    uses, whose operands all have its (static, not 0-d) shape or are 0-d, one
    at least its shape (the reshaped result follows that operand's)."""
    from tfc.passes.fuse import is_elementwise

    f = v.owner
    if not (isinstance(f, RegistryOp) and is_elementwise(f)) or len(list(v.uses)) != 1:
        return False
    if "shape" in f.OPDEF.attrs:  # broadcast_to: its attribute fixes its shape, which a reshape changes
        return False
    shape = spec_of(v.type).shape
    shapes = [spec_of(a.type).shape for a in f.operands]
    if any(s and _name(a) in _STRIDED_VIEWS for a, s in zip(f.operands, shapes)):
        return False  # reshaping that operand would copy it; f's own result is contiguous
    return bool(shape) and shape in shapes and all(s in (shape, ()) for s in shapes)


def _swapped_last_two(v):
    """The operand of ``v = transpose(x)`` where the transpose swaps only the
    last two axes, else None. matmul(transpose(x), y) is matmul(x, y,
    transpose_a=True): eagerly both hand BLAS the same strided view (its
    transposed product), while a transpose copied into a buffer first would
    take BLAS's other path, whose sums differ in the last bits."""
    if _name(v) != "transpose":
        return None
    x = v.owner.operands[0]
    rank = len(spec_of(x.type).shape)
    perm = v.owner.attr_values["perm"] or tuple(reversed(range(rank)))
    return x if rank >= 2 and tuple(perm) == (*range(rank - 2), rank - 1, rank - 2) else None


def simplify_op(op) -> bool:
    """Apply the first rule that matches ``op``; True if the IR changed."""
    if not isinstance(op, RegistryOp) or len(op.results) != 1:
        return False
    name, args, res = op.OPDEF.name, list(op.operands), op.results[0]
    same = [a.type == res.type for a in args]
    if name == "multiply":
        for i, j in ((0, 1), (1, 0)):
            if same[i] and _is(args[j], 1):
                _replace(op, [], args[i])
                return True
    if name == "add":
        for i, j in ((0, 1), (1, 0)):
            if same[i] and _is_zero_keeping(args[j], negative=True):
                _replace(op, [], args[i])
                return True
    if name == "subtract":
        if same[0] and _is_zero_keeping(args[1], negative=False):
            _replace(op, [], args[0])
            return True
        spec = spec_of(res.type)
        if args[0] is args[1] and spec.dtype.is_integer and None not in spec.shape:
            c = ConstantOp.from_numpy(np.zeros(spec.shape, spec.dtype.as_numpy_dtype), spec.dtype)
            _replace(op, [c], c.result)
            return True
    # x**2 -> x*x: integer_pow(x, 2) is x*x by definition; np.power squares
    # exactly too. Not pow(x, 3): x*x*x rounds differently from np.power (1 ulp
    # on ~30% of float32 inputs), and compiled must equal eager.
    if (name == "integer_pow" and op.attr_values["n"] == 2 or name == "pow" and _is_scalar(args[1], 2)) and same[0]:
        sq = build_op("multiply", [args[0], args[0]])
        _replace(op, [sq], sq.results[0])
        return True
    if name == "transpose" and _name(args[0]) == "transpose":
        inner = args[0].owner
        x = inner.operands[0]
        rank = len(spec_of(x.type).shape)
        p_in = inner.attr_values["perm"] or tuple(reversed(range(rank)))
        p_out = op.attr_values["perm"] or tuple(reversed(range(rank)))
        perm = tuple(p_in[j] for j in p_out)
        if perm == tuple(range(rank)) and x.type == res.type:
            _replace(op, [], x)
        else:
            t = build_op("transpose", [x], {"perm": perm}, result_types=[res.type])
            _replace(op, [t], t.results[0])
        return True
    if name == "matmul":
        for i, flag in ((0, "transpose_a"), (1, "transpose_b")):
            x = _swapped_last_two(args[i])
            if x is not None:
                attrs = dict(op.attr_values)
                attrs[flag] = not attrs[flag]
                m = build_op("matmul", [x if k == i else a for k, a in enumerate(args)], attrs,
                             result_types=[res.type])
                _replace(op, [m], m.results[0])
                return True
    if name == "reshape" and args[0].type == res.type:
        _replace(op, [], args[0])
        return True
    if name == "reshape" and _sinks_reshape(args[0]):
        f = args[0].owner
        shape = spec_of(res.type).shape
        new_ops, operands = [], []
        for a in f.operands:
            if spec_of(a.type).shape:  # of f's shape: reshaped too
                r = build_op("reshape", [a], op.attr_values, result_types=[tensor_type(shape, spec_of(a.type).dtype)])
                new_ops.append(r)
                a = r.results[0]
            operands.append(a)
        g = build_op(f.OPDEF.name, operands, f.attr_values, result_types=[res.type])
        g.location = f.location
        _replace(op, new_ops + [g], g.results[0])
        Rewriter.erase_op(f)  # its one use is gone: the next reshape up may sink too
        return True
    if name == "reshape" and _name(args[0]) == "reshape":
        x = args[0].owner.operands[0]
        if x.type == res.type:
            _replace(op, [], x)
        else:
            r = build_op("reshape", [x], op.attr_values, result_types=[res.type])
            _replace(op, [r], r.results[0])
        return True
    return False


@dataclass(frozen=True)
class SimplifyPass(ModulePass):
    name = "tfc-simplify"

    def apply(self, ctx, op) -> None:
        require_tensor_ir(self.name, op)
        changed = True
        while changed:
            changed = False
            for inner in list(op.walk()):
                if inner.parent is not None and simplify_op(inner):
                    changed = True
