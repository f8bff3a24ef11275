"""Lowering L2 -> L3 (the ``loops`` dialect), with the buffers of tfc-bufferize
at the offsets of tfc-plan-memory.

- tensor types become ``memref`` (static or ``?`` dims); 0-d tensors become
  scalars (``f32``, ``i32``, ``i1``) so that scalar code pays no tensor overhead;
- the function gets a last argument, the arena ``memref<Nxi8>``; every arena
  buffer is a ``loops.view`` at its offset, made once at function entry;
  fresh buffers are ``loops.alloc`` where their first value is computed;
- ``tfc.fused`` over a 0-d space on host values becomes its scalar body
  inline; one reading a 0-d value that a kernel made, and any other, becomes
  ``loops.parallel`` writing its buffers (a 0-d result stays a 0-d buffer
  that later kernels read); ``loops.load``, the host read, is emitted only
  where the host needs a 0-d value (``_Lowering.host``: control flow, results,
  variables, print/assert, library calls and lowerings given scalars, 0-d
  loop variables and branch results);
- ``tfc.while`` carries each tensor variable of static shape in planned
  buffers (tfc-bufferize's ``Slot``: two swapped per iteration, or one
  updated in place): no allocation in the loop; an escaping result is copied
  once into a fresh buffer after it;
- a library op whose declaration gives ``kernel_into`` (matmul, conv2d,
  pooling, the random generators) is ``loops.library "op" ... outs(buffer)``;
- a registry op whose declaration has ``lower`` (``OpDef.lower``) and whose
  operands and results have static shapes is lowered by calling it with an
  ``L3Builder`` (below): ``lower(b, outs, *ins, **attrs)`` writes the op's
  results into ``outs`` (its planned buffers: arena views or fresh allocs; a
  0-d result as a ``memref<T>``, which stays a 0-d buffer) from ``ins`` (the operands as
  L3 values: memrefs, or scalars for 0-d); attrs are the decoded registry
  attributes. ``lower.when(in_specs, **attrs)``, where given (on the
  operands' registry Specs), says where the lowering applies; elsewhere the op
  stays a library call. An alias op (reshape, expand_dims, squeeze, a getitem
  that selects a contiguous range) marks its lowering with ``lower.alias``, a
  predicate ``alias(in_specs, **attrs)``: where it holds (and tfc-bufferize
  made no buffer for the result) the call is ``lower(b, None, *ins, **attrs)``
  and returns the alias value (``b.reshape`` / ``b.subview`` of its input);
  ``lower.view`` likewise marks a lowering that may return a strided view
  (transpose, a strided getitem) where only kernels read the result (they read
  the view in place of a copy);
- other registry ops are ``loops.library`` calls of their kernels;
- ``tfc.cond``/``tfc.while`` become ``loops.if``/``loops.while``; variables,
  print and assert map one to one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX, IndexType, IntegerAttr, MemRefType, TensorType, i8,
)
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass

from tfc.dialects import loops as L
from tfc.dialects.fused import FusedOp, FusedYieldOp
from tfc.dialects.tensor import (
    AssertOp, AssignVariableOp, ConditionOp, CondOp, ConstantOp, PrintOp, ReadVariableOp,
    RegistryOp, WhileOp, YieldOp, decode_attrs, dtype_of, loc_str, spec_of,
)
from tfc.ops._scalar import constant_ops
from tfc.passes.bufferize import Bufferization, alias_view_reader, functions, lowers, read_in_place
from tfc.passes.plan_memory import plan
from tfc.passes.pipeline import PassPreconditionError, require_tensor_ir


def convert_type(t):
    """tensor -> memref (0-d -> its element type); refs stay."""
    if isinstance(t, TensorType):
        shape = t.get_shape()
        if len(shape) == 0:
            return t.element_type
        return MemRefType(t.element_type, [DYNAMIC_INDEX if d == DYNAMIC_INDEX else d for d in shape])
    return t


class L3Builder:
    """What an op's ``lower`` writes L3 with (see the module docstring). Every
    method appends ops at the lowering's current place, with the registry op's
    location, and returns the new value:

    - ``result_shapes``: the op's result shapes; ``shape(v)``: the static
      shape of an L3 value (``()`` for a scalar); ``is_buffer(v)``,
      ``is_contiguous(v)``, ``is_window(v, buf, offsets)`` (an operand that
      its kernel wrote into the result's window already: ``lower.windows``);
    - ``subview(buf, offsets, sizes, strides, keep=None)``: ``loops.subview``
      (``keep``: the dims of ``sizes`` the view keeps, for a rank-reducing one;
      only unit dims may be left out);
    - ``transpose_view(buf, perm)``, ``reshape(buf, shape)`` (a contiguous
      ``buf`` only);
    - ``copy(src, dst)``: ``dst[...] = src``, a ``loops.parallel`` whose body
      yields its input (``src`` a buffer of ``dst``'s shape, any layout, or a
      scalar: a fill); a ``dst`` with a zero dim gets no kernel;
    - ``fill(dst, value)``: a parallel with a constant body (a Python number);
    - ``scalar(arith_op)``, ``load(buf)``: function-level scalar code, a 0-d
      buffer's value;
    - ``temps``: the buffers of the op's temporaries, which its ``lower.temps(
      in_specs, **attrs)`` declares (a list of Specs) and the memory plan
      places (live at the op only: a check's flag);
    - ``fail_if(cond, ins)``: where ``cond`` holds, ``loops.raise``: eager's
      error for the op on ``ins`` (a check's error path);
    - ``parallel(ins, outs, shape, broadcast, body, reduce=None,
      reduce_axes=None)``: a general kernel (reductions as in ``loops.parallel``);
      ``body(k, *elements)`` gets a ``BodyBuilder`` ``k`` (``k.index(d)``,
      ``k.load_at(buf, idx)``, ``k.add_at(buf, idx, value, mask=None)``,
      ``k.op(arith_op)``, ``k.const(x, type)``) and the input elements, and
      returns the yielded values (none for a scatter kernel: ``outs`` empty,
      its writes ``k.add_at``).
    """

    def __init__(self, lowering, block, src):
        self.lw = lowering
        self.block = block
        self.src = src
        self.result_shapes = [spec_of(r.type).shape for r in src.results]  # static (lowers() checked)
        self.temps = []  # planned temporaries (lower.temps), set by the lowering

    def _emit(self, op):
        return self.lw.emit(self.block, op, self.src)

    @staticmethod
    def shape(v) -> tuple:
        return L.shape_of(v.type)

    @staticmethod
    def is_buffer(v) -> bool:
        """A memref (a 0-d operand is a scalar in L3)."""
        return isinstance(v.type, MemRefType)

    @staticmethod
    def is_contiguous(v) -> bool:
        """Dense and row-major (any offset): ``reshape`` takes it."""
        return L.is_contiguous(v.type)

    def subview(self, buf, offsets, sizes, strides, keep=None):
        op = L.SubviewOp(buf, offsets, sizes, strides)
        if keep is not None and list(keep) != list(range(len(sizes))):
            if any(sizes[i] != 1 for i in range(len(sizes)) if i not in keep):
                raise ValueError(f"subview: only unit dims may be dropped, not those of {sizes} outside {keep}")
            st, off = L.layout_of(op.result.type)
            op = L.SubviewOp(buf, offsets, sizes, strides, L.strided_type(
                buf.type.element_type, [sizes[i] for i in keep], [st[i] for i in keep], off))
        return self._emit(op).result

    @staticmethod
    def is_window(v, buf, offsets) -> bool:
        """Is ``v`` the unit-stride window of ``buf`` at ``offsets`` (of ``v``'s
        shape): a kernel wrote it there already (tfc-bufferize's windows)?"""
        op = v.owner
        return isinstance(op, L.SubviewOp) and op.source is buf and \
            [int(x) for x in op.offsets] == [int(x) for x in offsets] and all(int(x) == 1 for x in op.strides) and \
            [int(x) for x in op.sizes] == list(L.shape_of(v.type))

    def transpose_view(self, buf, perm):
        return self._emit(L.TransposeViewOp(buf, perm)).result

    def reshape(self, buf, shape):
        if tuple(shape) == self.shape(buf) and L.is_contiguous(buf.type) and L.layout_of(buf.type)[1] == 0:
            return buf
        if isinstance(buf.owner, L.ReshapeOp):  # a reshape of a reshape: one alias of the first source
            buf = buf.owner.source
        return self._emit(L.ReshapeOp(buf, shape)).result

    def parallel(self, ins, outs, shape, broadcast, body, reduce=None, reduce_axes=None):
        shape = tuple(int(d) for d in shape)
        if any(d == 0 for d in shape) and reduce is None:
            return None  # no element to write
        if not shape and reduce is None:  # one element: a 1-element space (0-d inputs read at every index)
            outs = [self.reshape(o, (1,)) for o in outs]
            shape = (1,)
        blk = Block(arg_types=[L.element_of(v.type) for v in ins])
        ys = body(BodyBuilder(blk), *blk.args)
        blk.add_op(L.YieldOp(list(ys)))
        return self._emit(L.ParallelOp(list(ins), list(outs), shape, broadcast, Region(blk), reduce, reduce_axes))

    def scalar(self, op):
        """An arith op on scalars at the lowering's place (function level)."""
        return self._emit(op).results[0]

    op = scalar  # as BodyBuilder.op: helpers written for a body work on scalars too

    def load(self, buf):
        """The scalar of a 0-d buffer."""
        return self._emit(L.LoadOp(buf)).result

    def fail_if(self, cond, ins):
        """Where scalar ``cond`` holds, raise eager's error for this op on
        ``ins`` (``loops.raise`` in a ``loops.if``): the error path of a
        lowering that checks its operands (gather's indices)."""
        src = self.src
        fail = L.RaiseOp(src.OPDEF.name, ins, dict(src.properties))
        then = Block()
        fail.location = src.location
        then.add_ops([fail, L.YieldOp([])])
        otherwise = Block()
        otherwise.add_op(L.YieldOp([]))
        return self._emit(L.IfOp(cond, [], Region(then), Region(otherwise)))

    def copy(self, src, dst):
        shape = self.shape(dst)
        if isinstance(src.type, MemRefType):
            if self.shape(src) != shape:
                raise ValueError(f"copy: a {src.type} into a {dst.type}")
            bmap = tuple(range(len(shape)))
        else:
            bmap = ()
        return self.parallel([src], [dst], shape, [bmap], lambda k, x: [x])

    def index_cast(self, k, i, t):
        """Body helper: index value ``i`` as element type ``t`` (an integer
        type, or a float through i64, as numpy converts an int)."""
        from xdsl.dialects.builtin import i64

        if dtype_of(t).is_floating:
            return k.op(arith.SIToFPOp(k.op(arith.IndexCastOp(i, i64)), t))
        return k.op(arith.IndexCastOp(i, t))

    def fill(self, dst, value):
        elt = dst.type.element_type
        return self.parallel([], [dst], self.shape(dst), [], lambda k: [k.const(value, elt)])


class BodyBuilder:
    """Ops of a ``loops.parallel`` body being built (see L3Builder.parallel)."""

    def __init__(self, block):
        self.block = block

    def op(self, op):
        self.block.add_op(op)
        return op.results[0]

    def index(self, d: int):
        return self.op(L.IndexOp(d))

    def load_at(self, buf, indices):
        return self.op(L.LoadAtOp(buf, list(indices)))

    def add_at(self, buf, indices, value, mask=None):
        """``loops.add_at``: ``buf[indices] += value`` (where ``mask``), a
        scatter-add into a buffer defined outside the kernel."""
        self.block.add_op(L.AddAtOp(value, buf, list(indices), mask))

    def const(self, x, t):
        if isinstance(t, IndexType):
            return self.op(arith.ConstantOp(IntegerAttr(int(x), IndexType())))
        dt = dtype_of(t)
        # x cast to the dtype as numpy's astype casts it (300 -> 44 in int8, 70000.0 -> inf in
        # float16, nan -> INT_MIN in int32, 0.5 -> True in bool; one rounding from a float64):
        # the value eager's kernel of that dtype holds
        with np.errstate(all="ignore"):
            v = np.asarray(x).astype(dt.as_numpy_dtype)
        for op in constant_ops(v.item() if dt.is_floating else int(v), t):
            result = self.op(op)
        return result


class _Lowering:
    """One function's lowering (see the module docstring)."""

    def __init__(self, f2):
        self.f2 = f2
        self.bz = Bufferization(f2)
        self.plan = plan(self.bz)
        self.vm: dict = {}        # L2 value -> L3 value
        self.bufval: dict = {}    # buffer id -> L3 memref value
        self.bufval_at: dict = {}  # L2 value -> the L3 buffer its kernel writes (a loop's spare)
        self.yields: dict = {}     # L2 body yield -> the L3 spare buffers of its loop
        self.loads: dict = {}      # (L2 0-d value, L3 block) -> its loops.load there
        self.kernel_view: dict = {}  # L2 value copied for other readers -> the view its kernels read

    def run(self):
        f2 = self.f2
        in_types = [convert_type(a.type) for a in f2.body.block.args]
        arena_t = MemRefType(i8, [self.plan.arena_size])
        entry = Block(arg_types=in_types + [arena_t])
        for a2, a3 in zip(f2.body.block.args, entry.args):
            self.vm[a2] = a3
            if a2.name_hint:
                a3.name_hint = a2.name_hint
        self.arena = entry.args[-1]
        self.arena.name_hint = "arena"
        for b in self.plan.buffers:  # arena views at entry: made once per call
            if b.kind == "arena":
                t = convert_type(self.bz.buffers[b.id].type)
                if not isinstance(t, MemRefType):
                    t = MemRefType(t, [])
                v = L.ViewOp(self.arena, b.offset, t)
                entry.add_op(v)
                self.bufval[b.id] = v.result
        self.block(f2.body.block, entry)
        out_types = [convert_type(t) for t in f2.function_type.outputs.data]
        f3 = func.FuncOp(f2.sym_name.data, (in_types + [arena_t], out_types), Region(entry))
        f3.attributes["tfc.arena_size"] = IntegerAttr(self.plan.arena_size, 64)
        return f3

    # -- helpers ------------------------------------------------------------------
    def emit(self, block, op, src=None):
        if src is not None:
            op.location = src.location
        block.add_op(op)
        return op

    def buffer_for(self, value, block, src):
        """The L3 buffer that L2 ``value`` is written into."""
        v = self.bufval_at.get(value)
        if v is not None:  # a loop's next value: the spare buffer of this iteration
            return v
        win = self.bz.window.get(value)
        if win is not None:  # its window of a later op's buffer (a concat's piece)
            whole, offsets = win
            shape = spec_of(value.type).shape
            return L3Builder(self, block, src).subview(self.buffer_for(whole, block, src), offsets, shape,
                                                       [1] * len(shape))
        b = self.bz.own[value]
        v = self.bufval.get(b.id)
        if v is None:  # fresh: allocated where first computed
            t = convert_type(value.type)
            if not isinstance(t, MemRefType):
                t = MemRefType(t, [])
            alloc = L.AllocOp(t)
            if b.donor is not None:  # the backend may reuse this variable argument's array
                alloc.attributes["tfc.donor"] = IntegerAttr(b.donor, 64)
            v = self.emit(block, alloc, src).result
            self.bufval[b.id] = v
        return v

    def host(self, value, b3, at):
        """L2 ``value`` where the host needs it: a 0-d value that a kernel wrote
        into a 0-d buffer is read with ``loops.load`` (the one op where a value
        crosses to the host: on a GPU a synchronization), once per block; any
        other value as it is."""
        v = self.vm[value]
        if isinstance(v.type, MemRefType) and not v.type.get_shape() and \
                isinstance(value.type, TensorType) and not value.type.get_shape():
            key = (value, b3)
            ld = self.loads.get(key)
            if ld is None:
                ld = self.loads[key] = self.emit(b3, L.LoadOp(v), at).result
            return ld
        return v

    def region(self, region2):
        b3 = Block(arg_types=[convert_type(a.type) for a in region2.block.args])
        for a2, a3 in zip(region2.block.args, b3.args):
            self.vm[a2] = a3
        self.block(region2.block, b3)
        return Region(b3)

    # -- ops ----------------------------------------------------------------------
    def block(self, b2, b3):
        vm = self.vm
        for op in b2.ops:
            if isinstance(op, func.ReturnOp):
                self.emit(b3, func.ReturnOp(*[self.host(v, b3, op) for v in op.operands]), op)
            elif isinstance(op, YieldOp):
                spares = self.yields.get(op)
                if spares is None:
                    self.emit(b3, L.YieldOp([self.host(v, b3, op) for v in op.operands]), op)
                else:
                    self.loop_yield(op, spares, b3)
            elif isinstance(op, ConditionOp):
                self.emit(b3, L.ConditionOp(self.host(op.cond, b3, op)), op)
            elif isinstance(op, ConstantOp):
                arr = op.numpy()
                if arr.ndim == 0:
                    for c in constant_ops(arr.item() if arr.dtype.kind == "f" else int(arr),
                                          op.result.type.element_type):
                        vm[op.result] = self.emit(b3, c, op).result
                else:
                    vm[op.result] = self.emit(b3, L.ConstantOp(op.value, convert_type(op.result.type)), op).result
            elif isinstance(op, FusedOp):
                self.fused(op, b3)
            elif isinstance(op, RegistryOp):
                self.library(op, b3)
            elif isinstance(op, CondOp):
                new = L.IfOp(self.host(op.pred, b3, op), [convert_type(t) for t in op.result_types],
                             self.region(op.then_region), self.region(op.else_region))
                self.emit(b3, new, op)
                for r2, r3 in zip(op.results, new.results):
                    vm[r2] = r3
            elif isinstance(op, WhileOp):
                self.while_(op, b3)
            elif isinstance(op, ReadVariableOp):
                new = L.ReadVariableOp.create(operands=[vm[op.ref]], result_types=[convert_type(op.result.type)])
                vm[op.result] = self.emit(b3, new, op).result
            elif isinstance(op, AssignVariableOp):
                self.emit(b3, L.AssignVariableOp.create(operands=[vm[op.ref], self.host(op.value, b3, op)]), op)
            elif isinstance(op, PrintOp):
                props = {"format": op.format}
                for k in ("stream", "summarize"):
                    if getattr(op, k) is not None:
                        props[k] = getattr(op, k)
                self.emit(b3, L.PrintOp.create(operands=[self.host(v, b3, op) for v in op.values],
                                               properties=props), op)
            elif isinstance(op, AssertOp):
                self.emit(b3, L.AssertOp.create(operands=[self.host(v, b3, op) for v in [op.cond, *op.data]],
                                                properties={"message": op.message}), op)
            elif op.name.startswith("tfc."):
                raise NotImplementedError(f"lowering {op.name} to the loops dialect")
            else:  # arith/math belong inside a tfc.fused body (tfc opt input)
                raise PassPreconditionError(f"tfc-lower-loops: op {op.name} at {loc_str(op)} is not tensor IR")

    def fused(self, op: FusedOp, b3):
        vm = self.vm
        body = op.body.block
        if op.iteration_shape == () and op.outs[0] not in self.bz.own:  # host scalar code, inline
            mapper = {a: self.host(v, b3, op) for a, v in zip(body.args, op.inputs)}
            for inner in body.ops:
                if isinstance(inner, FusedYieldOp):
                    for r, y in zip(op.outs, inner.values):
                        vm[r] = mapper.get(y, y)
                    return
                new = inner.clone(value_mapper=mapper)
                self.emit(b3, new, inner)
            # verified IR has one; tfc opt --disable-verify passes any
            raise PassPreconditionError(f"tfc-lower-loops: tfc.fused at {loc_str(op)} has a body without "
                                        f"its terminator {FusedYieldOp.name}")
        outs = [self.buffer_for(r, b3, op) for r in op.outs]
        new_body = Block(arg_types=[a.type for a in body.args])
        mapper = dict(zip(body.args, new_body.args))
        for inner in body.ops:
            if isinstance(inner, FusedYieldOp):
                new_body.add_op(L.YieldOp([mapper.get(v, v) for v in inner.values]))
            else:
                new_body.add_op(inner.clone(value_mapper=mapper))
        kv = self.kernel_view
        par = L.ParallelOp([kv[v] if v in kv else vm[v] for v in op.inputs], outs, op.iteration_shape, op.broadcast_maps,
                           Region(new_body), op.reduce_kinds, op.axes)
        self.emit(b3, par, op)
        for r, o in zip(op.outs, outs):
            vm[r] = o  # a 0-d result stays a 0-d buffer: loaded where the host needs it (host())

    def while_(self, op: WhileOp, b3):
        """``loops.while`` carrying each planned loop variable (Bufferization's
        Slot) in arena buffers: modes "direct"/"copy" in two, the value's and
        a spare, passed as one more loop variable (the body writes the next
        value into the spare and yields the two swapped); "inplace" in one
        that the body's kernel overwrites. Nothing is allocated per
        iteration."""
        vm = self.vm
        slots = self.bz.slots[op]
        inits, extra = [], []
        for v, sl in zip(op.inits, slots):
            x = self.host(v, b3, op)
            if sl is not None and sl.mode != "same":
                a = self.bufval[sl.a.id]
                if a is not x:  # the init's buffer is not the loop's: copy it in
                    self._copy(x, a, b3, op)
                x = a
                if sl.b is not None:
                    extra.append(self.bufval[sl.b.id])
            inits.append(x)
        types = [convert_type(t) for t in op.result_types] + [e.type for e in extra]

        def region(region2, body):
            b3r = Block(arg_types=types)
            for a2, a3 in zip(region2.block.args, b3r.args):
                self.vm[a2] = a3
            spares = b3r.args[len(region2.block.args):]
            if body:
                term = region2.block.last_op
                self.yields[term] = spares
                k = 0
                for i, (y, sl) in enumerate(zip(term.operands, slots)):
                    if sl is not None and sl.mode == "inplace":  # over the variable's own buffer
                        self.bufval_at[y] = b3r.args[i]
                    elif sl is not None and sl.b is not None:
                        if sl.mode == "direct":
                            self.bufval_at[y] = spares[k]
                        k += 1
            self.block(region2.block, b3r)
            return Region(b3r)

        limit = None if op.max_iterations is None else op.max_iterations.value.data
        new = L.WhileOp(inits + extra, types, region(op.cond_region, False), region(op.body_region, True), limit)
        self.emit(b3, new, op)
        for i, (r2, r3) in enumerate(zip(op.results, new.results)):
            if (op, i) in self.bz.copy_out:  # an escaping result: a fresh buffer, not the arena's
                out = self.buffer_for(r2, b3, op)
                self._copy(r3, out, b3, op)
                r3 = out
            vm[r2] = r3

    def loop_yield(self, op: YieldOp, spares, b3):
        """The body's yield of a loop with carried buffers: the next value is in
        the spare (written there by its kernel, or copied at the yield), and
        the current value's buffer becomes the next iteration's spare."""
        vm = self.vm
        w = op.parent_op()
        slots = self.bz.slots[w]
        body = w.body_region.block
        vals, rest = [], []
        k = 0
        for i, (y, sl) in enumerate(zip(op.operands, slots)):
            if sl is None or sl.b is None:  # off, same, or written in place
                vals.append(self.host(y, b3, op))
                continue
            s = spares[k]
            k += 1
            if vm[y] is not s:
                self._copy(vm[y], s, b3, op)
            vals.append(s)
            rest.append(self.vm[body.args[i]])
        self.emit(b3, L.YieldOp(vals + rest), op)

    def _copy(self, src, dst, b3, at):
        if src.type == dst.type:
            self.emit(b3, L.CopyOp(src, dst), at)
        else:  # another layout: a copy kernel
            L3Builder(self, b3, at).copy(src, dst)

    def lowered(self, op: RegistryOp, b3) -> bool:
        """Lower ``op`` through its declaration's ``lower`` (see the module
        docstring); False where it stays a library call."""
        kind = lowers(op)
        if kind is None:
            return False
        b = L3Builder(self, b3, op)
        ins = [self.host(v, b3, op) for v in op.operands]  # 0-d operands as scalars (the interface)
        attrs = decode_attrs(op.OPDEF, dict(op.properties))
        kv = self.kernel_view
        kernel_ins = [kv.get(x, i) for x, i in zip(op.operands, ins)]  # the views kernels read, where copied
        if kind in ("alias", "view"):
            (r,) = op.results
            # a view of a value copied for other readers is made from its view (a chain of views)
            if kind == "view":
                ins = kernel_ins
            elif any(x in kv for x in op.operands) and \
                    any(alias_view_reader(u) for u in op.operands[0].uses if u.operation is op):
                # an alias of a value copied for other readers: its kernels read a view of the view
                kv[r] = op.OPDEF.lower(b, None, *kernel_ins, **attrs)
            v = op.OPDEF.lower(b, None, *ins, **attrs)
            if L.shape_of(v.type) != spec_of(r.type).shape:
                raise AssertionError(f"lowering {op.OPDEF.name}: an alias of shape {L.shape_of(v.type)} "
                                     f"for a result of shape {spec_of(r.type).shape}")
            self.vm[r] = v
            return True
        outs = [self.buffer_for(r, b3, op) for r in op.results]
        b.temps = [self.bufval[t.id] for t in self.bz.temps.get(op, ())]
        op.OPDEF.lower(b, outs, *ins, **attrs)
        for r, o in zip(op.results, outs):
            self.vm[r] = o  # a 0-d result: a 0-d buffer, as a kernel's
        if read_in_place(op):  # kernels read the strided view, the other readers the copy
            kv[op.results[0]] = op.OPDEF.lower(b, None, *kernel_ins, **attrs)
        return True

    def library(self, op: RegistryOp, b3):
        if self.lowered(op, b3):
            return
        vm = self.vm
        ins = [self.host(v, b3, op) for v in op.operands]
        props = dict(op.properties)
        if op.results and op.results[0] in self.bz.own:
            out = self.buffer_for(op.results[0], b3, op)
            self.emit(b3, L.LibraryOp(op.OPDEF.name, ins, props, outs=[out]), op)
            vm[op.results[0]] = out
            return
        new = L.LibraryOp(op.OPDEF.name, ins, props, [convert_type(r.type) for r in op.results])
        self.emit(b3, new, op)
        for r2, r3 in zip(op.results, new.res):
            vm[r2] = r3


def lower_function(f2):
    """(L3 function, MemoryPlan, L2 value -> L3 value) for an L2 function."""
    lw = _Lowering(f2)
    f3 = lw.run()
    return f3, lw.plan, lw.vm


@dataclass(frozen=True)
class LowerLoopsPass(ModulePass):
    """L2 -> L3: buffers at planned offsets, parallel loops, library calls."""

    name = "tfc-lower-loops"

    def apply(self, ctx, op) -> None:
        require_tensor_ir(self.name, op)
        for f in functions(op):
            f3, _, _ = lower_function(f)
            op.body.block.insert_op_before(f3, f)
            op.body.block.erase_op(f)


__all__ = ["LowerLoopsPass", "lower_function", "convert_type", "L3Builder", "BodyBuilder"]
