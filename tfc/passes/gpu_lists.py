"""GPU kernels of the list ops of compiled loops: ``tensor_array_write`` (a
TensorArray's buffer form, tfc/ops/control_flow.py) as the ``loops.library``
call that tfc-lower-gpu launches.

``LIBRARY[name](namer, op)`` returns, in order, host ops (``Operation``s to
put before the launches: here the index check) and launches ``(kernel, grid,
block, args)``, as gpu_nn_library's.

tensor_array_write of a fixed-size array: the result (a fresh buffer) is the
buffer with row ``index`` replaced by ``value``: one thread per result
element (grid-stride), each reading the buffer or the value at its strides.
The index is a host scalar: the host checks it first (``loops.if`` over
``index < 0 or index >= size`` around a ``loops.raise`` that runs the numpy
kernel, which raises eager's InvalidArgumentError), so a bad index never
reaches the kernel. A growing array (``dynamic_size=True``: a result of
run-time size) raises NotImplementedError.

A loop gradient's state lists (``HOST_LIST_OPS``: results of run-time size)
get no kernel: tfc-lower-gpu leaves them to the host program, which runs them
as device-to-device copies (tfc/backends/cuda/lists.py).
``run_time_shape_error`` is the error of any other library call on values of
run-time shape.
"""
from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, MemRefType, i32, i64
from xdsl.ir import Block, Region

from tfc.dialects import loops as L
from tfc.dialects.gpu import PtrType
from tfc.passes import gpu_builder as B

BLOCK = B.BLOCK


def fail_if(op, bad):
    """A host ``loops.if`` raising eager's error for library call ``op`` (a
    ``loops.raise`` of it, which runs its numpy kernel) where i1 ``bad`` holds."""
    fail = L.RaiseOp(op.callee.data, list(op.ins), dict(op.kernel_attrs.data))
    fail.location = getattr(op, "location", None)
    then = Block()
    then.add_ops([fail, L.YieldOp([])])
    otherwise = Block()
    otherwise.add_op(L.YieldOp([]))
    return L.IfOp(bad, [], Region(then), Region(otherwise))


def _index_check(op, index, size: int):
    """Host ops: where ``index`` is outside [0, size), ``loops.raise`` of ``op``."""
    zero = arith.ConstantOp(IntegerAttr(0, index.type))
    end = arith.ConstantOp(IntegerAttr(size, index.type))
    below = arith.CmpiOp(index, zero.result, "slt")
    past = arith.CmpiOp(index, end.result, "sge")
    bad = arith.OrIOp(below.result, past.result)
    return [zero, end, below, past, bad, fail_if(op, bad.result)]


def tensor_array_write(namer, op):
    from tfc.passes.gpu_nn_library import _attrs, _shape, _span

    attrs = _attrs(op)
    if len(op.ins) != 3 or len(op.outs) != 1:
        raise B.unsupported(f"tensor_array_write of {len(op.ins)} operands and {len(op.outs)} results")
    buffer, index, value = op.ins
    (out,) = op.outs
    if attrs.get("grow"):
        raise B.unsupported("tensor_array_write of a growing TensorArray (dynamic_size=True: a result of "
                            "run-time size)")
    if isinstance(index.type, MemRefType) or index.type not in (i32, i64):
        raise B.unsupported(f"tensor_array_write at an index of type {index.type}")
    shape = _shape(out, "tensor_array_write")
    scalar = not isinstance(value.type, MemRefType)  # a row of one element: a host scalar in L3
    if _shape(buffer, "tensor_array_write") != shape or out.type != MemRefType(out.type.element_type, shape) or \
            (shape[1:] if scalar else _shape(value, "tensor_array_write")) != shape[1:]:
        raise B.unsupported(f"tensor_array_write of {buffer.type} and {value.type} into {out.type}")
    host = _index_check(op, index, shape[0])
    total = B.prod(shape)
    if total == 0:
        return host
    elt = out.type.element_type
    grid = (min(-(-total // BLOCK), B.MAX_BLOCKS), 1, 1)
    it = i32 if max(_span([buffer], [shape]), total + grid[0] * BLOCK) <= B.I32_MAX else i64
    # a scalar value travels as a launch passes it (KernelBuilder.param)
    vt = B.scalar_param_type(elt) if scalar else PtrType(elt, "global")
    kb = B.KernelBuilder(namer("tensor_array_write"), [PtrType(elt, "global"), vt, index.type,
                                                      PtrType(elt, "global")], "elementwise", it)
    bp, vp, ip, op_ = kb.args
    if scalar and vt != elt:
        vp = kb.emit(arith.TruncFOp(vp, elt) if str(elt) == "f16" else arith.TruncIOp(vp, elt))
    bstrides = L.layout_of(buffer.type)[0]
    vstrides = None if scalar else L.layout_of(value.type)[0]
    row = kb.cast_int(ip, it)  # in [0, size): checked on the host

    def element(f):
        digits = kb.digits(f, shape)
        mine = kb.cmpi("eq", digits[0], row)
        new = vp if scalar else kb.load(vp, kb.dot(list(zip(digits[1:], vstrides))), nc=True)[0]
        old = kb.load(bp, kb.dot(list(zip(digits, bstrides))), nc=True)[0]
        kb.store([kb.select(mine, new, old)], op_, f)
        return []

    gid = kb.add(kb.mul(kb.bid(), kb.i(BLOCK)), kb.tid())
    kb.for_(gid, kb.i(total), kb.mul(kb.gdim(), kb.i(BLOCK)), element)
    return host + [(kb.finish(), grid, (BLOCK, 1, 1), [buffer, value, index, out])]


LIBRARY = {"tensor_array_write": tensor_array_write}

# The state lists of a loop gradient (tfc/frontend/cfgrad.py): results of run-time size, left in the host
# program, which runs them as device-to-device copies (tfc/backends/cuda/lists.py).
HOST_LIST_OPS = frozenset({"state_list_push", "state_list_get", "state_list_push_grad", "state_list_get_grad"})



def run_time_shape_error(op):
    """The error for library call ``op`` on values of run-time shape (of
    which a second-order gradient through a tensor loop makes its lists'
    arithmetic: zeros_like, add, negative of a list's flat buffer), naming
    the user's line; None where every value's shape is static."""
    from tfc.dialects.tensor import loc_str

    types = [v.type for v in list(op.operands) + list(op.results)]
    if not any(isinstance(t, MemRefType) and any(d < 0 for d in t.get_shape()) for t in types):
        return None
    return NotImplementedError(
        f"target cuda: no GPU kernel for {op.callee.data} of run-time shape ("
        + ", ".join(str(t) for t in types) + ") yet: on cuda only a loop gradient's state lists have run-time "
        f"sizes (a dimension of run-time size, a loop variable whose shape changes, and the gradient of a tensor "
        f"loop on cuda of second order without maximum_iterations need kernels of run-time size: not "
        f"implemented) ({loc_str(op)})")


__all__ = ["HOST_LIST_OPS", "LIBRARY", "fail_if", "run_time_shape_error"]
