"""The host program of a CUDA executable: the L4 host function run on the host
(docs/gpu.md). Buffers live on the device: the arena of the memory plan (one
allocation per executable, reused by every call), fresh buffers from the
caching allocator, constants uploaded once. Kernels run through ``tgpu.launch``;
control flow runs here on host scalars, and ``loops.load`` is the one read of a
device value (a synchronization).

The ops are turned once into a list of steps (closures over slot numbers), so a
call walks no IR: each step reads and writes ``env``, a list of the values of
the function's SSA values.
"""
from __future__ import annotations

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType

from tfc.core.cell import Cell
from tfc.core.tensor import GpuTensor
from tfc.dialects import loops as L
from tfc.dialects.gpu import LaunchOp, PhiloxTakeOp
from tfc.dialects.tensor import decode_attrs, dtype_of, loc_str, numpy_from_dense


class Buf:
    """A device buffer as the host sees it: ``addr`` is the address of element
    offset 0 of its memref type's layout (a view's own offset and strides are
    in its type), ``owner`` keeps the allocation alive."""

    __slots__ = ("addr", "owner", "shape")

    def __init__(self, addr: int, owner=None):
        self.addr = addr
        self.owner = owner
        self.shape = None  # the run-time shape of a value of a dynamic memref type (tfc/backends/cuda/lists.py)


def np_dtype(t):
    """numpy dtype of an element (or scalar) type; i1 is numpy's bool (1 byte)."""
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    return np.dtype(dtype_of(t).as_numpy_dtype)


def itemsize(t: MemRefType) -> int:
    return np_dtype(t.element_type).itemsize


def nbytes(t: MemRefType) -> int:
    n = itemsize(t)
    for d in t.get_shape():
        n *= d
    return n


def data_address(buf: Buf, t: MemRefType) -> int:
    """The address of a view's first element: what a kernel parameter gets."""
    _, off = L.layout_of(t)
    return buf.addr + off * itemsize(t)


def param_scalar(value, t):
    """A host scalar as the numpy scalar a kernel parameter of type ``t`` takes
    (i1 travels as i32, index as i64)."""
    if isinstance(t, IntegerType) and t.width.data == 1:
        return np.int32(bool(value))
    return np_dtype(t).type(value)


class HostProgram:
    """The steps of one L4 host function; ``run(runtime, args)`` executes them.

    ``runtime`` gives the device side: ``driver``, ``alloc(nbytes) -> Buf``,
    ``arena(nbytes) -> Buf``, ``constant(key, array) -> Buf`` (uploaded once),
    ``function(symbol)`` (a loaded kernel)."""

    def __init__(self, f):
        self.func = f
        self.name = f.sym_name.data
        self.slots: dict = {}
        block = f.body.block
        self.arg_slots = [self.slot(a) for a in block.args]
        self.arg_types = [a.type for a in block.args]
        self.steps, self.results = self.block(block)

    def slot(self, v) -> int:
        s = self.slots.get(v)
        if s is None:
            s = self.slots[v] = len(self.slots)
        return s

    # -- building -------------------------------------------------------------------
    def block(self, block):
        """(steps, the slots of the terminator's operands)."""
        steps = []
        for op in block.ops:
            if isinstance(op, (func.ReturnOp, L.YieldOp, L.ConditionOp)):
                return steps, [self.slot(v) for v in op.operands]
            steps.append(self.step(op))
        raise AssertionError("block without terminator")

    def step(self, op):
        """A closure ``run(rt, env)`` doing what ``op`` does."""
        out = [self.slot(r) for r in op.results]
        ins = [self.slot(v) for v in op.operands]
        if isinstance(op, LaunchOp):
            return self.launch(op, ins)
        if isinstance(op, PhiloxTakeOp):
            return self.philox_take(op, out)
        if isinstance(op, L.ViewOp):
            (o,), (a,), off = out, ins, op.offset.value.data

            def view(rt, env):
                env[o] = Buf(env[a].addr + off, env[a].owner)
            return view
        if isinstance(op, L.AllocOp):
            (o,), n = out, nbytes(op.result.type)

            def alloc(rt, env):
                env[o] = rt.alloc(n)
            return alloc
        if isinstance(op, L.ConstantOp):
            (o,), key = out, id(op)
            value = np.ascontiguousarray(numpy_from_dense(op.value), np_dtype(op.result.type.element_type))

            def constant(rt, env):
                env[o] = rt.constant(key, value)
            return constant
        if isinstance(op, L.LoadOp):
            (o,), (a,), t = out, ins, op.source.type
            dt = np_dtype(t.element_type)

            def load(rt, env):  # the one device -> host read: waits for the kernels before it
                host = np.empty((), dt)
                rt.driver.copy_dtoh(host, data_address(env[a], t))
                env[o] = host[()]
            return load
        if isinstance(op, (L.SubviewOp, L.TransposeViewOp)):
            (o,), (a,) = out, ins

            def alias(rt, env):
                env[o] = env[a]
            return alias
        if isinstance(op, L.ReshapeOp):
            (o,), (a,) = out, ins
            src_t = op.source.type

            def reshape(rt, env):  # the result's layout starts at the source's first element
                env[o] = Buf(data_address(env[a], src_t), env[a].owner)
            return reshape
        if isinstance(op, L.IfOp):
            return self.if_(op, ins, out)
        if isinstance(op, L.WhileOp):
            return self.while_(op, ins, out)
        if isinstance(op, L.ReadVariableOp):
            return self.read_variable(op, ins, out)
        if isinstance(op, L.AssignVariableOp):
            return self.assign_variable(op, ins)
        if isinstance(op, L.RaiseOp):
            return self.raise_(op, ins)
        if isinstance(op, L.LibraryOp):
            return self.host_library(op, ins, out)
        if isinstance(op, L.PrintOp):
            return self.print_(op, ins)
        if isinstance(op, L.AssertOp):
            return self.assert_(op, ins)
        if op.dialect_name() in ("arith", "math") or op.name in ("tfc.floormod", "tfc.remf"):
            return self.scalar(op, ins, out)
        raise NotImplementedError(f"the CUDA host program cannot run {op.name} ({loc_str(op)})")

    def launch(self, op, ins):
        """A kernel launch: the grid from host index values, each argument as
        its kernel parameter (a buffer's data address, a typed scalar)."""
        symbol, block, shared = op.kernel.root_reference.data, op.block_size, op.shared.value.data
        grid, args = ins[:3], ins[3:]
        packers = [_packer(v.type) for v in op.args]

        def launch(rt, env):
            g = tuple(int(env[i]) for i in grid)
            if 0 in g:  # nothing to do (a zero-size tensor): CUDA refuses an empty grid
                return
            rt.launch(symbol, g, block, [p(env[i]) for p, i in zip(packers, args)], shared)
        return launch

    @staticmethod
    def philox_take(op, out):
        """The global random stream's key and the base of the next ``blocks``
        blocks, reserved now (as the numpy kernel of an unseeded draw does)."""
        from tfc.ops import random as R

        (k, b), blocks = out, op.blocks.value.data

        def take(rt, env):
            stream = R._GLOBAL[0]
            base = stream.take(blocks)
            env[k] = np.uint64(stream.key[0] | stream.key[1] << 32).view(np.int64)
            env[b] = np.uint64(base).view(np.int64)
        return take

    def scalar(self, op, ins, out):
        """Host arithmetic on scalars: the numpy backend's ufuncs on 0-d values,
        so host scalars compute what they compute on the CPU."""
        from tfc.backends.vectorized import IMPLS

        if isinstance(op, arith.ConstantOp):
            (o,), t = out, op.result.type
            value = np_dtype(t).type(op.value.value.data)

            def const(rt, env):
                env[o] = value
            return const
        impl = IMPLS.get(op.name)
        if impl is None:
            raise NotImplementedError(f"the CUDA host program cannot run {op.name} on host scalars ({loc_str(op)})")
        (o,), dt = out, np_dtype(op.results[0].type)

        def scalar(rt, env):
            with np.errstate(all="ignore"):
                env[o] = np.asarray(impl(op, [np.asarray(env[i]) for i in ins])).astype(dt)[()]
        return scalar

    def if_(self, op, ins, out):
        (c,) = ins
        then_steps, then_res = self.block(op.then_region.block)
        else_steps, else_res = self.block(op.else_region.block)

        def if_(rt, env):
            steps, res = (then_steps, then_res) if _truth(rt, env[c], op.cond.type) else (else_steps, else_res)
            for s in steps:
                s(rt, env)
            vals = [env[r] for r in res]
            for o, v in zip(out, vals):
                env[o] = v
        return if_

    def while_(self, op, ins, out):
        cond_args = [self.slot(a) for a in op.cond_region.block.args]
        body_args = [self.slot(a) for a in op.body_region.block.args]
        cond_steps, (cond,) = self.block(op.cond_region.block)
        body_steps, body_res = self.block(op.body_region.block)
        cond_type = op.cond_region.block.last_op.cond.type
        limit = None if op.max_iterations is None else op.max_iterations.value.data

        # an empty state list enters with a static type, a loop result of dynamic type: its shape goes with it
        from tfc.backends.cuda.lists import with_shape

        shaped = [k for k, (v, r) in enumerate(zip(op.operands, op.results))
                  if isinstance(r.type, MemRefType) and v.type != r.type]
        init_types = [v.type for v in op.operands]

        def while_(rt, env):
            vals = [env[i] for i in ins]
            for k in shaped:
                vals[k] = with_shape(vals[k], init_types[k])
            n = 0
            while limit is None or n < limit:
                for a, v in zip(cond_args, vals):
                    env[a] = v
                for s in cond_steps:
                    s(rt, env)
                if not _truth(rt, env[cond], cond_type):
                    break
                for a, v in zip(body_args, vals):
                    env[a] = v
                for s in body_steps:
                    s(rt, env)
                vals = [env[r] for r in body_res]
                n += 1
            for o, v in zip(out, vals):
                env[o] = v
        return while_

    def read_variable(self, op, ins, out):
        """A variable's value: a GPU variable's buffer as it is (its Cell holds
        a GpuTensor: contiguous, 16-byte aligned, never written by a kernel: a
        read value is never overwritten in place, as the numpy backend's reads
        are the variable's own array); a host variable's array uploaded (per
        call); a 0-d value as a host scalar (a GPU one read back: a sync)."""
        (o,), (r,), t = out, ins, op.result.type
        if not isinstance(t, MemRefType):
            dt = np_dtype(t)

            def read_scalar(rt, env):
                value = env[r].value
                if type(value) is GpuTensor:
                    value = _same_driver(rt, value).to_host(value)
                env[o] = np.asarray(value, dt)[()]
            return read_scalar
        dt, n = np_dtype(t.element_type), nbytes(t)

        def read(rt, env):
            value = env[r].value
            if type(value) is GpuTensor:
                _same_driver(rt, value)
                env[o] = value._buf
                return
            host = np.ascontiguousarray(value, dt)
            buf = rt.alloc(n)
            if n:
                rt.driver.copy_htod(buf.addr, host)
            env[o] = buf
        return read

    def assign_variable(self, op, ins):
        """A GPU variable's Cell gets a GpuTensor of the assigned buffer (no
        copy when the buffer owns its allocation; a value in the arena, which
        the next call reuses, a view or an unaligned one is copied to a fresh
        buffer); a host variable's gets the value copied to the host."""
        (r, v), t = ins, op.value.type
        arena = self.arg_slots[-1]
        if not isinstance(t, MemRefType):
            dt = np_dtype(t)

            def assign_scalar(rt, env):
                cell = env[r]
                if type(cell.value) is GpuTensor:
                    cell.value = cell.value._rt.upload(np.asarray(env[v], dt))
                else:
                    cell.value = env[v]
            return assign_scalar

        def assign(rt, env):
            cell = env[r]
            if type(cell.value) is GpuTensor:
                grt = cell.value._rt
                cell.value = grt.tensor(*kept_buffer(rt, env[v], t, env[arena].owner))
            else:
                cell.value = rt.to_host(env[v], t)
        return assign

    def host_library(self, op, ins, out):
        """A library call on host scalars only (tfc-lower-gpu launches every
        other): its registry kernel on the numbers, as the numpy backend runs it."""
        from tfc.core.registry import REGISTRY

        from tfc.backends.cuda.lists import STEPS as LIST_STEPS

        if op.callee.data in LIST_STEPS and not op.outs:  # a loop gradient's state lists: dtod copies
            return LIST_STEPS[op.callee.data](op, ins, out)
        if op.outs or any(isinstance(v.type, MemRefType) for v in list(op.ins) + list(op.res)):
            raise NotImplementedError(f"the CUDA host program cannot run library call {op.callee.data} on buffers "
                                      f"({loc_str(op)}): tfc-lower-gpu makes it a kernel")
        opdef = REGISTRY[op.callee.data]
        attrs = decode_attrs(opdef, dict(op.kernel_attrs.data))
        dts = [np_dtype(r.type) for r in op.res]

        def library(rt, env):
            with np.errstate(all="ignore"):
                res = opdef.kernel(*[np.asarray(env[i]) for i in ins], **attrs)
            for o, v, dt in zip(out, res if isinstance(res, (tuple, list)) else [res], dts):
                env[o] = np.asarray(v).astype(dt)[()]
        return library

    def raise_(self, op, ins):
        from tfc.core.registry import REGISTRY

        name = op.callee.data
        attrs = decode_attrs(REGISTRY[name], dict(op.kernel_attrs.data))
        types = [v.type for v in op.ins]
        where = loc_str(op)

        def raise_(rt, env):  # eager's kernel on host copies raises eager's error
            from tfc.backends.numpy.runtime import raise_eager

            raise_eager(name, [rt.to_host(env[i], t) for i, t in zip(ins, types)], attrs, where)
        return raise_

    def print_(self, op, ins):
        from tfc.backends.reference import write_print

        fmt = op.format.data
        stream = None if op.stream is None else op.stream.data
        summarize = None if op.summarize is None else op.summarize.value.data
        types = [v.type for v in op.values]

        def print_(rt, env):
            write_print(fmt, [rt.to_host(env[i], t) for i, t in zip(ins, types)], stream, summarize)
        return print_

    def assert_(self, op, ins):
        from tfc.backends.reference import assertion_failed

        c, data = ins[0], ins[1:]
        ctype, types = op.cond.type, [v.type for v in op.data]
        where, message = loc_str(op), op.message.data

        def assert_(rt, env):
            if not np.all(rt.to_host(env[c], ctype)):
                raise assertion_failed(where, message, *[rt.to_host(env[i], t) for i, t in zip(data, types)])
        return assert_

    # -- running --------------------------------------------------------------------
    def run(self, rt, args):
        """Run with ``args`` (device Bufs for memref arguments, host scalars,
        Cells, and last the arena Buf); the result values (Bufs and scalars)."""
        env = [None] * len(self.slots)
        for s, a in zip(self.arg_slots, args):
            env[s] = a
        for step in self.steps:
            step(rt, env)
        return [env[r] for r in self.results]


def _same_driver(rt, value):
    """The runtime of a GPU variable's value, checked to be on ``rt``'s driver."""
    if value._rt.driver is not rt.driver:
        raise ValueError(f"a GPU variable of the {value._rt.driver.name} driver read by a function running on "
                         f"{rt.driver.name}: a compiled function runs on one driver")
    return value._rt


def kept_buffer(rt, buf: Buf, t: MemRefType, arena):
    """(Buf, Spec): a memref value of type ``t`` as a buffer a variable may
    keep after the call: contiguous from its address, 16-byte aligned (kernels
    read variables with vector loads), owning its allocation (not in the arena
    ``arena``, which the next call reuses). The buffer itself where it is all
    that (a loops.alloc), else a copy."""
    buf, spec = rt.contiguous(buf, t)
    if buf.owner is arena or buf.addr % 16:
        buf = copied(rt, buf, t)
    return buf, spec


def copied(rt, buf: Buf, t: MemRefType) -> Buf:
    """A fresh allocation (16-byte aligned, its own) holding the ``nbytes(t)``
    bytes at ``buf``'s address."""
    n = nbytes(t)
    new = rt.alloc(n)
    if n:
        rt.driver.copy_dtod(new.addr, buf.addr, n)
    return new


def _packer(t):
    """value -> the kernel parameter of a launch argument of type ``t``."""
    if isinstance(t, MemRefType):
        _, off = L.layout_of(t)
        off *= itemsize(t)
        return lambda b: np.uint64(b.addr + off)
    return lambda x: param_scalar(x, t)


def _truth(rt, value, t) -> bool:
    if isinstance(t, MemRefType):
        return bool(rt.to_host(value, t).reshape(()))
    return bool(value)


__all__ = ["Buf", "Cell", "HostProgram", "data_address", "nbytes", "np_dtype", "param_scalar"]
