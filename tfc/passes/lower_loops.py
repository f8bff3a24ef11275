"""Lowering L2 -> L3 (the ``loops`` dialect), with the buffers of tfc-bufferize
at the offsets of tfc-plan-memory.

- tensor types become ``memref`` (static or ``?`` dims); 0-d tensors become
  scalars (``f32``, ``i32``, ``i1``) so that scalar code pays no tensor overhead;
- the function gets a last argument, the arena ``memref<Nxi8>``; every arena
  buffer is a ``loops.view`` at its offset, made once at function entry;
  fresh buffers are ``loops.alloc`` where their first value is computed;
- ``tfc.fused`` over a 0-d space becomes its scalar body inline; any other
  becomes ``loops.parallel`` writing its buffers (a reduction to 0-d then
  ``loops.load``s the scalar);
- a static float ``matmul`` is ``loops.library "matmul" ... outs(buffer)``;
  other registry ops are ``loops.library`` calls of their kernels;
- ``tfc.cond``/``tfc.while`` become ``loops.if``/``loops.while``; variables,
  print and assert map one to one.
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX, FloatAttr, IntegerAttr, MemRefType, TensorType, i8,
)
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass

from tfc.dialects import loops as L
from tfc.dialects.fused import FusedOp, FusedYieldOp
from tfc.dialects.tensor import (
    AssertOp, AssignVariableOp, ConditionOp, CondOp, ConstantOp, PrintOp, ReadVariableOp,
    RegistryOp, WhileOp, YieldOp, loc_str, spec_of,
)
from tfc.passes.bufferize import Bufferization, functions
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


class _Lowering:
    def __init__(self, f2):
        self.f2 = f2
        self.bz = Bufferization(f2)
        self.plan = plan(self.bz)
        self.vm: dict = {}        # L2 value -> L3 value
        self.bufval: dict = {}    # buffer id -> L3 memref value

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
                t = convert_type(self.bz.buffers[b.id].value.type)
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
                self.emit(b3, func.ReturnOp(*[vm[v] for v in op.operands]), op)
            elif isinstance(op, YieldOp):
                self.emit(b3, L.YieldOp([vm[v] for v in op.operands]), op)
            elif isinstance(op, ConditionOp):
                self.emit(b3, L.ConditionOp(vm[op.cond]), op)
            elif isinstance(op, ConstantOp):
                arr = op.numpy()
                if arr.ndim == 0:
                    elt = op.result.type.element_type
                    attr = FloatAttr(float(arr), elt) if arr.dtype.kind == "f" else IntegerAttr(int(arr), elt)
                    vm[op.result] = self.emit(b3, arith.ConstantOp(attr), op).result
                else:
                    vm[op.result] = self.emit(b3, L.ConstantOp(op.value, convert_type(op.result.type)), op).result
            elif isinstance(op, FusedOp):
                self.fused(op, b3)
            elif isinstance(op, RegistryOp):
                self.library(op, b3)
            elif isinstance(op, CondOp):
                new = L.IfOp(vm[op.pred], [convert_type(t) for t in op.result_types],
                             self.region(op.then_region), self.region(op.else_region))
                self.emit(b3, new, op)
                for r2, r3 in zip(op.results, new.results):
                    vm[r2] = r3
            elif isinstance(op, WhileOp):
                limit = None if op.max_iterations is None else op.max_iterations.value.data
                new = L.WhileOp([vm[v] for v in op.inits], [convert_type(t) for t in op.result_types],
                                self.region(op.cond_region), self.region(op.body_region), limit)
                self.emit(b3, new, op)
                for r2, r3 in zip(op.results, new.results):
                    vm[r2] = r3
            elif isinstance(op, ReadVariableOp):
                new = L.ReadVariableOp.create(operands=[vm[op.ref]], result_types=[convert_type(op.result.type)])
                vm[op.result] = self.emit(b3, new, op).result
            elif isinstance(op, AssignVariableOp):
                self.emit(b3, L.AssignVariableOp.create(operands=[vm[op.ref], vm[op.value]]), op)
            elif isinstance(op, PrintOp):
                props = {"format": op.format}
                for k in ("stream", "summarize"):
                    if getattr(op, k) is not None:
                        props[k] = getattr(op, k)
                self.emit(b3, L.PrintOp.create(operands=[vm[v] for v in op.values], properties=props), op)
            elif isinstance(op, AssertOp):
                self.emit(b3, L.AssertOp.create(operands=[vm[op.cond]] + [vm[v] for v in op.data],
                                                properties={"message": op.message}), op)
            elif op.name.startswith("tfc."):
                raise NotImplementedError(f"lowering {op.name} to the loops dialect")
            else:  # arith/math belong inside a tfc.fused body (tfc opt input)
                raise PassPreconditionError(f"tfc-lower-loops: op {op.name} at {loc_str(op)} is not tensor IR")

    def fused(self, op: FusedOp, b3):
        vm = self.vm
        body = op.body.block
        if op.iteration_shape == ():  # scalar code, inline
            mapper = {a: vm[v] for a, v in zip(body.args, op.inputs)}
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
        par = L.ParallelOp([vm[v] for v in op.inputs], outs, op.iteration_shape, op.broadcast_maps,
                           Region(new_body), op.reduce_kinds, op.axes)
        self.emit(b3, par, op)
        for r, o in zip(op.outs, outs):
            if spec_of(r.type).shape == ():
                vm[r] = self.emit(b3, L.LoadOp(o), op).result
            else:
                vm[r] = o

    def library(self, op: RegistryOp, b3):
        vm = self.vm
        ins = [vm[v] for v in op.operands]
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


__all__ = ["LowerLoopsPass", "lower_function", "convert_type"]
