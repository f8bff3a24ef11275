"""The state lists of a differentiated tensor loop on the GPU
(tfc/ops/control_flow.py: state_list_push, state_list_get and their gradients;
tfc/frontend/cfgrad.py keeps there the state of each trip where the trip count
or a shape is known only at run time).

tfc-lower-gpu leaves these library calls in the host program
(tfc.passes.gpu_lists.HOST_LIST_OPS); the host runs each as device-to-device
copies into fresh buffers of the run-time size. A list value of a dynamic
memref type is a ``Buf`` whose ``shape`` holds its run-time shape (set here,
and by the host ``loops.while`` for an empty list that enters the loop with a
static type). ``state_list_get`` reads the shape table to the host: the one
explicit synchronization of these ops.
"""
from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import MemRefType

from tfc.backends.cuda.host import Buf, itemsize, np_dtype
from tfc.dialects.tensor import loc_str


def _unsupported(op, what: str) -> NotImplementedError:
    return NotImplementedError(f"the gradient of a tensor loop on cuda: {what} is not implemented "
                               f"({loc_str(op)})")


def _static(t) -> bool:
    return isinstance(t, MemRefType) and all(d >= 0 for d in t.get_shape())


class _Value:
    """How a step reads one memref operand: its run-time shape and the address
    of its first element, contiguous (a strided static view is copied first)."""

    def __init__(self, op, t):
        self.t = t
        self.scalar = not isinstance(t, MemRefType)  # a 0-d loop variable: a host scalar in L3
        self.static = self.scalar or _static(t)
        self.size = np_dtype(t).itemsize if self.scalar else itemsize(t)

    def read(self, rt, buf, op):
        """(Buf contiguous from its address, shape)."""
        if self.scalar:
            return rt._uploaded(np.asarray(buf, np_dtype(self.t)).reshape(())), ()
        if self.static:
            contiguous, spec = rt.contiguous(buf, self.t)
            return contiguous, spec.shape
        if getattr(buf, "shape", None) is None:  # a dynamic value no step here made: shape unknown
            raise _unsupported(op, f"{op.callee.data} of a value of run-time shape ({self.t})")
        return buf, buf.shape


def _fresh(rt, shape, t) -> Buf:
    """A fresh buffer for ``shape`` elements of ``t``'s type; its ``shape``
    recorded where ``t`` is dynamic."""
    buf = rt.alloc(int(np.prod(shape, dtype=np.int64)) * itemsize(t))
    if not _static(t):
        buf.shape = tuple(int(d) for d in shape)
    return buf


def _copy(rt, dst: int, src: int, nbytes: int) -> None:
    if nbytes:
        rt.driver.copy_dtod(dst, src, nbytes)


def _element(rt, t, shape, src: int):
    """A value of type ``t`` (shape ``shape``) copied from device address
    ``src``: a fresh buffer, or a host scalar read back (a synchronization,
    as loops.load) where ``t`` is not a memref."""
    if not isinstance(t, MemRefType):
        host = np.empty((), np_dtype(t))
        rt.driver.copy_dtoh(host, src)
        return host[()]
    res = _fresh(rt, shape, t)
    _copy(rt, res.addr, src, int(np.prod(shape, dtype=np.int64)) * itemsize(t))
    return res


def _table(rt, buf: Buf, shape, t) -> np.ndarray:
    """The shape table on the host (a device -> host read: waits for the kernels before it)."""
    host = np.empty(shape, np_dtype(t.element_type))
    if host.size:
        rt.driver.copy_dtoh(host, buf.addr)
    return host


def push(op, ins, out):
    """(flat ++ value, shapes ++ [value.shape])."""
    flat_t, shapes_t, value_t = (v.type for v in op.ins)
    flat, shapes, value = (_Value(op, t) for t in (flat_t, shapes_t, value_t))
    rf, rs = (r.type for r in op.res)
    (fi, si, vi), (fo, so) = ins, out

    def state_list_push(rt, env):
        f, fshape = flat.read(rt, env[fi], op)
        s, sshape = shapes.read(rt, env[si], op)
        v, vshape = value.read(rt, env[vi], op)
        nf, nv = fshape[0], int(np.prod(vshape, dtype=np.int64))
        new = _fresh(rt, (nf + nv,), rf)
        _copy(rt, new.addr, f.addr, nf * flat.size)
        _copy(rt, new.addr + nf * flat.size, v.addr, nv * value.size)
        rows = _fresh(rt, (sshape[0] + 1, len(vshape)), rs)
        _copy(rt, rows.addr, s.addr, sshape[0] * len(vshape) * 8)
        row = np.array(vshape, np.int64)
        if row.size:
            rt.driver.copy_htod(rows.addr + sshape[0] * len(vshape) * 8, row)
        env[fo], env[so] = new, rows
    return state_list_push


def _segment(rt, op, shapes: _Value, buf, index):
    """(start, stop, element shape) of element ``index``: eager's error where it is out of range."""
    from tfc.ops.control_flow import _segment as segment

    s, sshape = shapes.read(rt, buf, op)
    table = _table(rt, s, sshape, shapes.t)
    start, stop = segment(table, int(index))
    return start, stop, tuple(int(d) for d in table[int(index)])


def get(op, ins, out):
    """Element ``index``: a copy of its part of the flat buffer."""
    flat_t, shapes_t, _, _ = (v.type for v in op.ins)
    flat, shapes = _Value(op, flat_t), _Value(op, shapes_t)
    if isinstance(op.ins[2].type, MemRefType):
        raise _unsupported(op, "state_list_get at an index in device memory")
    (rt_,) = (r.type for r in op.res)
    fi, si, ii, _ = ins
    (o,) = out
    scalar = not isinstance(rt_, MemRefType)
    want = () if scalar else tuple(rt_.get_shape())

    def state_list_get(rt, env):
        f, _ = flat.read(rt, env[fi], op)
        start, stop, shape = _segment(rt, op, shapes, env[si], env[ii])
        if len(shape) != len(want) or any(w >= 0 and w != d for w, d in zip(want, shape)):
            raise _unsupported(op, f"state_list_get of an element of shape {list(shape)} as a {rt_}")
        env[o] = _element(rt, rt_, shape, f.addr + start * flat.size)
    return state_list_get


def push_grad(op, ins, out):
    """``g`` cut into (flat's part, value's part)."""
    g_t, flat_t, value_t = (v.type for v in op.ins)
    g, flat, value = (_Value(op, t) for t in (g_t, flat_t, value_t))
    rf, rv = (r.type for r in op.res)
    (gi, fi, vi), (fo, vo) = ins, out

    def state_list_push_grad(rt, env):
        gb, _ = g.read(rt, env[gi], op)
        _, fshape = flat.read(rt, env[fi], op)
        _, vshape = value.read(rt, env[vi], op)
        nf, nv = fshape[0], int(np.prod(vshape, dtype=np.int64))
        a = _fresh(rt, (nf,), rf)
        _copy(rt, a.addr, gb.addr, nf * g.size)
        env[fo], env[vo] = a, _element(rt, rv, vshape, gb.addr + nf * g.size)
    return state_list_push_grad


def get_grad(op, ins, out):
    """Zeros of flat's shape with ``g`` at element ``index``'s part."""
    g_t, flat_t, shapes_t, index_t = (v.type for v in op.ins)
    g, flat, shapes = _Value(op, g_t), _Value(op, flat_t), _Value(op, shapes_t)
    if isinstance(index_t, MemRefType):
        raise _unsupported(op, "state_list_get_grad at an index in device memory")
    (rf,) = (r.type for r in op.res)
    (gi, fi, si, ii), (o,) = ins, out

    def state_list_get_grad(rt, env):
        gb, _ = g.read(rt, env[gi], op)
        _, fshape = flat.read(rt, env[fi], op)
        start, stop, _ = _segment(rt, op, shapes, env[si], env[ii])
        res = _fresh(rt, fshape, rf)
        if fshape[0]:
            rt.driver.memset(res.addr, 0, fshape[0] * flat.size)  # all-zero bytes: +0.0 in every float type
        _copy(rt, res.addr + start * flat.size, gb.addr, (stop - start) * flat.size)
        env[o] = res
    return state_list_get_grad


STEPS = {"state_list_push": push, "state_list_get": get, "state_list_push_grad": push_grad,
         "state_list_get_grad": get_grad}


def with_shape(buf, t):
    """``buf`` (a value of static type ``t``) entering a dynamic slot (a
    ``loops.while`` whose result type is dynamic): a Buf that records its shape."""
    if not isinstance(buf, Buf) or not _static(t) or getattr(buf, "shape", None) is not None:
        return buf
    from tfc.dialects.loops import is_contiguous, layout_of

    if not is_contiguous(t):
        return buf  # a strided view: a list step copies it where it reads it
    shaped = Buf(buf.addr + layout_of(t)[1] * itemsize(t), buf.owner)
    shaped.shape = tuple(t.get_shape())
    return shaped


__all__ = ["STEPS", "with_shape"]
