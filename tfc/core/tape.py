"""Tape-based reverse-mode automatic differentiation.

Every op call checks ``TAPES`` (one list lookup) and records nothing when no tape
is active. A tape records an op only when one of its inputs is tracked (watched,
or computed from a watched tensor), and only ops that have a gradient rule.
The rules are written with tfc ops, so the backward pass is itself recorded by
any outer tape: nesting tapes gives higher-order gradients.
"""
from __future__ import annotations

import contextlib
import functools
import inspect

from tfc.core import nest
from tfc.core.context import STATE, TAPES
from tfc.core.registry import OpDef
from tfc.core.device import CPU, GPU, PLACEMENT, placed
from tfc.core.tensor import GpuTensor, Tensor, convert_to_tensor, wrap
from tfc.core.variable import Variable


def _on_input_devices(e, in_grads):
    """Each wanted gradient of an op that involved the GPU on its input's
    device (a host input of a GPU op, in a device scope, gets a host gradient)."""
    out = list(in_grads)
    for k, (x, gx) in enumerate(zip(e.inputs, out)):
        if (gx is not None and e.needs[k] and not isinstance(gx, Guarded)
                and (x.device == GPU) != (type(gx) is GpuTensor)):
            out[k] = gx.gpu() if x.device == GPU else gx.cpu()
    return out


class Entry:
    """One recorded op application; gradient rules read its fields."""

    __slots__ = ("op", "inputs", "outputs", "attrs", "needs", "prev", "prev_exists", "totals", "missing")

    def __init__(self, op, inputs, outputs, attrs):
        self.op = op
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs
        self.needs = None  # per input: is its gradient wanted? (set by backprop)
        self.prev = None  # per input: its gradient so far (set by backprop)
        # per input: does that exist? True, False or a bool tensor (a Guarded one's; set by backprop)
        self.prev_exists = None
        self.totals = ()  # inputs whose gradient from the rule includes ``prev`` (set by the rule)
        self.missing = None  # per output: had it no gradient (zeros given instead)? (set by backprop)

    def needs_grad(self, i: int) -> bool:
        """Rules may skip computing the gradient of input ``i`` when this is False."""
        return self.needs is None or self.needs[i]


def _is_float(t) -> bool:
    return t.dtype.is_floating


class Guarded:
    """A gradient that exists only where ``pred`` (a bool scalar tensor) holds:
    what compiled control flow gives through a branch or loop trip that may not
    run. Eagerly nothing is recorded for a path not taken; a zero there would
    become NaN upstream (0 * inf), so the tape adds it with ``where`` instead,
    and the rules it flows through give guarded gradients too."""

    __slots__ = ("g", "pred")

    def __init__(self, g, pred):
        self.g = g
        self.pred = pred


def _where(pred, a, b):
    from tfc.ops.control_flow import guarded_select

    return guarded_select(pred, a, b)


def _settle(g):
    """A tensor for ``g``: a guarded gradient is zeros where it does not exist."""
    if not isinstance(g, Guarded):
        return g
    from tfc.ops.creation import zeros_like

    return _where(g.pred, g.g, zeros_like(g.g))


def _add(a, b):
    """``a + b`` where either may be guarded (the untaken path adds nothing)."""
    if isinstance(a, Guarded) and isinstance(b, Guarded):
        if a.pred is b.pred:
            return Guarded(a.g + b.g, a.pred)
        return Guarded(_where(a.pred, _where(b.pred, a.g + b.g, a.g), b.g), either(a.pred, b.pred))
    if isinstance(a, Guarded):
        return _where(a.pred, a.g + b, b)
    if isinstance(b, Guarded):
        return _where(b.pred, a + b.g, a)
    return a + b


def record(op, inputs, outputs, attrs) -> None:
    """Called by the registry after each op while a tape is active."""
    if op.grad is None:
        return
    outs = outputs if type(outputs) is list else [outputs]
    entry = None
    for tape in TAPES:
        tracked = tape._tracked
        if not any(id(t) in tracked for t in inputs):
            continue
        if entry is None:
            entry = Entry(op, list(inputs), outs, attrs)
        tape._entries.append(entry)
        flag = _maybe_flag(tape, inputs) if tape._maybe else None
        for o in outs:
            if _is_float(o):
                tracked[id(o)] = o
                if flag is not None:
                    tape._maybe[id(o)] = flag


def _maybe_flag(tape, inputs):
    """None if a surely tracked input reaches the op, else (all its tracked
    inputs tracked only on some run-time paths) whether any of them is."""
    flag = False
    for t in inputs:
        if id(t) in tape._tracked:
            f = tape._maybe.get(id(t))
            if f is None:
                return None
            flag = either(flag, f)
    return flag


def either(a, b):
    """a or b, for Python bools and bool scalar tensors."""
    if a is True or b is True:
        return True
    if a is False or a is b:
        return b
    if b is False:
        return a
    from tfc.ops.math import logical_or

    return logical_or(a, b)


def both(a, b):
    """a and b, for Python bools and bool scalar tensors."""
    if a is False or b is False:
        return False
    if a is True or a is b:
        return b
    if b is True:
        return a
    from tfc.ops.math import logical_and

    return logical_and(a, b)


def _identity_grad(entry, g):
    return [g]


# Reading a variable under a tape: an identity from the variable to a snapshot.
READ_VARIABLE = OpDef(
    "read_variable", kernel=lambda v: v, infer=lambda op, s: s, grad=_identity_grad,
    attrs={}, promote=(), quiet=False, stateful=True, scalar=None,
)


def watch_accessed(v) -> None:
    """A trainable variable was read: every tape watching accessed variables watches it."""
    if v.trainable:
        for tape in TAPES:
            if tape._watch_accessed_variables:
                tape._watch_variable(v)


def snapshot_variables(tensors):
    """Replace Variable inputs by snapshots of their values (recorded reads)."""
    if not any(isinstance(t, Variable) for t in tensors):
        return tensors
    out = []
    for t in tensors:
        if isinstance(t, Variable):
            watch_accessed(t)
            snap = t._snapshot()
            record(READ_VARIABLE, [t], snap, {})
            t = snap
        out.append(t)
    return out


class GradientTape:
    """Records operations for automatic differentiation, as ``tf.GradientTape``.

    Trainable variables read inside the ``with`` block are watched automatically
    (unless ``watch_accessed_variables=False``); other tensors are watched with
    ``watch``. A non-persistent tape computes one set of gradients, then frees
    its records.
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self._persistent = persistent
        self._watch_accessed_variables = watch_accessed_variables
        self._tracked: dict[int, Tensor] = {}
        self._entries: list[Entry] = []
        self._variables: dict[int, Variable] = {}
        self._maybe: dict[int, Tensor] = {}  # id(tracked tensor) -> bool tensor: is it tracked at run time
        self._used = False

    def __enter__(self):
        TAPES.append(self)
        return self

    def __exit__(self, *exc):
        self._pop()
        return False

    def _pop(self) -> int:
        for i, t in enumerate(TAPES):
            if t is self:
                del TAPES[i]
                return i
        return -1

    def _watch_variable(self, v: Variable) -> None:
        if id(v) not in self._variables:
            self._variables[id(v)] = v
        self._tracked[id(v)] = v

    def watch(self, tensor) -> None:
        """Track ``tensor`` (or a nested structure of them) for gradients."""
        for t in nest.flatten(tensor):
            if isinstance(t, Variable):
                self._watch_variable(t)
            elif isinstance(t, Tensor):
                self._tracked[id(t)] = t
            else:
                raise TypeError(f"watch() takes tensors or variables, got {type(t).__name__}")

    def watched_variables(self) -> tuple:
        return tuple(self._variables.values())

    @contextlib.contextmanager
    def stop_recording(self):
        """Ops run inside this block are not recorded on this tape."""
        i = self._pop()
        if i < 0:
            raise ValueError("stop_recording() is only valid while the tape is recording (inside its 'with' block)")
        try:
            yield
        finally:
            TAPES.insert(i, self)

    def reset(self) -> None:
        """Forget everything recorded so far."""
        self._tracked.clear()
        self._entries.clear()
        self._variables.clear()
        self._maybe.clear()

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none", seeds=None,
                 guarded=False):
        """d(sum of target) / d(sources), shaped like ``sources``.

        ``output_gradients`` weights each target (default ones). Sources that the
        target does not depend on give None, or zeros with
        ``unconnected_gradients="zero"``. ``seeds`` (internal: the gradient rules
        of compiled control flow) are gradients already accumulated for the
        flat sources, None for none: the result adds onto them in the order
        eager's tape would. ``guarded`` (internal too) returns a gradient that
        exists only on some run-time path as a ``Guarded``.
        """
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(f"unconnected_gradients must be 'none' or 'zero', got {unconnected_gradients!r}")
        if self._used and not self._persistent:
            raise RuntimeError(
                "a non-persistent GradientTape computes gradients once; "
                "use GradientTape(persistent=True) to call gradient() again"
            )
        flat_targets = [convert_to_tensor(t) for t in nest.flatten(target)]
        flat_sources = nest.flatten(sources)
        for s in flat_sources:
            if not isinstance(s, Tensor):
                raise TypeError(f"gradient() sources must be tensors or variables, got {type(s).__name__}")
        if output_gradients is not None:
            output_gradients = nest.flatten(output_gradients)
            if len(output_gradients) != len(flat_targets):
                raise ValueError(
                    f"output_gradients has {len(output_gradients)} entries for {len(flat_targets)} targets"
                )
        # Our own backward ops are not recorded here; outer tapes do record them.
        i = self._pop()
        try:
            aliases = _aliases(self._entries, flat_sources)
            extra = [v for found in aliases.values() for _, v in found]
            # a source the tape never tracked gets no gradient (as in eager TensorFlow),
            # even where it is an input of a recorded op
            raw = backprop(self._entries, flat_targets, flat_sources + extra, output_gradients,
                           tracked=self._tracked,
                           seeds=None if seeds is None else list(seeds) + [None] * len(extra))
            by_id = {}
            for s, g in zip(flat_sources + extra, raw):
                if id(s) not in self._tracked:  # reached from another source, still none
                    g = None
                # a source tracked only on some run-time paths (an output of compiled
                # control flow, see tfc.frontend.cfgrad): no gradient where it is not
                by_id[id(s)] = g if g is None or id(s) not in self._maybe else _guard(g, self._maybe[id(s)])
            grads = [_resolve(s, by_id, aliases) for s in flat_sources]
            if not guarded:
                grads = [_settle(g) for g in grads]
        finally:
            if i >= 0:
                TAPES.insert(i, self)
        self._used = True
        if not self._persistent:
            self._entries = []
            self._tracked = {}
            self._maybe = {}
        if unconnected_gradients == "zero":
            from tfc.ops.creation import zeros_like

            grads = [zeros_like(s) if g is None else g for g, s in zip(grads, flat_sources)]
        return nest.pack_sequence_as(sources, grads)


def _aliases(entries, sources) -> dict:
    """id(source) -> [(pred, tensor)] for the sources (and, in turn, those
    tensors) that are outputs of compiled control flow which, where ``pred``
    holds at run time, returns ``tensor`` unchanged (a branch passing a value
    through, a loop that runs zero times): eagerly the source then *is* that
    tensor, so its gradient is that tensor's, uses before the op included."""
    made = {}
    for e in entries:
        if getattr(e.op, "aliases", None) is not None:
            for k, o in enumerate(e.outputs):
                made.setdefault(id(o), (e, k))
    out, todo = {}, list(sources)
    while todo:
        s = todo.pop()
        hit = made.get(id(s))
        if hit is None or id(s) in out:
            continue
        found = out[id(s)] = hit[0].op.aliases(hit[0], hit[1])
        todo += [v for _, v in found]
    return out


def _resolve(s, by_id, aliases):
    """The gradient of source ``s``: its own, or on the run-time paths where it
    is an alias (see ``_aliases``), that tensor's. (A module function, not a
    closure over ``by_id``: a recursive closure is a reference cycle, which
    kept every gradient array alive until the next garbage collection.)"""
    g = by_id[id(s)]
    for pred, v in aliases.get(id(s), ()):
        g = _choose(pred, _resolve(v, by_id, aliases), g)
    return g


def _choose(pred, a, b):
    """The gradient ``a`` where ``pred`` holds, else ``b`` (None: none there)."""
    if pred is True or pred is False:
        return a if pred else b
    if a is None and b is None:
        return None
    from tfc.ops.math import logical_not

    npred = logical_not(pred)
    if a is None:
        return _guard(b, npred)
    if b is None:
        return _guard(a, pred)
    ga, pa = (a.g, a.pred) if isinstance(a, Guarded) else (a, True)
    gb, pb = (b.g, b.pred) if isinstance(b, Guarded) else (b, True)
    flows = either(both(pred, pa), both(npred, pb))
    g = _where(pred, ga, gb)
    return g if flows is True else Guarded(g, flows)


def backprop(entries, targets, sources, output_gradients=None, tracked=None, seeds=None) -> list:
    """Reverse-mode sweep over recorded ``entries`` from ``targets`` to
    ``sources`` (those in ``tracked``, when given; ``seeds``: their gradients
    so far, which contributions are added onto).

    The rule of an op marked ``seeded`` (compiled control flow, whose body adds
    many contributions to one captured value) finds the gradients accumulated
    so far for its inputs in ``entry.prev`` and may return, for the inputs it lists in
    ``entry.totals``, the new totals: the additions then happen in eager's
    order. A rule may return a ``Guarded`` gradient; the gradients of an op
    whose output gradient is guarded are guarded too (see ``Guarded``), and so
    are the gradients returned: ``GradientTape.gradient`` settles them."""
    from tfc.ops.creation import ones_like, zeros_like

    # Only ops on a path from a (tracked) source matter.
    reach = {id(s) for s in sources if tracked is None or id(s) in tracked}
    useful = []
    for e in entries:
        check = getattr(e.op, "check_source", None)  # compiled control flow: see cfgrad
        if check is not None:
            for k, o in enumerate(e.outputs):
                if id(o) in reach:
                    check(e, k)
        if any(id(t) in reach for t in e.inputs):
            useful.append(e)
            for o in e.outputs:
                reach.add(id(o))
    grads: dict[int, Tensor] = {}

    def accumulate(t, g):
        k = id(t)
        prev = grads.get(k)
        grads[k] = g if prev is None else _add(prev, g)

    for s, g in zip(sources, seeds or ()):
        if g is not None:
            grads[id(s)] = g
    for k, t in enumerate(targets):
        if id(t) not in reach:
            continue
        g = output_gradients[k] if output_gradients is not None else None
        accumulate(t, ones_like(t) if g is None else g if isinstance(g, Guarded) else convert_to_tensor(g, t.dtype))
    for e in reversed(useful):
        out_grads = [grads.get(id(o)) for o in e.outputs]
        if all(g is None for g in out_grads):
            continue
        # guarded output gradients (all by one predicate): the rule runs on
        # their values and its gradients are guarded by that predicate
        preds = {id(g.pred): g.pred for g in out_grads if isinstance(g, Guarded)}
        guard = None
        if len(preds) == 1 and all(g is None or isinstance(g, Guarded) for g in out_grads):
            guard = next(iter(preds.values()))
            out_grads = [None if g is None else g.g for g in out_grads]
        elif preds and not getattr(e.op, "takes_guarded", False):
            # (compiled control flow takes them as they are: a zero where an
            # output has no gradient would make 0 * inf NaN through its regions)
            out_grads = [_settle(g) for g in out_grads]
        if len(e.outputs) == 1:
            g = out_grads[0]
        else:
            e.missing = [og is None for og in out_grads]
            g = [zeros_like(o) if og is None else og for o, og in zip(e.outputs, out_grads)]
        e.needs = [id(x) in reach and _is_float(x) for x in e.inputs]
        seeded = getattr(e.op, "seeded", False)
        if seeded:
            prevs = [grads.get(id(x)) for x in e.inputs]
            e.prev = [_seed(p) for p in prevs]
            e.prev_exists = [p.pred if isinstance(p, Guarded) else p is not None for p in prevs]
            e.totals = ()  # the rule says which (a persistent tape runs it again)
        # The rule runs where the op ran (its constants are made there); each
        # gradient it gives goes to its input's device
        if PLACEMENT.gpu is None and any(type(o) is GpuTensor for o in e.outputs):
            with placed(GPU):
                in_grads = _on_input_devices(e, e.op.grad(e, g))
        elif PLACEMENT.name is None and any(type(x) is GpuTensor for x in e.inputs):
            with placed(CPU):  # (it ran in a cpu scope)
                in_grads = _on_input_devices(e, e.op.grad(e, g))
        else:
            in_grads = e.op.grad(e, g)
        if len(in_grads) != len(e.inputs):
            raise AssertionError(f"gradient rule of {e.op.name} returned {len(in_grads)} gradients for {len(e.inputs)} inputs")
        totals = e.totals if seeded else ()
        for k in totals:  # totals first: an input listed twice adds its other gradient onto its total
            if in_grads[k] is not None and e.needs[k]:
                grads[id(e.inputs[k])] = _total(prevs[k], e.prev[k], in_grads[k], guard)
        for k, (x, gx, needed) in enumerate(zip(e.inputs, in_grads, e.needs)):
            if gx is not None and needed and k not in totals:
                accumulate(x, gx if guard is None else _guard(gx, guard))
    return [grads.get(id(s)) for s in sources]


def _seed(prev):
    """What a seeded rule adds onto: a guarded gradient so far is -0.0 where
    it does not exist (an exact identity for the first addition)."""
    if not isinstance(prev, Guarded):
        return prev
    return _where(prev.pred, prev.g, negative_zeros(prev.g))


def _total(prev, seed, total, guard):
    """The gradient of an input once a seeded rule returned ``total`` (its
    contributions added onto ``seed``, the form of ``prev``; guarded where the
    contributions may not exist), ``guard``: the rule's output gradient's."""
    q = total.pred if isinstance(total, Guarded) else None
    t = total.g if isinstance(total, Guarded) else total
    if guard is not None:  # no contribution at all unless guard
        t = t if seed is None else _where(guard, t, seed)
        q = guard if q is None else both(guard, q)
    if prev is None:
        return t if q is None else Guarded(t, q)
    if not isinstance(prev, Guarded) or q is None:
        return t
    return Guarded(t, either(prev.pred, q))


def negative_zeros(t):
    """-0.0 everywhere: adding onto it leaves any value as it is, -0.0 included."""
    from tfc.ops.creation import zeros_like

    return -zeros_like(t)


def _guard(g, pred):
    return Guarded(g.g, both(pred, g.pred)) if isinstance(g, Guarded) else Guarded(g, pred)


# -- functional forms -----------------------------------------------------------

def _param_indices(f, params, nargs: int) -> list[int]:
    if params is None:
        return list(range(nargs))
    names = list(inspect.signature(f).parameters)
    out = []
    for p in params:
        if isinstance(p, int):
            out.append(p)
        elif p in names:
            out.append(names.index(p))
        else:
            raise ValueError(f"params: {f.__name__} has no parameter {p!r}")
    return out


def value_and_gradients_function(f, params=None):
    """Returns ``g(*args) -> (f(*args), [df/darg for each arg in params])``."""

    @functools.wraps(f)
    def value_and_grads(*args, **kwargs):
        idx = _param_indices(f, params, len(args))
        args = list(args)
        for i in idx:
            args[i] = convert_to_tensor(args[i])
        with GradientTape() as tape:
            for i in idx:
                tape.watch(args[i])
            value = f(*args, **kwargs)
        grads = tape.gradient(value, [args[i] for i in idx])
        return value, grads

    return value_and_grads


def gradients_function(f, params=None):
    """Returns ``g(*args) -> [df/darg ...]``; apply it to itself for higher derivatives."""
    vg = value_and_gradients_function(f, params)

    @functools.wraps(f)
    def grads(*args, **kwargs):
        return vg(*args, **kwargs)[1]

    return grads


def implicit_value_and_gradients(f):
    """Returns ``g(*args) -> (f(*args), [(gradient, variable), ...])`` for the
    trainable variables ``f`` reads."""

    @functools.wraps(f)
    def value_and_grads(*args, **kwargs):
        with GradientTape() as tape:
            value = f(*args, **kwargs)
        variables = tape.watched_variables()
        if not variables:
            raise ValueError(
                f"no trainable variable was read while computing {getattr(f, '__name__', 'the function')}; "
                "implicit gradients are taken with respect to the variables a function uses"
            )
        grads = tape.gradient(value, list(variables))
        return value, list(zip(grads, variables))

    return value_and_grads


def implicit_gradients(f):
    """Returns ``g(*args) -> [(gradient, variable), ...]``."""
    vg = implicit_value_and_gradients(f)

    @functools.wraps(f)
    def grads(*args, **kwargs):
        return vg(*args, **kwargs)[1]

    return grads


def stop_gradient(x) -> Tensor:
    """``x``, cut from the tape: gradients do not flow through it."""
    from tfc.ops.control_flow import stop_gradient as op

    return op(x)


@contextlib.contextmanager
def tapes_suspended():
    """No tape records what runs inside (the tapes are restored after)."""
    saved = TAPES[:]
    TAPES.clear()
    try:
        yield
    finally:
        TAPES.extend(saved)


class _CustomGradientOp:
    """Stands in for an OpDef on the tape: its rule is the user's grad_fn."""

    name = "custom_gradient"

    def __init__(self, fn_name, grad_fn, n_inputs, variables):
        self.fn_name = fn_name
        self.grad_fn = grad_fn
        self.n_inputs = n_inputs
        self.variables = variables

    def grad(self, entry, g):
        if self.variables:
            result = self.grad_fn(*([g] if not isinstance(g, list) else g), variables=list(self.variables))
            input_grads, var_grads = result
        else:
            input_grads = self.grad_fn(*([g] if not isinstance(g, list) else g))
            var_grads = []
        input_grads = list(input_grads) if isinstance(input_grads, (list, tuple)) else [input_grads]
        if len(input_grads) != self.n_inputs:
            raise ValueError(
                f"the gradient function of {self.fn_name} returned {len(input_grads)} gradients "
                f"for {self.n_inputs} inputs"
            )
        return [None if g is None else convert_to_tensor(g) for g in input_grads] + list(var_grads)


def custom_gradient(f):
    """Decorator: ``f(*x)`` returns ``(y, grad_fn)``; ``grad_fn(dy)`` gives dx.

    If ``f`` reads trainable variables, ``grad_fn`` must accept ``variables=`` and
    return ``(input_grads, variable_grads)``, as in TensorFlow.
    """

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        inputs = [convert_to_tensor(a) for a in args]
        builder = STATE.builder
        if not TAPES and builder is None:
            y, _ = f(*inputs, **kwargs)
            return y
        watcher = GradientTape()
        with tapes_suspended():
            with watcher:
                y, grad_fn = f(*inputs, **kwargs)
        variables = watcher.watched_variables()
        for v in variables:  # read while the tapes were suspended: they watch it now, as TensorFlow's
            watch_accessed(v)
        if variables and "variables" not in inspect.signature(grad_fn).parameters:
            raise TypeError(
                f"{f.__name__} reads variables {[v.name for v in variables]}, so its gradient "
                "function must accept a 'variables' keyword argument"
            )
        flat_y = [convert_to_tensor(t) for t in nest.flatten(y)]
        op = _CustomGradientOp(f.__name__, grad_fn, len(inputs), variables)
        if builder is not None:
            # traced: a tfc.custom_gradient op marks the call in the IR, so that
            # replaying it (compiled control flow, calls under a tape) records ``op``
            outs = builder.custom_gradient(op, inputs, flat_y)
        else:
            from tfc.ops.math import identity

            with tapes_suspended():
                outs = [identity(t) for t in flat_y]
        record(op, inputs + list(variables), outs if len(outs) > 1 else outs[0], {})
        return nest.pack_sequence_as(y, outs)

    return wrapped
