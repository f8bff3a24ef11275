"""Memory planning (L2): liveness of every arena buffer and one arena with
planned offsets, greedy by size (largest first, each at the lowest aligned
offset that overlaps no placed buffer live at the same time).

A buffer is live from the first definition of a value that may reference it to
the last use of any such value (tfc-bufferize's references: views made by
library kernels, branches of tfc.cond, loop variables). Program points are the
preorder numbers of ops; a use inside (or by) a region op lasts until the end
of that op, so values used in a loop stay live through the whole loop.

The pass annotates the function with ``tfc.offsets = array<i64: ...>`` (one per
buffer id, -1 for fresh buffers) and ``tfc.arena_size``; ``plan(...)`` returns
a ``MemoryPlan`` (``ConcreteFunction.memory_plan``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, i64
from xdsl.passes import ModulePass

from tfc.dialects.tensor import loc_str, spec_of
from tfc.passes.bufferize import Bufferization, functions
from tfc.passes.pipeline import require_tensor_ir

ALIGN = 64  # bytes: a cache line, and enough for any vector or GPU access


@dataclass
class BufferPlan:
    id: int
    kind: str            # "arena" or "fresh"
    offset: int | None   # in the arena; None for fresh
    nbytes: int
    shape: tuple
    dtype: str
    live: tuple          # (first, last) program point
    op: str              # the op that first writes it, and where
    inplace: int = 0     # values that reuse it in place
    donor: int | None = None  # fresh, unless it may take over this (variable) argument's storage

    def __str__(self):
        where = f"@{self.offset}" if self.kind == "arena" else "fresh"
        if self.donor is not None:
            where += f" (or argument {self.donor}'s storage)"
        ip = f" (+{self.inplace} in place)" if self.inplace else ""
        return f"buf{self.id}: {self.dtype}{list(self.shape)} {self.nbytes} B {where} live {self.live}{ip} <- {self.op}"


@dataclass
class MemoryPlan:
    """Each buffer with its offset and size; ``arena_size`` (the allocation),
    ``peak`` (the most bytes live at once: a lower bound for any plan) and the
    bytes of fresh buffers (results and the like, allocated when computed)."""

    buffers: list = field(default_factory=list)
    arena_size: int = 0
    peak: int = 0
    scratch: int = 0  # per-worker chunk scratch of the backend (set by the backend)

    @property
    def fresh_bytes(self) -> int:
        """Bytes allocated per call, counting none for buffers that take over a variable's storage."""
        return sum(b.nbytes for b in self.buffers if b.kind == "fresh" and b.donor is None)

    def __str__(self):
        lines = [f"arena {self.arena_size} B, peak {self.peak} B, fresh {self.fresh_bytes} B, "
                 f"scratch {self.scratch} B per worker"]
        lines += [f"  {b}" for b in self.buffers]
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"arena_size": self.arena_size, "peak": self.peak, "scratch": self.scratch,
                "buffers": [b.__dict__ | {"live": list(b.live), "shape": list(b.shape)} for b in self.buffers]}

    @classmethod
    def from_json(cls, d) -> "MemoryPlan":
        bufs = [BufferPlan(**(b | {"live": tuple(b["live"]), "shape": tuple(b["shape"])})) for b in d["buffers"]]
        return cls(bufs, d["arena_size"], d["peak"], d.get("scratch", 0))


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def place(sizes: list[int], ranges: list[tuple]) -> tuple[list[int], int]:
    """Greedy by size: offsets for buffers of ``sizes`` live over ``ranges``
    (inclusive); returns (offsets, arena size)."""
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i], ranges[i][0], i))
    placed = []  # (offset, end, first, last)
    offsets = [0] * len(sizes)
    total = 0
    for i in order:
        lo, hi = ranges[i]
        size = _align(max(sizes[i], 1))
        busy = sorted((o, e) for o, e, a, b in placed if not (b < lo or hi < a))
        off = 0
        for o, e in busy:
            if off + size <= o:
                break
            off = max(off, e)
        offsets[i] = off
        placed.append((off, off + size, lo, hi))
        total = max(total, off + size)
    return offsets, total


def peak_bytes(sizes, ranges) -> int:
    events = []
    for s, (lo, hi) in zip(sizes, ranges):
        events.append((lo, 0, _align(max(s, 1))))
        events.append((hi + 1, -1, -_align(max(s, 1))))
    cur = best = 0
    for _, _, d in sorted(events):
        cur += d
        best = max(best, cur)
    return best


def plan(bz: Bufferization) -> MemoryPlan:
    arena = [b for b in bz.buffers if not b.fresh]
    ranges = [bz.live_range(b) for b in arena]
    offsets, size = place([b.nbytes for b in arena], ranges)
    off = {b.id: o for b, o in zip(arena, offsets)}
    rng = {b.id: r for b, r in zip(arena, ranges)}
    out = []
    for b in bz.buffers:
        s = spec_of(b.type)
        owner = b.value.owner
        out.append(BufferPlan(b.id, "fresh" if b.fresh else "arena", off.get(b.id), b.nbytes, tuple(s.shape),
                              s.dtype.name, rng.get(b.id) or bz.live_range(b), f"{owner.name} at {loc_str(owner)}",
                              len(b.inplace_of), b.donor))
    return MemoryPlan(out, size, peak_bytes([b.nbytes for b in arena], ranges))


@dataclass(frozen=True)
class PlanMemoryPass(ModulePass):
    """Liveness and one arena with offsets (greedy by size); annotations."""

    name = "tfc-plan-memory"

    def apply(self, ctx, op) -> None:
        require_tensor_ir(self.name, op)
        for f in functions(op):
            bz = Bufferization(f)
            bz.annotate()
            mp = plan(bz)
            f.attributes["tfc.offsets"] = DenseArrayBase.from_list(
                i64, [-1 if b.offset is None else b.offset for b in mp.buffers])
            f.attributes["tfc.arena_size"] = IntegerAttr(mp.arena_size, i64)
