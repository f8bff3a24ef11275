"""Bufferization (L2): decide which tensor values get a buffer of their own,
which values may reference which buffers, where a result reuses a dying input
in place, and which buffers must outlive the call.

Run on the fused (L2) module. A value gets its own buffer when a kernel writes
it: a ``tfc.fused`` result that is not 0-d elementwise on host values (those
become scalar code; a reduction to 0-d, and a 0-d kernel reading a value that
a kernel made, get a 0-d buffer that later kernels read), the result of a
library op of static shape whose declaration gives ``kernel_into`` (matmul,
conv2d, pooling, the random generators: the kernel writes into it), and
every result of a registry op that
tfc-lower-loops lowers through its declaration's ``lower`` into kernels
(``lowers(op) == "write"``: transpose, getitem, concat, ...). The result of
an alias op (``lowers(op) == "alias"``: reshape, expand_dims, squeeze, a
getitem of a contiguous range) and of every other op (a library kernel, which
may return a view of its inputs) *may reference* any buffer its tensor
operands reference (none for the kernels of ``NEW_ARRAY_KERNELS``, which
always copy); ``tfc.cond``/``tfc.while`` results reference what their
branches/initial values reference.

In place: an elementwise ``tfc.fused`` result reuses the buffer of an input
read at the same index (same shape and dtype) when no value referencing that
buffer is used after this op, no other input of the kernel may reference it
(a view reads it at other indices: ``x + transpose(x)``), and no variable was
assigned a value referencing it (the variable holds it: its later reads are not
values of this function).

Windows: an elementwise kernel's one result whose one use is a piece of a
concat (a lowered op whose declaration lists windows, ``lower.windows``) is
written straight into its window of the concat's buffer: no buffer of its
own, and the concat copies nothing for it (``Bufferization.window``).

Loop state: a ``tfc.while`` variable of static, non-0-d shape lives in arena
buffers live over the whole loop: one, written in place by an elementwise
update that reads it at the same index last, else two, its value's and a
spare: the body writes the next value into the spare and the loop swaps them.
Nothing is allocated per iteration (``Slot``, ``Bufferization._carry``); an
escaping result is copied once into a fresh buffer after the loop.

Buffer kinds: ``arena`` (planned by tfc-plan-memory) or ``fresh`` (allocated
each time its first value is computed): a buffer referenced by a function
result, by a value assigned to a variable, or by a value yielded from a
``tfc.while`` body for a variable not carried in buffers (a shape known only
at run time: the next iteration would overwrite it) is fresh. 0-d values cross
by value (``loops.load``): their buffers are never fresh.

The pass annotates each op with ``tfc.buffers = array<i64: ...>`` (one id per
result, -1 for none) and the function with ``tfc.fresh = array<i64: ...>``.
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, TensorType, i64
from xdsl.ir import BlockArgument
from xdsl.passes import ModulePass

from tfc.dialects.fused import FusedOp
from tfc.dialects.tensor import (
    AssignVariableOp, CondOp, ReadVariableOp, RegistryOp, WhileOp, decode_attrs, spec_of,
)
from tfc.passes.pipeline import require_tensor_ir


def block_of(value):
    if isinstance(value, BlockArgument):
        return value.block
    return value.owner.parent_block()


# -- program points -------------------------------------------------------------------


class Points:
    """Preorder numbering of the ops of a function: ``start[op]`` and
    ``end[op]`` (the last number inside its regions)."""

    def __init__(self, fop):
        self.start: dict = {}
        self.end: dict = {}
        n = 0
        for op in fop.body.walk():
            self.start[op] = n
            n += 1
        for op in reversed(list(self.start)):
            e = self.start[op]
            for r in op.regions:
                for b in r.blocks:
                    for inner in b.ops:
                        e = max(e, self.end[inner])
            self.end[op] = e
        self.count = n

    def use_point(self, value, user) -> int:
        """Where a use keeps ``value`` alive: the user lifted to the op in the
        value's block; a use by or inside a region op lasts to the op's end."""
        block = block_of(value)
        op = user
        while op.parent_block() is not block:
            op = op.parent_op()
            if op is None:
                raise AssertionError("use outside the value's scope")
        if op is user and (not op.regions or isinstance(op, FusedOp)):  # a kernel body is no control flow
            return self.start[op]
        return self.end[op]

    def def_point(self, value) -> int:
        if isinstance(value, BlockArgument):
            return self.start[value.block.parent_op()]
        return self.start[value.owner]

    def last_use(self, value) -> int:
        last = self.def_point(value)
        for u in value.uses:
            last = max(last, self.use_point(value, u.operation))
        return last


# -- the analysis ----------------------------------------------------------------------


def static_shape(t):
    s = spec_of(t).shape
    return None if any(d is None for d in s) else s


# registry ops whose kernels always return new arrays (never a view of an
# input), so their results reference no buffer: e.g. the gradient pieces that
# concat joins into one flat vector stay in the arena
NEW_ARRAY_KERNELS = frozenset({"concat"})


def lowers(op) -> str | None:
    """How tfc-lower-loops lowers registry op ``op``: ``"write"`` (its
    declaration's ``lower`` writes its results into buffers of their own),
    ``"alias"`` (``lower.alias(in_specs, **attrs)`` holds, on the operands'
    Specs: its one result is a contiguous view of its operand: loops.reshape /
    loops.subview), ``"view"`` (``lower.view(in_specs, **attrs)`` holds and
    every user of the result is a kernel reading it as an input: a strided
    view, transpose_view or subview, that the kernels read in place of a copy)
    or None (a library call: no ``lower``, a shape known only at run time, or
    ``lower.when(in_specs, **attrs)`` false)."""
    d = op.OPDEF
    if d.lower is None:
        return None
    specs = [spec_of(v.type) for v in op.operands]
    ins = [s.shape for s in specs]
    outs = [spec_of(r.type).shape for r in op.results]
    if any(None in s for s in ins + outs):
        return None
    attrs = decode_attrs(d, dict(op.properties))
    when = getattr(d.lower, "when", None)
    if when is not None and not when(specs, **attrs):
        return None
    alias = getattr(d.lower, "alias", None)
    # a 0-d operand or result is a scalar in L3: no view of it
    if alias is not None and len(outs) == 1 and outs[0] and all(ins) and \
            alias(specs, **attrs):
        return "alias"
    view = getattr(d.lower, "view", None)
    if view is not None and len(outs) == 1 and outs[0] and all(ins) and view(specs, **attrs) and \
            _only_view_readers(op.results[0]):
        return "view"
    return "write"


def _declares_view(op) -> bool:
    """Is ``op`` a registry op whose lowering declares ``lower.view`` (it may
    lower to a strided view of its operand)?"""
    return isinstance(op, RegistryOp) and op.OPDEF.lower is not None and \
        getattr(op.OPDEF.lower, "view", None) is not None


def _view_holds(op) -> bool:
    specs = [spec_of(v.type) for v in op.operands]
    return len(op.results) == 1 and bool(spec_of(op.results[0].type).shape) and all(s.shape for s in specs) and \
        bool(op.OPDEF.lower.view(specs, **decode_attrs(op.OPDEF, dict(op.properties))))


def _view_reader(use) -> bool:
    """Does ``use`` read a strided view as it is: a kernel's input, or an op
    lowering to a view of it (a getitem of a transpose) that some kernel reads?"""
    user = use.operation
    if isinstance(user, FusedOp):
        return user.iteration_shape != ()
    return _declares_view(user) and (lowers(user) == "view" or read_in_place(user))


def read_in_place(op) -> bool:
    """Does the kernels' reading of registry op ``op``'s result go through a
    strided view of its operand although the op writes its result (``"write"``:
    a reader other than a kernel needs the copy)? So where ``lower.view``
    holds and some reader is a kernel: the kernels read the view, as eager's
    ufuncs read a strided array (numpy's transcendental loops give other last
    bits on a contiguous copy), the other readers the copy."""
    if not _declares_view(op) or lowers(op) != "write" or not _view_holds(op):
        return False
    return any(_view_reader(u) or alias_view_reader(u) for u in op.results[0].uses)


def alias_view_reader(use) -> bool:
    """Is ``use`` an alias that lower.view also allows (a contiguous getitem)
    whose result a kernel reads? Of a value read in place it is made twice:
    an alias of the copy for the other readers, a view of the view for the
    kernels (eager's getitem of a numpy view is a view of negative steps)."""
    user = use.operation
    return _declares_view(user) and lowers(user) == "alias" and _view_holds(user) and \
        any(_view_reader(u) or alias_view_reader(u) for u in user.results[0].uses)


def temp_types(op) -> list:
    """The tensor types of the temporaries a lowered op's ``lower`` writes
    (``lower.temps(in_specs, **attrs)``: Specs, e.g. a check's 0-d bool flag),
    which the plan places like any buffer, live at the op only; none for ops
    that do not lower by writing."""
    temps = getattr(op.OPDEF.lower, "temps", None)
    if temps is None or lowers(op) != "write":
        return []
    from tfc.dialects.tensor import tensor_type

    return [tensor_type(s.shape, s.dtype) for s in temps([spec_of(v.type) for v in op.operands],
                                                         **decode_attrs(op.OPDEF, dict(op.properties)))]


def _only_view_readers(value) -> bool:
    """Is every use of ``value`` an input of a kernel (a ``tfc.fused`` over a
    non-empty space, lowered to a ``loops.parallel``, which reads any strided
    view) or of an op lowered to a view of it that a kernel reads (a chain of
    getitems and transposes, as eager's chain of numpy views)?"""
    return bool(value.uses) and all(_view_reader(u) for u in value.uses)


def writes_buffer(op, k: int = 0) -> bool:
    """Does the kernel of ``op`` write result ``k`` into a buffer we provide?"""
    if isinstance(op, RegistryOp) and op.OPDEF.lower is not None:
        return lowers(op) == "write"
    if isinstance(op, FusedOp):
        return not (op.iteration_shape == () or (op.reduce_kinds[k] is None and spec_of(op.outs[k].type).shape == ()))
    into = op.OPDEF.kernel_into if isinstance(op, RegistryOp) else None
    if into is not None and len(op.results) == 1 and static_shape(op.results[0].type) is not None:
        # a library kernel that writes into a buffer of the plan (matmul, conv2d, ...)
        when = getattr(into, "when", None)
        return when is None or bool(when([spec_of(v.type) for v in op.operands], spec_of(op.results[0].type),
                                         **decode_attrs(op.OPDEF, dict(op.properties))))
    return False


def _writes_own(v) -> bool:
    """Is ``v`` a result that its kernel writes into a buffer we provide?"""
    op = v.owner
    if isinstance(op, FusedOp):
        return writes_buffer(op, list(op.outs).index(v))
    return isinstance(op, RegistryOp) and writes_buffer(op)


@dataclass(eq=False)
class Slot:
    """How tfc.while carries one loop variable (see Bufferization._carry)."""
    mode: str              # "direct", "inplace", "copy" or "same"
    a: object              # Buffer of the value at loop entry
    b: object              # the spare Buffer (None: "inplace", "same")

    @property
    def bufs(self) -> set:
        return {x for x in (self.a, self.b) if x is not None}

    @property
    def target(self):
        """The buffer the kernel making the next value writes ("direct", "inplace")."""
        return self.a if self.mode == "inplace" else self.b


@dataclass(eq=False)
class Buffer:
    id: int
    value: object          # the first value stored in it (its type gives shape and dtype)
    fresh: bool = False
    inplace_of: list = None  # values that reuse it in place
    donor: int | None = None  # function argument (a variable) whose storage it may take over
    temp_type: object = None  # a lowering's temporary (``lower.temps``): its tensor type; value is the op's result

    @property
    def type(self):
        """The tensor type of what the buffer holds."""
        return self.value.type if self.temp_type is None else self.temp_type

    @property
    def nbytes(self) -> int:
        s = spec_of(self.type)
        n = s.dtype.itemsize
        for d in s.shape:
            n *= d
        return n


class Bufferization:
    """The result of the analysis for one function."""

    def __init__(self, fop):
        self.func = fop
        self.points = Points(fop)
        self.own: dict = {}      # value -> Buffer written by its defining kernel
        self.refs: dict = {}     # value -> frozenset of Buffers it may reference
        self.buffers: list[Buffer] = []
        self._ranges = None  # Buffer -> live range, made on first use
        # tfc.while slots: (while, i) -> mode, decided optimistically and revised
        # where a carried buffer would escape (see _carry)
        self.modes: dict = {}
        self.copy_out: set = set()  # (while, i) whose result is copied into a fresh buffer
        # (while, i) whose init is copied into a buffer of the loop's own: a value made
        # before the loop that escapes references the init's buffer
        self.own_entry: set = set()
        for _ in range(64):
            conflicts = self._analyze()
            if not conflicts:
                break
            for key, where in conflicts:
                if where == "after":
                    self.copy_out.add(key)
                elif where == "before":
                    self.own_entry.add(key)
                else:  # a value of the body escapes with the carried buffer: write y_i a buffer of its own
                    self.modes[key] = "copy" if self.modes[key] in ("direct", "inplace") else "off"
        else:
            raise AssertionError("tfc-bufferize: the loop buffers did not settle")

    def _new(self, value) -> Buffer:
        b = Buffer(len(self.buffers), value, inplace_of=[])
        self.buffers.append(b)
        return b

    def refs_of(self, v) -> frozenset:
        """Buffers ``v`` may reference; none for 0-d values, which are scalars (copies)."""
        if not spec_of(v.type).shape and isinstance(v.type, TensorType):
            return frozenset()
        return self.refs.get(v, frozenset())

    def _analyze(self):
        """One round of the analysis under ``modes`` / ``copy_out``; returns the
        conflicts: ((while, i), where) for each slot whose carried buffers an
        escaping value references: ``"after"`` (a value made after the loop,
        or the loop's result), ``"before"`` (a value made before the loop: the
        carried buffer is the init's, which an escaping value of an earlier op
        references, e.g. the yielded value of an earlier loop's variable not
        carried in buffers; copying the loop's result out would not help) or
        ``"body"`` (a value of the loop's body)."""
        self.own, self.refs, self.buffers = {}, {}, []
        self.slots: dict = {}    # WhileOp -> [Slot | None] per loop variable
        self.spare: dict = {}    # body value -> Slot whose spare buffer its kernel writes
        self.extent: dict = {}   # Buffer -> program points it is live over at least (a loop's)
        self.temps: dict = {}    # lowered op -> its temporaries' Buffers (``lower.temps``)
        self.window: dict = {}   # kernel result -> (the op's result whose buffer it is written in, offsets)
        pts = self.points
        last_use = {}

        def lu(v):
            r = last_use.get(v)
            if r is None:
                r = last_use[v] = pts.last_use(v)
            return r

        holders: dict = {}  # Buffer -> values referencing it so far
        self.pinned = set()  # buffers a variable holds: never overwritten in place

        def set_refs(v, bufs):
            self.refs[v] = frozenset(bufs)
            for b in bufs:
                holders.setdefault(b, []).append(v)

        whiles = []

        def union(values):
            out = set()
            for v in values:
                out |= self.refs_of(v)
            return out

        def visit(block):
            for op in block.ops:
                if isinstance(op, FusedOp):
                    # a 0-d kernel reading a value a kernel made stays on the device: a 0-d buffer
                    device = op.iteration_shape == () and any(v in self.own for v in op.inputs)
                    for k, r in enumerate(op.outs):
                        if not (device or writes_buffer(op, k)):
                            continue
                        slot = self.spare.get(r)
                        if slot is not None:  # a loop's next value: written into the spare (or in place)
                            self.own[r] = slot.target
                            set_refs(r, slot.bufs)
                            continue
                        donor = self._variable_donor(op, lu) if len(op.outs) == 1 else None
                        win = self._window_of(op, r) if donor is None else None
                        if win is not None:  # written straight into its window of a concat's buffer
                            whole, offsets = win
                            buf = self.own.get(whole)
                            if buf is None:
                                buf = self.own[whole] = self._new(whole)
                            self.window[r] = (whole, offsets)
                            set_refs(r, [buf])
                            continue
                        buf = None if donor is not None else self._inplace_candidate(op, k, holders, lu)
                        if donor is not None:
                            buf = self._new(r)
                            buf.donor = donor
                        elif buf is None:
                            buf = self._new(r)
                        else:
                            buf.inplace_of.append(r)
                        self.own[r] = buf
                        set_refs(r, [buf])
                elif isinstance(op, RegistryOp) and writes_buffer(op):
                    for r in op.results:
                        slot = self.spare.get(r)
                        if slot is not None:
                            self.own[r] = slot.target
                            set_refs(r, slot.bufs)
                            continue
                        # (made already where a kernel wrote an operand into its window)
                        buf = self.own.get(r) or self._new(r)
                        self.own[r] = buf
                        # kernels reading the operand's view: r holds the operand's buffers too
                        set_refs(r, {buf} | union(op.operands) if read_in_place(op) else [buf])
                    for t in temp_types(op):  # live at the op only: planned like any buffer
                        buf = self._new(op.results[0])
                        buf.temp_type = t
                        self.temps.setdefault(op, []).append(buf)
                        self.extent[buf] = (pts.start[op], pts.start[op])
                elif isinstance(op, RegistryOp):
                    bufs = () if op.OPDEF.name in NEW_ARRAY_KERNELS else union(op.operands)
                    for r in op.results:
                        set_refs(r, bufs)
                elif isinstance(op, WhileOp):
                    whiles.append(op)
                    slots = self.slots[op] = self._carry(op, lu, holders)
                    # "off" slots: yielded values are fresh (below), so their carried buffers are the inits'
                    old = union(v for v, sl in zip(op.inits, slots) if sl is None)
                    carried = []
                    for i, sl in enumerate(slots):
                        if sl is None:
                            carried.append(old)
                        elif sl.mode == "same":
                            carried.append(self.refs_of(op.inits[i]))
                        else:
                            carried.append(sl.bufs)
                    for region in (op.cond_region, op.body_region):
                        for a, bufs in zip(region.block.args, carried):
                            set_refs(a, bufs)
                        visit(region.block)
                    for i, r in enumerate(op.results):
                        if (op, i) in self.copy_out:
                            buf = self._new(r)
                            self.own[r] = buf
                            set_refs(r, [buf])
                        else:
                            set_refs(r, carried[i])
                elif isinstance(op, AssignVariableOp):
                    # later reads of the variable are not holders of the buffer
                    self.pinned |= self.refs_of(op.value)
                elif isinstance(op, CondOp):
                    visit(op.then_region.block)
                    visit(op.else_region.block)
                    for i, r in enumerate(op.results):
                        set_refs(r, union(reg.block.last_op.operands[i]
                                          for reg in (op.then_region, op.else_region)))

        visit(self.func.body.block)
        escaping = []
        for op in self.func.body.walk():
            if isinstance(op, func.ReturnOp):
                escaping.extend(op.operands)
            elif isinstance(op, AssignVariableOp):
                escaping.append(op.value)
        for w in whiles:
            escaping.extend(v for v, sl in zip(w.body_region.block.last_op.operands, self.slots[w]) if sl is None)
        owner = {}  # carried buffer -> (while, i)
        for w in whiles:
            for i, sl in enumerate(self.slots[w]):
                if sl is not None and sl.mode != "same":
                    for b in sl.bufs:
                        owner[b] = (w, i)
        conflicts = set()
        for v in escaping:
            for b in self.refs_of(v):
                b.fresh = True
                key = owner.get(b)
                if key is not None:
                    w = key[0]
                    d = pts.def_point(v)
                    definer = v.block.parent_op() if isinstance(v, BlockArgument) else v.owner
                    if pts.end[definer] < pts.start[w]:  # (not an op enclosing the loop: a branch)
                        where = "before"
                    elif pts.start[w] <= d <= pts.end[w] and (isinstance(v, BlockArgument) or v.owner is not w):
                        where = "body"
                    else:
                        where = "after"
                    conflicts.add((key, where))
        return conflicts

    def _carry(self, op, lu, holders):
        """The Slot of each loop variable of tfc.while ``op`` (None: "off", the
        loop allocates the variable's new value each iteration).

        A variable of static shape (not 0-d: scalars are values) lives in two
        arena buffers, ``a`` (holding the current value; the init's own buffer
        where the init dies at the loop, else the init is copied into it) and
        ``b`` (the spare). The body writes the next value into the spare and
        the loop swaps the two: mode ``"direct"`` (the kernel making the
        yielded value writes the spare), ``"inplace"`` (an elementwise kernel
        reading the variable at the same index, after every other read of it
        in the body, writes its buffer in place: one buffer, no swap) or
        ``"copy"`` (the yielded value is
        copied into the spare at the yield: a value that is no kernel's
        result, or one that escapes otherwise). ``"same"``: the body yields the
        variable unchanged (no buffer of its own). A result that escapes
        (returned, assigned, yielded by an outer loop) is copied after the
        loop into a fresh buffer (``copy_out``): never a view of the arena."""
        body = op.body_region.block
        yielded = list(body.last_op.operands)
        out = []
        for i, (init, y) in enumerate(zip(op.inits, yielded)):
            t = op.results[i].type
            key = (op, i)
            if not isinstance(t, TensorType) or not spec_of(t).shape or static_shape(t) is None:
                out.append(None)
                continue
            mode = self.modes.get(key)
            if mode is None:
                if y is body.args[i]:
                    mode = "same"
                elif not isinstance(y, BlockArgument) and y.owner.parent_block() is body and \
                        yielded.count(y) == 1 and _writes_own(y):
                    mode = "inplace" if self._in_place(body, i, y) else "direct"
                else:
                    mode = "copy"
                self.modes[key] = mode
            if mode == "off":
                out.append(None)
                continue
            if mode == "same":
                out.append(Slot(mode, None, None))
                continue
            a = self.own.get(init)
            here = self.points.start[op]
            if a is None or key in self.own_entry or a in self.pinned or a.donor is not None or \
                    list(op.inits).count(init) != 1 or \
                    any(sl is not None and a in (sl.a, sl.b) for sl in out) or \
                    not all(all(u.operation is op for u in h.uses) or lu(h) < here
                            for h in holders.get(a, [init])):
                a = self._new(op.results[i])  # the init is copied in
            sl = Slot(mode, a, None if mode == "inplace" else self._new(op.results[i]))
            # live through the whole loop: the spare is written at the yield
            for b in sl.bufs:
                self.extent[b] = (self.points.start[op], self.points.end[op])
            if mode in ("direct", "inplace"):
                self.spare[y] = sl
            out.append(sl)
        return out

    def _in_place(self, body, i, y) -> bool:
        """May the kernel making ``y`` (yielded for loop variable ``i``) write it
        over the variable's buffer? An elementwise output of a kernel in the
        body that reads the variable at the same index (and nowhere else),
        where every other use of the variable is a kernel of the body before
        it (kernels make no views: nothing reads the old value afterwards)."""
        p = y.owner
        if not isinstance(p, FusedOp) or p.parent_block() is not body:
            return False
        k = list(p.outs).index(y)
        if p.reduce_kinds[k] is not None:
            return False
        if len(p.outs) > 1 and any(isinstance(v, BlockArgument) for v in p.body.block.last_op.values):
            return False  # an input passed straight through may be copied out after another output's write
        x = body.args[i]
        ident = tuple(range(len(p.iteration_shape)))
        reads = [(v, m) for v, m in zip(p.inputs, p.broadcast_maps) if v is x]
        if not reads or any(m != ident or v.type != y.type for v, m in reads):
            return False
        here = self.points.start[p]
        for u in x.uses:
            user = u.operation
            if user.parent_block() is not body or self.points.start[user] > here:
                return False
            if not (isinstance(user, FusedOp) or (isinstance(user, RegistryOp) and writes_buffer(user))):
                return False
        return True

    def _window_of(self, op, r):
        """(the result, window offsets) where elementwise kernel ``op``'s one
        result ``r`` may be written straight into a window of another op's
        buffer: ``r``'s one use is an operand of a lowered op of the same block
        whose declaration lists windows (``lower.windows(in_specs, **attrs)``:
        concat's pieces), the operand appears once, and that op's result is no
        loop's next value. The op then copies nothing for it (the lowering sees
        the operand is its window already); else None."""
        uses = list(r.uses)
        if len(op.outs) != 1 or op.reduce_kinds[0] is not None or len(uses) != 1:
            return None
        (use,) = uses
        user = use.operation
        if not isinstance(user, RegistryOp) or user.parent_block() is not op.parent_block() or \
                [v is r for v in user.operands].count(True) != 1:
            return None
        windows = getattr(user.OPDEF.lower, "windows", None)
        if windows is None or lowers(user) != "write" or len(user.results) != 1 or \
                self.spare.get(user.results[0]) is not None:
            return None
        offsets = windows([spec_of(v.type) for v in user.operands],
                          **decode_attrs(user.OPDEF, dict(user.properties)))[use.index]
        return None if offsets is None else (user.results[0], tuple(offsets))

    def _variable_donor(self, op, lu):
        """The index of the variable argument whose storage an elementwise kernel
        may overwrite with its result (``v.assign(f(v.read_value(), ...))``, as
        eager's in-place ``assign_sub``): the kernel is at function level, its
        result is assigned to that variable, it reads the variable's value at
        the same index, and no value read from the variable (nor any view of
        one) is used after it or assigned before. The backend still checks at
        run time that nothing outside the call holds the array."""
        if op.reduces or op.parent_block() is not self.func.body.block or op.iteration_shape == ():
            return None  # (a 0-d value crosses to a variable by value: loops.load)
        (r,) = op.outs
        refs = [u.operation.ref for u in r.uses if isinstance(u.operation, AssignVariableOp)
                and u.operation.parent_block() is self.func.body.block]
        if len(refs) != 1 or not isinstance(refs[0], BlockArgument):
            return None
        ref = refs[0]
        here = self.points.start[op]
        rank = len(op.iteration_shape)
        if not any(isinstance(v.owner, ReadVariableOp) and v.owner.ref is ref and v.type == r.type
                   and m == tuple(range(rank)) for v, m in zip(op.inputs, op.broadcast_maps)):
            return None
        for u in ref.uses:
            user = u.operation
            if isinstance(user, AssignVariableOp):
                if self.points.start[user] < here:
                    return None
            elif isinstance(user, ReadVariableOp):
                if self.points.start[user] > here:
                    continue
                for vu in user.result.uses:  # kernels that write their own buffers make no views
                    w = vu.operation
                    if not (isinstance(w, FusedOp) or (isinstance(w, RegistryOp) and writes_buffer(w))):
                        return None
                if lu(user.result) > here:
                    return None
            else:
                return None
        return ref.index

    def _inplace_candidate(self, op, k, holders, lu):
        """A buffer that elementwise output ``k`` of kernel ``op`` may write in
        place: a full-size input's, dying here, not taken by an earlier output.
        (The kernel reads an element of every input before it writes that
        element of any output.)"""
        if op.reduce_kinds[k] is not None:
            return None
        if len(op.outs) > 1 and any(isinstance(y, BlockArgument) for y in op.body.block.last_op.values):
            return None  # an input passed straight through may be copied out after another output's write
        here = self.points.start[op]
        out_t = op.outs[k].type
        rank = len(op.iteration_shape)
        taken = {self.own.get(r) for r in op.outs[:k]}
        for v, m in zip(op.inputs, op.broadcast_maps):
            b = self.own.get(v)
            if b is None or b in taken or b in self.pinned or v.type != out_t or m != tuple(range(rank)):
                continue
            if any(w is not v and b in self.refs_of(w) for w in op.inputs):
                continue  # another input is a view of it (x + transpose(x)): read elsewhere than written
            if lu(v) == here and all(lu(h) <= here for h in holders.get(b, [v])):
                return b
        return None

    def live_range(self, buf: Buffer) -> tuple[int, int]:
        """[first definition, last use] of every value that may reference ``buf``."""
        if self._ranges is None:  # one walk over the values for all buffers
            self._ranges = {}
            for v, bs in self.refs.items():
                d, u = self.points.def_point(v), self.points.last_use(v)
                for b in bs:
                    lo, hi = self._ranges.get(b, (d, u))
                    self._ranges[b] = (min(lo, d), max(hi, u))
            for b, (d, u) in self.extent.items():
                lo, hi = self._ranges.get(b, (d, u))
                self._ranges[b] = (min(lo, d), max(hi, u))
        return self._ranges[buf]

    def annotate(self):
        for op in self.func.body.walk():
            ids = [self.own[r].id if r in self.own else -1 for r in op.results]
            if any(i >= 0 for i in ids):
                op.attributes["tfc.buffers"] = DenseArrayBase.from_list(i64, ids)
        self.func.attributes["tfc.fresh"] = DenseArrayBase.from_list(i64, [b.id for b in self.buffers if b.fresh])


def functions(module):
    return [op for op in module.ops if isinstance(op, func.FuncOp)]


@dataclass(frozen=True)
class BufferizePass(ModulePass):
    """Buffers for kernel results, in-place reuse, fresh vs arena (annotations)."""

    name = "tfc-bufferize"

    def apply(self, ctx, op) -> None:
        require_tensor_ir(self.name, op)
        for f in functions(op):
            Bufferization(f).annotate()


__all__ = ["Bufferization", "Buffer", "Slot", "BufferizePass", "Points", "lowers", "temp_types",
           "writes_buffer"]
