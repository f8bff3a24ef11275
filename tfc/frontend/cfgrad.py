"""Gradients of compiled control flow (``tfc.cond``, ``tfc.while``) and of
compiled calls (a ``tfc.function`` called under an eager GradientTape).

All of them work by *replaying* already-built IR: ``Replay`` walks a block and
re-emits each op through the tfc API (registry ops through ``execute``, nested
regions through ``builder.cond`` / ``builder.while_loop``) so that a fresh
tape records them. Replaying IR instead of calling the user's Python again
means no Python side effect runs twice (AutoGraph's variable cells, appends to
lists, prints) and what is differentiated is exactly what was compiled.

- cond: one tape entry; its rule emits a new ``tfc.cond`` on the same predicate
  whose branches replay the forward branches under a tape and yield the
  vector-Jacobian products for the values the cond captured.
- while: one tape entry; its rule emits the loop again with each iteration's
  loop-carried state written to a buffer (size ``maximum_iterations``), or to
  a list where the trip count or a shape is known only at run time, then a
  loop running backwards over them, each iteration replaying the body under
  a tape.
- ``tfc.stop_gradient`` and ``tfc.custom_gradient`` are ops in the IR, so a
  replay does what the tape did: the first has no gradient (no tape records
  it), the second records the user's gradient function (kept, by the op's
  key, in the trace's ``grad_fns``; a loaded function has none: an error).
- compiled call: one tape entry; its rule calls a second compiled function,
  the backward function, built once per ConcreteFunction by replaying the
  forward function under a tape (variables become plain tensor inputs holding
  their values at call time).

All three rules are ``seeded``: the tape hands them the gradient accumulated so
far for each input (``entry.prev``) and they add their contributions onto it,
in the order eager's tape adds them, so compiled gradients keep eager's bits.
"""
from __future__ import annotations

import numpy as np

from tfc.core import nest
from tfc.core.context import STATE, TAPES
from tfc.core.registry import REGISTRY
from tfc.core.tape import Guarded, both, either, negative_zeros
from tfc.core.tensor import GpuTensor, Tensor, convert_to_tensor, wrap
from tfc.core.variable import GpuVariable, Variable


CUSTOM_GRADIENT = REGISTRY["custom_gradient"]


def _floating(t) -> bool:
    return t.dtype.is_floating


class Replay:
    """Re-emits the ops of IR blocks into the function being traced.

    ``env`` maps SSA values of the replayed IR to tensors; a value missing from
    it is defined outside what is replayed and is used as is. ``read(ref)`` and
    ``assign(ref, value, nested)`` say what variable reads and assignments become.
    ``grad_fns`` finds the tape op of each tfc.custom_gradient key in the IR
    (default: the builder's own, for IR of the function being traced).
    ``tfc.stop_gradient`` needs nothing: it has no gradient, so no tape records it.
    """

    def __init__(self, builder, env, read, assign, nested=False, grad_fns=None):
        self.builder = builder
        self.env = env
        self.read = read
        self.assign = assign
        self.nested = nested
        self.grad_fns = builder.grad_fns if grad_fns is None else grad_fns

    def value(self, ssa):
        t = self.env.get(ssa)
        if t is None:
            t = self.env[ssa] = self.builder._wrap(ssa)
        return t

    def block(self, block, args):
        """Replay ``block`` with its arguments bound to ``args``; returns the
        yielded tensors (a list), or the condition tensor of a tfc.while cond."""
        from xdsl.dialects import func

        from tfc.dialects.tensor import ConditionOp, YieldOp

        child = Replay(self.builder, dict(self.env), self.read, self.assign, self.nested, self.grad_fns)
        for a, v in zip(block.args, args):
            child.env[a] = v
        for op in block.ops:
            if isinstance(op, (func.ReturnOp, YieldOp)):
                return [child.value(v) for v in op.operands]
            if isinstance(op, ConditionOp):
                return child.value(op.cond)
            child.op(op)
        raise AssertionError("replayed block has no terminator")

    def _nested(self):
        return Replay(self.builder, self.env, self.read, self.assign, True, self.grad_fns)

    def _custom_gradient(self, op):
        """A call of a tfc.custom_gradient function: the tape records its user's
        gradient function (rebound to the replayed tensors), not the forward ops."""
        from tfc.core.registry import execute
        from tfc.core.tape import record
        from tfc.dialects.tensor import loc_str

        attrs = op.attr_values
        vals = [self.value(v) for v in op.operands]
        n = attrs["n_inputs"]
        cg = self.grad_fns.get(attrs["key"])
        if cg is None:
            if TAPES:
                raise NotImplementedError(
                    f"the gradient of a function loaded from an artifact (or built from IR) that calls the "
                    f"tfc.custom_gradient function at {loc_str(op)} is not available: the Python gradient "
                    f"function is not saved; differentiate the Python function, or save the gradient "
                    f"computation itself (a tfc.function that returns the gradients)")
            outs = execute(CUSTOM_GRADIENT, vals, attrs)
            outs = outs if isinstance(outs, list) else [outs]
        else:
            rebound = _Rebound(cg, self.env)
            ins = vals[:n - len(cg.variables)]  # the inputs, then the variables' values
            reads = vals[len(ins):n]
            # a new key even untaped (a region's trace): a replay of this replay finds the rebound op
            outs = self.builder.custom_gradient(rebound, ins, vals[n:], reads)
            record(rebound, ins + reads, outs if len(outs) > 1 else outs[0], {})
        for r, t in zip(op.results, outs):
            self.env[r] = t

    def op(self, op):
        from tfc.core.registry import execute
        from tfc.dialects.tensor import (
            AssertOp, AssignVariableOp, CondOp, ConstantOp, PrintOp, ReadVariableOp, RegistryOp, WhileOp, loc_str,
        )

        if isinstance(op, RegistryOp):
            opdef = op.OPDEF
            if opdef is CUSTOM_GRADIENT:
                return self._custom_gradient(op)
            if opdef.stateful and op.attr_values.get("seed") is None:
                # (a seeded draw is a function of its seed: replayed, it gives the same values)
                raise NotImplementedError(
                    f"{loc_str(op)}: the gradient of compiled code containing the stateful op {opdef.name} is not "
                    f"implemented (replaying it would not give the same values); compute it outside "
                    f"the differentiated tfc.cond / tfc.while_loop / tfc.function, or give the draw a seed")
            out = execute(opdef, [self.value(v) for v in op.operands], op.attr_values)
            outs = out if isinstance(out, list) else [out]
            for r, t in zip(op.results, outs):
                self.env[r] = t
        elif isinstance(op, ConstantOp):
            self.env[op.result] = wrap(op.numpy())
        elif isinstance(op, ReadVariableOp):
            self.env[op.result] = self.read(op.ref)
        elif isinstance(op, AssignVariableOp):
            try:
                self.assign(op.ref, self.value(op.value), self.nested)
            except NotImplementedError as e:  # say which assignment of the user's
                raise NotImplementedError(f"{loc_str(op)}: {e}") from None
        elif isinstance(op, (PrintOp, AssertOp)):
            pass  # they ran with the forward computation
        elif isinstance(op, CondOp):
            inner = self._nested()
            outs = self.builder.cond(
                self.value(op.pred),
                lambda: tuple(inner.block(op.then_region.block, [])),
                lambda: tuple(inner.block(op.else_region.block, [])))
            for r, t in zip(op.results, nest.flatten(outs)):
                self.env[r] = t
        elif isinstance(op, WhileOp):
            inner = self._nested()
            limit = None if op.max_iterations is None else op.max_iterations.value.data
            outs = self.builder.while_loop(
                lambda *a: inner.block(op.cond_region.block, a),
                lambda *a: tuple(inner.block(op.body_region.block, a)),
                [self.value(v) for v in op.inits], limit)
            for r, t in zip(op.results, outs):
                self.env[r] = t
        else:
            raise NotImplementedError(f"the gradient of compiled code containing {op.name} is not implemented")


class _Rebound:
    """A custom gradient's tape op, replayed: its gradient function closed over
    tensors of the IR that was replayed, which ``subst`` maps to the replay's
    (through each replay, for a replay of replayed IR) while it runs."""

    seeded = False

    def __init__(self, op, env):
        base = op.op if isinstance(op, _Rebound) else op
        self.op = base
        self.envs = (op.envs if isinstance(op, _Rebound) else ()) + (env,)
        self.name = base.name
        self.variables = base.variables

    def subst(self, t):
        for env in self.envs:
            ssa = getattr(t, "_ssa", None)
            if ssa is not None:
                t = env.get(ssa, t)
        return t

    def grad(self, entry, g):
        builder = STATE.builder
        prev, builder.subst = builder.subst, self.subst
        try:
            grads = self.op.grad(entry, g)
        finally:
            builder.subst = prev
        return [None if x is None else self.subst(x) for x in grads]


def _region_replay(builder, captured, nested=True):
    """A Replay for the regions of a traced op: captured tensors map to the very
    objects the tape tracks, variables are read again (in the backward code)."""
    env = _outer(captured)
    refs = {arg: var for var, arg in builder._vars.values()}

    def read(ref):
        return builder.read_variable(refs[ref])

    def assign(ref, value, nested):
        raise NotImplementedError(
            f"the gradient through compiled control flow that assigns the variable {refs[ref].name} "
            "is not implemented; assign it outside the differentiated tfc.cond / tfc.while_loop")

    return Replay(builder, env, read, assign, nested)


def _vjp(replay, block, args, sources, targets_idx, out_grads, seeds=None):
    """``replay`` of ``block`` on ``args`` under a fresh tape; the gradients of its
    results ``targets_idx`` (weighted by ``out_grads``, which may be Guarded)
    w.r.t. ``sources``, added onto ``seeds`` (gradients so far, None for none)
    as eager adds them: (gradient, did it flow) pairs, the flag True, False (the
    gradient is then zeros, or the seed) or a bool tensor (nested control flow:
    see tape.Guarded). A seed may be a ``Guarded`` (a gradient so far that exists
    only where its predicate holds): that source's flag then says whether its
    total exists."""
    from tfc.core.tape import GradientTape, _settle
    from tfc.ops.creation import zeros_like

    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(sources)
        res = replay.block(block, args)
    if not sources:
        return []
    targets = [res[k] for k in targets_idx]
    grads = tape.gradient(targets, list(sources), output_gradients=list(out_grads), seeds=seeds, guarded=True)
    out = []
    for g, src, seed in zip(grads, sources, seeds or [None] * len(sources)):
        if g is None:  # nothing flowed to it
            out.append((zeros_like(src), False))
        elif g is seed:
            out.append((g.g, g.pred) if isinstance(g, Guarded) else (g, False))
        elif isinstance(g, Guarded):
            out.append((_settle(g), g.pred))
        else:
            out.append((g, True))
    return out


def _float_ssa(v) -> bool:
    from tfc.dialects.tensor import TensorType, spec_of

    return isinstance(v.type, TensorType) and spec_of(v.type).dtype.is_floating


def _flow(block, reached) -> None:
    """Adds to ``reached`` (SSA values a source's gradient may come back
    from) the float values of ``block`` that the tape would record as computed
    from them: not through an op without a gradient (tfc.stop_gradient), a
    custom gradient only from its inputs, through control flow from what its
    regions yield (loops to a fixed point)."""
    from tfc.dialects.tensor import AssignVariableOp, CondOp, ReadVariableOp, RegistryOp, WhileOp

    def add(values):
        reached.update(v for v in values if _float_ssa(v))

    for op in block.ops:
        if isinstance(op, RegistryOp):
            if op.OPDEF is CUSTOM_GRADIENT:
                ins = op.operands[:op.attr_values["n_inputs"]]
            elif op.OPDEF.grad is None:
                continue
            else:
                ins = op.operands
            if any(v in reached for v in ins):
                add(op.results)
        elif isinstance(op, ReadVariableOp):
            if op.ref in reached:
                add([op.result])
        elif isinstance(op, AssignVariableOp):
            if op.value in reached:
                reached.add(op.ref)  # later reads (an over-approximation in order)
        elif isinstance(op, CondOp):
            yields = []
            for region in (op.then_region, op.else_region):
                _flow(region.block, reached)
                yields.append(region.block.last_op.operands)
            add(r for k, r in enumerate(op.results) if any(y[k] in reached for y in yields))
        elif isinstance(op, WhileOp):
            body = op.body_region.block
            add(a for a, v in zip(body.args, op.inits) if v in reached)
            while True:
                _flow(body, reached)
                new = [a for a, y in zip(body.args, body.last_op.operands) if y in reached and a not in reached]
                if not new:
                    break
                add(new)
            runs = _runs_statically(op)  # a loop that surely runs: its results are the body's
            add(r for r, v, y in zip(op.results, op.inits, body.last_op.operands)
                if (v in reached and runs is not True) or y in reached)


def _runs_statically(op):
    """Does the tfc.while ``op`` run at least once, by its condition on constant
    initial values (a loop over tfc.range of Python ints)? True, False or None
    (known only at run time)."""
    from tfc.dialects.evaluate import run_registry_op
    from tfc.dialects.tensor import ConditionOp, ConstantOp, RegistryOp

    if op.max_iterations is not None and op.max_iterations.value.data <= 0:
        return False
    block = op.cond_region.block
    env = {a: v.owner.numpy() for a, v in zip(block.args, op.inits) if isinstance(v.owner, ConstantOp)}

    def known(v):
        if v not in env and isinstance(v.owner, ConstantOp):
            env[v] = v.owner.numpy()
        return v in env

    for inner in block.ops:
        if isinstance(inner, ConditionOp):
            return bool(env[inner.cond]) if known(inner.cond) else None
        if isinstance(inner, RegistryOp) and not inner.OPDEF.stateful and all(map(known, inner.operands)):
            run_registry_op(inner, env)
    return None


def _reaches(block, value, targets) -> bool:
    """May the gradients of the terminator operands ``targets`` of ``block``
    flow back to the SSA ``value`` (an outer value, or an argument of the
    block)? Where not, the value gets no gradient (None, as eagerly), instead
    of a zero that 0 * inf would turn into NaN upstream."""
    reached = {value}
    _flow(block, reached)
    operands = block.last_op.operands
    return any(operands[k] in reached for k in targets)


def _ssa_of(t):
    """The SSA value a region uses for ``t`` (a variable's: its reference), or None."""
    if isinstance(t, Variable):  # its reads use its reference (an argument of the function)
        hit = STATE.builder._vars.get(id(t))
        return None if hit is None else hit[1]
    return getattr(t, "_ssa", None)


def _connected(blocks, t, targets) -> bool:
    ssa = _ssa_of(t)
    return ssa is None or any(_reaches(b, ssa, targets) for b in blocks)


def _tracking(tape, tensors):
    """(SSA values of the tensors ``tape`` surely tracks, of those it tracks
    only on some run-time paths, whether it tracks any of the latter)."""
    sure, maybe, flag = set(), set(), False
    for t in tensors:
        ssa = _ssa_of(t)
        if id(t) not in tape._tracked or ssa is None:
            continue
        f = tape._maybe.get(id(t))
        if f is None:
            sure.add(ssa)
        else:
            maybe.add(ssa)
            flag = either(flag, f)
    return sure, maybe, flag


def _not(p):
    from tfc.ops.math import logical_not

    return logical_not(p)


def _retrack(tape, outputs, flags) -> None:
    """Each output tracked as eagerly: ``flags`` says per output whether it is
    (True, False or a bool tensor: tracked on the run-time paths where it holds)."""
    for o, f in zip(outputs, flags):
        if id(o) not in tape._tracked:
            continue
        if f is False:
            del tape._tracked[id(o)]
            tape._maybe.pop(id(o), None)  # ids are reused once o is freed
        elif f is True:
            tape._maybe.pop(id(o), None)
        else:
            tape._maybe[id(o)] = f


def _check_source(op, blocks, k, what):
    """A gradient with respect to result ``k`` of a region op: eagerly it
    includes the uses of that value inside the branch (or the loop's last
    trip) that compute the other results; compiled code has only its uses
    after the op, so that case is an error rather than a wrong value."""
    from tfc.dialects.tensor import loc_str

    for block in blocks:
        yields = block.last_op.operands
        if not _defined_in(block, yields[k]):
            continue  # a value from before: eagerly the source is that value (see aliases)
        reached = {yields[k]}
        _flow(block, reached)
        if any(j != k and v in reached and _float_ssa(v) for j, v in enumerate(yields)):
            raise NotImplementedError(
                f"{loc_str(op)}: the gradient with respect to a value that {what} there returns and also uses "
                f"to compute its other results is not implemented in compiled code (eagerly it includes those "
                f"uses); take the gradient with respect to a tensor computed before it, or with respect to "
                f"tfc.identity of the value after it")


def _nested_pass(block, y) -> bool:
    """Is ``y`` (which ``block`` yields) the result of a branch or loop nested
    in it that may return a value from before it unchanged?"""
    from tfc.dialects.tensor import CondOp, WhileOp

    op = y.owner
    if not isinstance(op, (CondOp, WhileOp)) or not _defined_in(block, y):
        return False
    k = list(op.results).index(y)
    if isinstance(op, CondOp):
        regions = (op.then_region, op.else_region)
    elif _runs_statically(op) is not True:
        return True
    else:
        regions = (op.body_region,)
    for region in regions:
        b = region.block
        z = b.last_op.operands[k]
        if not _defined_in(b, z) or _nested_pass(b, z):
            return True
    return False


def _defined_in(block, v) -> bool:
    """Is the SSA value ``v`` the result of an op of ``block`` (not an argument
    of it, nor a value from outside)?"""
    from xdsl.ir import Operation

    return isinstance(v.owner, Operation) and v.owner.parent_block() is block


def _pass_error(op, what):
    from tfc.dialects.tensor import loc_str

    return NotImplementedError(
        f"{loc_str(op)}: the gradient with respect to a value that {what} there may return unchanged from "
        f"before it through a nested branch or loop, or from another loop variable, is not implemented in "
        f"compiled code (eagerly it is that value, its uses before included); take the gradient with "
        f"respect to tfc.identity of the value after it")


def _outer(captured) -> dict:
    """SSA value -> the captured tensor a region uses it for."""
    return {t._ssa: t for t in captured if not isinstance(t, Variable) and getattr(t, "_ssa", None) is not None}


class CondGrad:
    """Tape stand-in for one tfc.cond; ``entry.inputs`` are the values its
    branches captured, ``entry.attrs`` hold the IR op and the predicate. Its
    gradients are totals (``seeded``): each branch adds its contributions onto
    the gradient accumulated so far, in eager's order."""

    name = "tfc.cond"
    seeded = True
    takes_guarded = True  # output gradients may be Guarded (see tape.backprop)

    def track(self, inputs, outputs, attrs):
        """Each tape tracks an output as eagerly: where the branch taken computes
        it from a tracked value (so the tape may learn the predicate)."""
        from tfc.ops.shapes import reshape

        op = attrs["op"]
        for tape in TAPES:
            sure, maybe, flag = _tracking(tape, inputs)
            if not sure and not maybe:
                continue
            branches = []
            for region in (op.then_region, op.else_region):
                block = region.block
                a, b = set(sure), set(maybe)
                _flow(block, a)
                _flow(block, b)
                branches.append([True if v in a else flag if v in b else False for v in block.last_op.operands])
            pred = None
            flags = []
            for t, e in zip(*branches):
                if t is e:
                    flags.append(t)
                    continue
                if pred is None:
                    pred = reshape(attrs["pred"], ())
                    npred = _not(pred)
                flags.append(either(both(pred, t), both(npred, e)))
            _retrack(tape, outputs, flags)

    def check_source(self, entry, k):
        op = entry.attrs["op"]
        _check_source(op, (op.then_region.block, op.else_region.block), k, "the tfc.cond (or tensor `if`)")

    def aliases(self, entry, k):
        """[(pred, tensor)]: output ``k`` is ``tensor``, captured, where a branch
        taken (``pred``) returns it unchanged (see tape._aliases)."""
        from tfc.ops.shapes import reshape

        op = entry.attrs["op"]
        outer = _outer(entry.inputs)
        found = []
        for region, taken in ((op.then_region, True), (op.else_region, False)):
            y = region.block.last_op.operands[k]
            t = outer.get(y)
            if t is not None:
                pred = reshape(entry.attrs["pred"], ())
                found.append((pred if taken else _not(pred), t))
            elif _nested_pass(region.block, y):
                raise _pass_error(op, "the tfc.cond (or tensor `if`)")
        return found

    def grad(self, entry, g):
        builder = STATE.builder
        op, pred = entry.attrs["op"], entry.attrs["pred"]
        gs = g if isinstance(g, list) else [g]
        captured = entry.inputs
        # outputs with a gradient (the zeros given for the others would make 0 * inf NaN)
        missing = entry.missing or [False] * len(entry.outputs)
        fo = [k for k, o in enumerate(entry.outputs) if _floating(o) and not missing[k]]
        blocks = (op.then_region.block, op.else_region.block)
        want = [k for k, x in enumerate(captured)
                if entry.needs_grad(k) and _floating(x) and _connected(blocks, x, fo)]
        out = [None] * len(captured)
        if not want:
            return out
        sources = [captured[k] for k in want]
        seeds = [entry.prev[k] for k in want]

        # A value that one branch may give no gradient to gets a guarded one:
        # none where that branch runs, as eagerly (not a zero: see tape.Guarded).
        known = [{}, {}]  # per branch: j -> did a gradient flow (None: a tensor says)

        def branch(b):
            def run():
                res = _vjp(_region_replay(builder, captured), blocks[b], [], sources, fo, [gs[k] for k in fo],
                           seeds)
                for j, (_, f) in enumerate(res):
                    known[b][j] = f if isinstance(f, bool) else None
                return (*[g for g, _ in res], *[_bool(f) for _, f in res])
            return run

        res = nest.flatten(builder.cond(pred, branch(0), branch(1)))
        totals = []
        for j, k in enumerate(want):
            flowed = (known[0][j], known[1][j])
            if flowed == (False, False):  # e.g. a custom gradient's None: no gradient, as eagerly
                continue
            out[k] = res[j] if flowed == (True, True) else Guarded(res[j], res[len(want) + j])
            totals.append(k)
        entry.totals = totals
        return out


class WhileGrad:
    """Tape stand-in for one tfc.while; ``entry.inputs`` are the initial loop
    values (``attrs["n_init"]`` of them) then the captured values. The
    captured values' gradients are totals (``seeded``): each iteration adds
    its contributions onto the gradient so far, in eager's order."""

    name = "tfc.while_loop"
    seeded = True
    takes_guarded = True  # output gradients may be Guarded (see tape.backprop)

    def track(self, inputs, outputs, attrs):
        """Each tape tracks an output as eagerly: if the loop runs, where the
        body computes it from a tracked value, else where its initial value is
        (the tape may learn whether the loop runs: its condition on the
        initial values)."""
        op, n = attrs["op"], attrs["n_init"]
        body = op.body_region.block
        yields = body.last_op.operands
        ran = None
        for tape in TAPES:
            sure, maybe, flag = _tracking(tape, inputs[n:])
            init = [tape._maybe.get(id(x), True) if id(x) in tape._tracked else False for x in inputs[:n]]
            a = sure | {arg for arg, t in zip(body.args, init) if t is True}
            b = maybe | {arg for arg, t in zip(body.args, init) if t is not True and t is not False}
            for reached in (a, b):
                while True:
                    _flow(body, reached)
                    new = [arg for arg, y in zip(body.args, yields) if y in reached and arg not in reached]
                    if not new:
                        break
                    reached.update(new)
            for t in init:
                if t is not True and t is not False:
                    flag = either(flag, t)
            flags = []
            for t, y in zip(init, yields):
                looped = True if y in a else flag if y in b else False
                if looped is t:
                    flags.append(t)
                    continue
                if ran is None:
                    ran = self._runs(op, inputs, n)
                    stay = not ran if isinstance(ran, bool) else _not(ran)
                flags.append(either(both(ran, looped), both(stay, t)))
            _retrack(tape, outputs, flags)

    @staticmethod
    def _runs(op, inputs, n):
        """Does the loop run at all? Its condition on the initial values (a bool
        tensor, or a Python bool where that is known when tracing)."""
        from tfc.core.tape import tapes_suspended
        from tfc.ops.shapes import reshape

        runs = _runs_statically(op)
        if runs is not None:
            return runs
        with tapes_suspended():
            return reshape(_region_replay(STATE.builder, inputs[n:]).block(op.cond_region.block, inputs[:n]), ())

    def check_source(self, entry, k):
        op = entry.attrs["op"]
        _check_source(op, (op.body_region.block,), k, "the tfc.while_loop (or tensor loop)")

    def aliases(self, entry, k):
        """[(pred, tensor)]: output ``k`` is its initial value where the loop does
        not run (or always, where the body returns it unchanged), and a captured
        tensor the body returns unchanged where it runs (see tape._aliases)."""
        op, n = entry.attrs["op"], entry.attrs["n_init"]
        body = op.body_region.block
        y = body.last_op.operands[k]
        if y is body.args[k]:
            return [(True, entry.inputs[k])]
        if y in body.args or _nested_pass(body, y):  # another variable's value from before the trip
            raise _pass_error(op, "the tfc.while_loop (or tensor loop)")
        ran = self._runs(op, entry.inputs, n)
        found = [(not ran if isinstance(ran, bool) else _not(ran), entry.inputs[k])]
        t = _outer(entry.inputs[n:]).get(y)
        if t is not None:
            found.append((ran, t))
        return found

    def grad(self, entry, g):
        from tfc.dialects.tensor import spec_of
        from tfc.core.dtypes import int64
        from tfc.ops.control_flow import state_list_get, state_list_push, tensor_array_write
        from tfc.ops.creation import zeros
        from tfc.ops.shapes import gather

        builder = STATE.builder
        op, n = entry.attrs["op"], entry.attrs["n_init"]
        limit = None if op.max_iterations is None else op.max_iterations.value.data
        init, captured = entry.inputs[:n], entry.inputs[n:]
        specs = [spec_of(r.type) for r in op.results]
        gs = g if isinstance(g, list) else [g]
        # loop variables a gradient flows back through: those of the outputs that have
        # one, and those the body computes them from (the zeros given for the others
        # would make 0 * inf NaN)
        missing = entry.missing or [False] * n
        fs = {k for k in range(n) if specs[k].dtype.is_floating and not missing[k]}
        while True:
            more = {j for j in range(n) if j not in fs and specs[j].dtype.is_floating
                    and _reaches(op.body_region.block, op.body_region.block.args[j], sorted(fs))}
            if not more:
                break
            fs |= more
        fs = sorted(fs)
        body, cond = op.body_region.block, op.cond_region.block
        want = [k for k, x in enumerate(captured)
                if entry.needs_grad(n + k) and _floating(x) and _connected([body], x, fs)]
        out = [None] * len(entry.inputs)
        if not fs:
            return out
        grow = limit is None

        # 1. The loop again, keeping the state at the start of each iteration: in
        # a buffer (maximum_iterations, *shape), or where the trip count or a
        # dimension is known only at run time (a shape may change across
        # iterations, as eagerly), in a list (tfc.ops.control_flow).
        dynamic = [grow or None in s.shape for s in specs]

        def hist_cond(*a):
            return _region_replay(builder, captured).block(cond, a[:n])

        def hist_body(*a):
            state, i, bufs = a[:n], a[n], list(a[n + 1:])
            it = iter(bufs)
            kept = []
            for s, dyn in zip(state, dynamic):
                if dyn:
                    kept += state_list_push(next(it), next(it), s)
                else:
                    kept.append(tensor_array_write(next(it), i, s))
            new = _region_replay(builder, captured).block(body, state)
            return (*new, i + 1, *kept)

        start = convert_to_tensor(np.int32(0))
        bufs0 = []
        for s, dyn in zip(specs, dynamic):
            bufs0 += [zeros((0,), s.dtype), zeros((0, len(s.shape)), int64)] if dyn else \
                [zeros((limit,) + s.shape, s.dtype)]
        hist = builder.while_loop(hist_cond, hist_body, [*init, start, *bufs0], limit)
        count, bufs = hist[n], hist[n + 1:]

        def states(j):
            it = iter(bufs)
            return [state_list_get(next(it), next(it), j, hist[k]) if dyn else gather(next(it), j, axis=0)
                    for k, dyn in enumerate(dynamic)]

        # 2. Backwards over the stored states: each step is the VJP of one body iteration.
        sources_caps = [captured[k] for k in want]
        nf, nc = len(fs), len(want)
        # each loop variable's output gradient and whether it has one: True, False (an
        # output without one, zeros given) or a bool tensor (a later branch's, see Guarded)
        first = [(gs[k].g, gs[k].pred) if isinstance(gs[k], Guarded) else (gs[k], not missing[k]) for k in fs]
        # the captured values' accumulators start from their gradients so far
        # (-0.0 where none: an exact identity for the first addition)
        caps0 = [entry.prev[n + k] if entry.prev[n + k] is not None else negative_zeros(captured[k])
                 for k in want]

        def bw_cond(j, *_):
            from tfc.ops.math import greater_equal

            return greater_equal(j, 0)

        def step(j, outs, seeds):
            state = states(j)
            return _vjp(_region_replay(builder, captured), body, state, [state[k] for k in fs] + sources_caps,
                        fs, outs, [None] * nf + seeds)

        if (any(f is not True for _, f in first) or _has_regions(body) or _has_custom_gradient(body)
                or not all(_reaches(body, body.args[k], fs) for k in fs)):
            # Some gradient may not exist on some trip (an output without one, a
            # variable whose previous value the body stops, a branch in the body,
            # a custom gradient's None):
            # each is carried with a flag saying whether it does, as eagerly, since a
            # zero in its place would make 0 * inf NaN through the earlier trips.
            def bw_body(j, *acc):
                gr, fl, caps, capfl = acc[:nf], acc[nf:2 * nf], acc[2 * nf:2 * nf + nc], acc[2 * nf + nc:]
                res = step(j, [Guarded(a, f) for a, f in zip(gr, fl)],
                           [Guarded(c, f) for c, f in zip(caps, capfl)])
                grads, flags = [g for g, _ in res], [_bool(f) for _, f in res]
                return (j - 1, *grads[:nf], *flags[:nf], *grads[nf:], *flags[nf:])

            exists = entry.prev_exists or [True] * len(entry.inputs)
            res = builder.while_loop(bw_cond, bw_body, [count - 1, *[a for a, _ in first],
                                                        *[_bool(f) for _, f in first], *caps0,
                                                        *[_bool(exists[n + k]) for k in want]], limit)
            for k, gk, fk in zip(fs, res[1:1 + nf], res[1 + nf:1 + 2 * nf]):
                if entry.needs_grad(k):
                    out[k] = Guarded(gk, fk)
            for k, gk, fk in zip(want, res[1 + 2 * nf:1 + 2 * nf + nc], res[1 + 2 * nf + nc:]):
                out[n + k] = Guarded(gk, fk)
            entry.totals = [n + k for k in want]
            return out

        # Every gradient exists on every trip: the loop carries them alone.
        flowed = {}  # a captured value no gradient reaches in the body gets none, as eagerly

        def bw_body(j, *acc):
            res = step(j, list(acc[:nf]), list(acc[nf:]))
            for k, (_, f) in zip(want, res[nf:]):
                flowed[k] = f is not False
            return (j - 1, *[g for g, _ in res])

        res = builder.while_loop(bw_cond, bw_body, [count - 1, *[a for a, _ in first], *caps0], limit)
        from tfc.ops.math import greater

        ran = greater(count, 0)  # where not, the captured values get no gradient
        for k, gk in zip(fs, res[1:1 + nf]):
            if entry.needs_grad(k):
                out[k] = gk
        for k, gk in zip(want, res[1 + nf:]):
            if flowed[k]:
                out[n + k] = Guarded(gk, ran)
        entry.totals = [n + k for k in want if flowed[k]]
        return out


def _bool(f):
    """A bool scalar tensor for a flag: True, False or a bool tensor."""
    from tfc.ops.shapes import reshape

    return convert_to_tensor(np.bool_(f)) if isinstance(f, bool) else reshape(f, ())


def _has_custom_gradient(block) -> bool:
    """Does ``block`` call a custom gradient function (which may give an input None)?"""
    from tfc.dialects.tensor import RegistryOp

    return any(isinstance(op, RegistryOp) and op.OPDEF is CUSTOM_GRADIENT for op in block.walk())


def _has_regions(block) -> bool:
    """Does ``block`` hold a branch or loop (whose gradient may exist only on some paths)?"""
    from tfc.dialects.tensor import CondOp, WhileOp

    return any(isinstance(op, (CondOp, WhileOp)) for op in block.walk())


# -- compiled calls under an eager tape ------------------------------------------------


def watched(conc, tensors) -> bool:
    """Does an active tape want the gradient of this call of ``conc``?"""
    for tape in TAPES:
        tracked = tape._tracked
        if any(id(t) in tracked for t in tensors) or any(id(v) in tracked for v in conc.variables):
            return True
        if tape._watch_accessed_variables and any(v.trainable for v in conc.variables):
            return True
    return False


def call_recorded(conc, tensors):
    """Run ``conc`` on ``tensors`` and record the call as one tape entry."""
    from tfc.core.tape import record, tapes_suspended, watch_accessed

    inputs = [t if isinstance(t, Tensor) else convert_to_tensor(t) for t in tensors]
    values = [v._snapshot() for v in conc.variables]  # the values the call reads (it may assign); a GPU
    # variable's stays on the GPU
    with tapes_suspended():
        result = conc._call_leaves(inputs)
    for v in conc.variables:
        watch_accessed(v)
    outs = [x for x in nest.flatten(result) if isinstance(x, Tensor)]
    # Unwatched variables get no gradient, as eagerly (they stay in the backward
    # function's inputs, whose gradient is then not used).
    keep = [k for k, v in enumerate(conc.variables) if any(id(v) in tape._tracked for tape in TAPES)]
    if outs:
        record(CallGrad(conc, values, keep), inputs + [conc.variables[k] for k in keep],
               outs if len(outs) > 1 else outs[0], {})
    return result


def _fresh(t):
    """A tensor object of its own over ``t``'s value (a tape keys values by
    identity): a host array wrapped again, a GPU buffer shared."""
    if type(t) is GpuTensor:
        return t._rt.tensor(t._buf, t._spec)
    return wrap(t._value)


def _on_gpu(x) -> bool:
    return type(x) is GpuTensor or isinstance(x, GpuVariable)


class CallGrad:
    """Tape stand-in for one call of a ConcreteFunction. Its gradients are
    totals (``seeded``): the backward function adds its contributions onto
    each input's gradient so far, in eager's order (unless a tensor is passed
    twice: eager has one gradient for both, so they are added after)."""

    seeded = True

    def __init__(self, conc, values, keep):
        self.conc = conc
        self.values = values  # every variable's value at call time
        self.keep = keep  # the variables that are inputs of the tape entry
        self.name = f"call of {conc.name}"

    def grad(self, entry, g):
        from tfc.core.tape import READ_VARIABLE, record

        if STATE.builder is not None:
            raise NotImplementedError(
                f"the gradient of an eager call of {self.conc.name} taken while tracing another "
                "tfc.function is not implemented; call tape.gradient outside it")
        conc = self.conc
        gs = g if isinstance(g, list) else [g]
        n = len(conc.input_specs)
        bwd, fo, fi, fv, connected, flagged = backward_function(conc)
        snaps = [_fresh(value) for value in self.values]
        for j, k in enumerate(self.keep):  # outer tapes: a snapshot depends on its variable
            record(READ_VARIABLE, [entry.inputs[n + j]], snaps[k], {})
        # entry positions of the float inputs, then of the float variables the entry holds
        at = fi + [n + self.keep.index(k) if k in self.keep else None for k in fv]
        distinct = len({id(x) for x in entry.inputs}) == len(entry.inputs)
        seeds, has = [], []
        for p, x in zip(at, [entry.inputs[k] for k in fi] + [snaps[k] for k in fv]):
            prev = entry.prev[p] if distinct and p is not None else None
            seeds.append(prev if prev is not None else negative_zeros(x))
            if flagged:
                has.append(_bool(prev is not None))
        res = list(bwd._call_leaves(list(entry.inputs[:n]) + snaps + [gs[k] for k in fo] + seeds + has))
        if flagged:
            # whether each total exists, known now: eager's None where no gradient
            # flowed on the path the call took (not a zero that 0 * inf would make NaN)
            flows = [bool(f.numpy()) for f in res[len(connected):]]
            connected = [ok and f for ok, f in zip(connected, flows)]
        out = [None] * len(entry.inputs)
        for p, gp, ok in zip(at, res, connected):
            if p is not None and ok and entry.needs_grad(p):
                # a cuda call's gradient of a host input returns to the host, as eager's do
                out[p] = gp.cpu() if type(gp) is GpuTensor and not _on_gpu(entry.inputs[p]) else gp
        if distinct:
            entry.totals = [p for p, ok in zip(at, connected) if p is not None and ok]
        return out


def backward_function(conc):
    """(backward ConcreteFunction, float output indices, float input indices,
    float variable indices, connected, flagged) of ``conc``, built once. The
    backward function takes the inputs, the variables' values, the float
    outputs' gradients and the gradients so far of the float inputs then
    variables, and returns those gradients with the call's contributions added
    (in eager's order); ``connected`` says, per float input then variable,
    whether any result depends on it (the others get no gradient, as eagerly).
    ``flagged`` (a function with branches or loops, whose gradients may flow
    only on some paths): it also takes, per gradient so far, whether there is
    one (a bool scalar), and also returns, per gradient, whether it exists."""
    cached = getattr(conc, "_backward", None)
    if cached is not None:
        return cached
    from xdsl.dialects import func

    from tfc.core.dtypes import bool_
    from tfc.core.registry import Spec
    from tfc.dialects.tensor import spec_of
    from tfc.frontend.function import ConcreteFunction
    from tfc.frontend.tracing import FunctionBuilder, tracing_into

    # the IR as traced: its SSA values are those a custom gradient function closed over
    fop = next(op for op in conc.raw_module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == conc.name)
    block = fop.body.block
    out_specs = [spec_of(t) for t in fop.function_type.outputs.data]
    fo = [k for k, s in enumerate(out_specs) if s.dtype.is_floating]
    fi = [k for k, s in enumerate(conc.input_specs) if s.dtype.is_floating]
    fv = [k for k, v in enumerate(conc.variables) if v.dtype.is_floating]
    builder = FunctionBuilder(conc.name + "_grad")
    specs = []

    def arg(spec, name):
        specs.append(spec)
        return builder.add_input(spec.shape, spec.dtype, name)

    with tracing_into(builder):
        xs = [arg(s, f"x{k}") for k, s in enumerate(conc.input_specs)]
        vs = [arg(Spec(tuple(v.shape), v.dtype), v.name) for v in conc.variables]
        gs = [arg(out_specs[k], f"dy{k}") for k in fo]
        n = len(xs)
        slots = dict(zip(block.args[n:], vs))  # a variable's current value, as the replay goes

        def read(ref):
            return slots[ref]

        def assign(ref, value, nested):
            if nested:
                raise NotImplementedError(
                    f"the gradient of a call of {conc.name}, which assigns a variable inside tfc.cond / "
                    "tfc.while_loop, is not implemented; put the GradientTape inside the tfc.function")
            slots[ref] = value

        sources = [xs[k] for k in fi] + [vs[k] for k in fv]
        seeds = [arg(s, f"seed{k}") for k, s in enumerate([conc.input_specs[k] for k in fi]
                                                           + [Spec(tuple(conc.variables[k].shape),
                                                                   conc.variables[k].dtype) for k in fv])]
        # the forward block's argument of each source (a variable's: its reference)
        connected = [_reaches(block, block.args[k], fo) for k in fi + [n + k for k in fv]]
        flagged = _has_regions(block)
        if flagged:
            seeds = [Guarded(s, arg(Spec((), bool_), f"has{k}")) for k, s in enumerate(seeds)]
        res = _vjp(Replay(builder, {}, read, assign, grad_fns=conc.grad_fns), block, xs, sources,
                   fo, gs, seeds)
        outs = [g for g, _ in res] + ([_bool(f) for _, f in res] if flagged else [])
        # where the tape gave a source nothing (a custom gradient's None), none, as eagerly
        connected = [ok and f is not False for ok, (_, f) in zip(connected, res)]
    bwd = ConcreteFunction.from_trace(builder, specs, outs)
    bwd.target = conc.target  # the backward runs where the call ran: a cuda call's on the GPU
    conc._backward = (bwd, fo, fi, fv, connected, flagged)
    return conc._backward
