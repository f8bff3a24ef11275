"""Gradient averaging across ranks, overlapped with the backward pass.

``DistributedGradientTape(tape).gradient(loss, variables)`` gives each
variable's gradient averaged over the ranks. As PyTorch's DDP does, the
gradients are fused into buckets (``bucket_bytes``, 25 MiB by default, the
first at most 1 MiB, one dtype each), in the order the backward pass is expected to produce them (the
reverse of the variables' first use on the tape); a bucket's non-blocking sum
all-reduce (MPI ``Iallreduce``) starts as soon as its last gradient is final,
while the tape goes on computing the gradients of earlier layers, and the
waiting happens once, at the end.

How a gradient is known to be final: before the first op that reads a
variable, the tape's entries (a private copy; the tape is not changed) get a
hook, an identity from the variable to an alias of it that all of the
variable's uses now read. The reverse sweep reaches the hook only after every
use, with the variable's whole gradient: the hook hands it to its bucket
(Horovod and DDP hook the same point: the gradient accumulator).

Buckets start in plan order on every rank (MPI needs collectives in the same
order everywhere): a bucket filled early waits for the ones before it. A
variable without a gradient on a rank adds zeros, and a presence count
travels in the bucket, so a variable no rank reached gets None, as in one
process. Each step first checks that all ranks ask for the same sources and
plan the same order; where their orders differ (a variable one rank's tape did
not use), every rank falls back to the reverse of the sources' order.

Averaging is the sum divided by the number of ranks, in the gradient's dtype.
Under ``tfc.function`` tracing the same hooks emit an ``all_reduce(g, "mean")``
op per gradient instead, each at the point of the backward pass where its
gradient is final: the compiled step holds its collectives as early as their
inputs allow (docs/distributed.md).
"""
from __future__ import annotations

import numpy as np

from tfc.core import nest
from tfc.core.context import STATE
from tfc.core.registry import OpDef
from tfc.core.tape import Entry
from tfc.core.tensor import GpuTensor, Tensor, wrap
from tfc.core.variable import Variable
from tfc.core.world import world

DEFAULT_BUCKET_BYTES = 25 * 2**20  # DDP's default bucket_cap_mb
# DDP's first bucket: small, so the first transfer starts early in the backward pass
FIRST_BUCKET_BYTES = 2**20


def _no_gpu(g) -> None:
    if type(g) is GpuTensor:
        raise NotImplementedError("DistributedGradientTape: averaging GPU gradients needs NCCL, which this build "
                                  "of tfc does not have (docs/distributed.md)")


class _Bucket:
    __slots__ = ("dtype", "members", "offsets", "sizes", "total", "send", "recv", "waiting", "request")

    def __init__(self, dtype):
        self.dtype = dtype
        self.members, self.offsets, self.sizes = [], [], []
        self.total = 0  # elements of the values (the presence flags follow them)
        self.send = self.recv = self.request = None
        self.waiting = 0

    @property
    def nbytes(self) -> int:
        return (self.total + len(self.members)) * self.dtype.itemsize

    def add(self, i: int, size: int) -> int:
        """Member ``i`` of ``size`` elements; its slot."""
        self.members.append(i)
        self.offsets.append(self.total)
        self.sizes.append(size)
        self.total += size
        return len(self.members) - 1


class Reducer:
    """One step's buckets: ``ready(i, g)`` as each gradient of the flat
    sources becomes final, then ``finish(grads)`` for the averaged ones."""

    def __init__(self, sources, order, bucket_bytes):
        self.world = world()
        self.shapes = [tuple(s.shape) for s in sources]
        order = self._common_order(sources, list(order))
        self.buckets: list[_Bucket] = []
        self.where = {}  # source index -> (bucket, slot)
        open_by_dtype = {}
        for i in order:
            s = sources[i]
            dtype = np.dtype(s.dtype.as_numpy_dtype)
            b = open_by_dtype.get(dtype)
            size = int(np.prod(s.shape, dtype=np.int64))
            cap = min(bucket_bytes, FIRST_BUCKET_BYTES) if b is not None and b is self.buckets[0] else bucket_bytes
            if b is None or (b.members and b.nbytes + (size + 1) * dtype.itemsize > cap):
                b = open_by_dtype[dtype] = _Bucket(dtype)
                self.buckets.append(b)
            self.where[i] = (b, b.add(i, size))
        for b in self.buckets:
            b.send = np.zeros(b.total + len(b.members), b.dtype)  # the values, then a presence flag per member
            b.recv = np.empty_like(b.send)
            b.waiting = len(b.members)
        self.started = 0  # buckets started so far, in plan order
        self.delivered = set()

    def _common_order(self, sources, order) -> list:
        """``order`` where every rank has the same, else the same fallback on
        every rank (the reverse of the sources' order: a model's layers are
        listed forward). Orders differ where the ranks' tapes do (a variable
        one rank did not use): buckets planned from them would sum one
        variable's gradient with another's. DistributedError where the sources
        themselves differ."""
        what = "DistributedGradientTape.gradient"
        specs = ",".join(f"{np.dtype(s.dtype.as_numpy_dtype)}{list(s.shape)}" for s in sources)
        signature = f"{what} sources {specs} order "
        if self.world.agree(what, signature + str(order)):  # (one check in the usual case)
            return order
        # every rank (a peer in another collective's check too) now gathers the signatures
        seen = self.world.signatures(signature + str(order))
        if any(not s.startswith(signature) for s in seen):
            raise self.world.mismatch(what, seen)
        return sorted(order, reverse=True)

    def ready(self, i: int, g) -> None:
        """The whole gradient of source ``i``: into its bucket; start the
        buckets that are complete, in order."""
        if i in self.delivered or i not in self.where:
            return
        _no_gpu(g)
        self.delivered.add(i)
        b, slot = self.where[i]
        off, size = b.offsets[slot], b.sizes[slot]
        b.send[off:off + size] = np.asarray(g._value, b.dtype).reshape(-1)
        b.send[b.total + slot] = 1
        b.waiting -= 1
        self._start_complete()
        self.world.test(b.request for b in self.buckets[:self.started])  # progress the ones in flight

    def _start_complete(self, every=False) -> None:
        while self.started < len(self.buckets) and (every or self.buckets[self.started].waiting == 0):
            b = self.buckets[self.started]
            b.request = self.world.iallreduce_sum(b.send, b.recv)
            self.started += 1

    def finish(self, grads) -> list:
        """Deliver the gradients no hook delivered (sources that are not
        variables; gradients through compiled control flow), start what is
        left, wait, and return the averaged gradients (None where no rank had one)."""
        for i, g in enumerate(grads):
            if g is not None and i in self.where and i not in self.delivered:
                self.ready(i, g)
        self._start_complete(every=True)
        self.world.wait_all([b.request for b in self.buckets if b.request is not None],
                            "DistributedGradientTape.gradient")
        out = list(grads)
        size = self.world.size
        for b in self.buckets:
            for slot, i in enumerate(b.members):
                if b.recv[b.total + slot] == 0:
                    out[i] = None
                    continue
                off = b.offsets[slot]
                value = b.recv[off:off + b.sizes[slot]].reshape(self.shapes[i])
                if size > 1:
                    value = value / b.dtype.type(size)
                out[i] = wrap(np.array(value, copy=True) if size == 1 else value)
        return out


class _Hook:
    """The identity a source's uses are routed through: its gradient rule
    sees the source's whole gradient."""

    def __init__(self, reducer):
        self.reducer = reducer
        self.op = OpDef("distributed_gradient_hook", kernel=lambda x: x, infer=lambda op, s: s, grad=self.rule,
                        attrs={"index": "int"}, promote=(), quiet=False, stateful=True, scalar=None)

    def rule(self, entry, g):
        if isinstance(g, Tensor):  # (a guarded gradient is settled by the tape, then delivered by finish)
            self.reducer.ready(entry.attrs["index"], g)
        return [g]


class _TracedReducer:
    """Under tracing: each gradient's ``all_reduce(g, "mean")`` op is emitted
    the moment the sweep finishes the gradient (so the compiled step holds it
    right after its input, before the rest of the backward pass), the others
    at the end, in source order (the same on every rank)."""

    def __init__(self):
        self.reduced = {}

    def ready(self, i: int, g) -> None:
        from tfc.ops.collective import all_reduce

        if i not in self.reduced:
            _no_gpu(g)
            self.reduced[i] = all_reduce(g, "mean")

    def finish(self, grads) -> list:
        for i, g in enumerate(grads):
            if g is not None:
                self.ready(i, g)
        return [None if g is None else self.reduced[i] for i, g in enumerate(grads)]


def _hooked_entries(entries, sources, reducer):
    """A copy of ``entries`` in which each variable among ``sources`` is read
    through a hook placed before its first use; also the variables' order of
    first use."""
    wanted = {}
    for i, s in enumerate(sources):
        if isinstance(s, Variable) and s.dtype.is_floating:
            wanted.setdefault(id(s), i)
    hook = _Hook(reducer)
    alias = {}
    out = []
    for e in entries:
        if not any(id(x) in wanted for x in e.inputs):
            out.append(e)
            continue
        inputs = []
        for x in e.inputs:
            k = id(x)
            if k in wanted:
                if k not in alias:  # the first use: the hook goes before it
                    # (tracing: a read of the variable, as the rules' own reads are)
                    alias[k] = x._snapshot() if STATE.builder is None else STATE.builder.read_variable(x)
                    out.append(Entry(hook.op, [x], [alias[k]], {"index": wanted[k]}))
                x = alias[k]
            inputs.append(x)
        out.append(Entry(e.op, inputs, e.outputs, e.attrs))
    return out


def first_use_order(entries, sources) -> list:
    """Source indices in the order a backward pass finishes them: the reverse
    of their first use; unused sources last, in their given order."""
    position = {}
    for n, e in enumerate(entries):
        for x in e.inputs:
            position.setdefault(id(x), n)
    used = sorted((i for i, s in enumerate(sources) if id(s) in position), key=lambda i: -position[id(sources[i])])
    return used + [i for i, s in enumerate(sources) if id(s) not in position]


def average_gradients(grads, bucket_bytes: int = DEFAULT_BUCKET_BYTES, variables=None) -> list:
    """Average already computed gradients over the ranks (bucketed, without
    overlap). With ``variables`` (one per gradient: their shapes and dtypes),
    a gradient that is None on some ranks counts as zeros there, as the tape's
    do, and stays None only where every rank has None; without them the ranks
    must have None at the same places (else DistributedError). Under tracing:
    one ``all_reduce(g, "mean")`` op per gradient that is not None (every
    rank's compiled step must then make the same ones)."""
    grads = list(grads)
    if STATE.builder is not None:
        return _TracedReducer().finish(grads)
    if variables is not None:
        variables = list(variables)
        if len(variables) != len(grads):
            raise ValueError(f"average_gradients: {len(grads)} gradients for {len(variables)} variables")
        floating = [i for i, v in enumerate(variables) if v.dtype.is_floating]
        return Reducer(variables, floating, bucket_bytes).finish(grads)
    sources = [g for g in grads if g is not None]
    index = [i for i, g in enumerate(grads) if g is not None]
    reducer = Reducer(sources, range(len(sources)), bucket_bytes)
    averaged = reducer.finish(sources)
    out = [None] * len(grads)
    for i, g in zip(index, averaged):
        out[i] = g
    return out


class DistributedGradientTape:
    """Wraps a ``tfc.GradientTape`` (Horovod's ``DistributedGradientTape``):
    ``gradient`` returns the gradients averaged over all ranks, all-reduced in
    buckets of ``bucket_bytes`` while the backward pass runs. Everything else
    is the wrapped tape's. Every rank must ask for the gradients of the same
    sources (same shapes and dtypes), else DistributedError on every rank."""

    def __init__(self, tape, bucket_bytes: int = DEFAULT_BUCKET_BYTES):
        if isinstance(tape, DistributedGradientTape):
            tape = tape._tape
        if not hasattr(tape, "_entries"):
            raise TypeError(f"DistributedGradientTape wraps a tfc.GradientTape, got {type(tape).__name__}")
        if not (isinstance(bucket_bytes, int) and bucket_bytes > 0):
            raise ValueError(f"bucket_bytes must be a positive int, got {bucket_bytes!r}")
        self._tape = tape
        self.bucket_bytes = bucket_bytes

    def __getattr__(self, name):
        return getattr(self._tape, name)

    def __enter__(self):
        self._tape.__enter__()
        return self

    def __exit__(self, *exc):
        return self._tape.__exit__(*exc)

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(f"unconnected_gradients must be 'none' or 'zero', got {unconnected_gradients!r}")
        tape = self._tape
        flat = nest.flatten(sources)
        for s in flat:
            if not isinstance(s, Tensor):
                raise TypeError(f"gradient() sources must be tensors or variables, got {type(s).__name__}")
            _no_gpu(s)
        saved = tape._entries
        order = [i for i in first_use_order(saved, flat) if flat[i].dtype.is_floating]
        # tracing: the averaging is ops of the compiled step
        reducer = Reducer(flat, order, self.bucket_bytes) if STATE.builder is None else _TracedReducer()
        hooked = _hooked_entries(saved, flat, reducer)
        tape._entries = hooked
        try:
            grads = nest.flatten(tape.gradient(target, flat, output_gradients, "none"))
        finally:
            if tape._entries is hooked:  # a persistent tape (or an error): its own entries back
                tape._entries = saved
        grads = reducer.finish(grads)
        if unconnected_gradients == "zero":
            from tfc.ops.creation import zeros_like

            grads = [zeros_like(s) if g is None else g for g, s in zip(grads, flat)]
        return nest.pack_sequence_as(sources, grads)
