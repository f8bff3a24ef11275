"""The GPU sort (``argsort``, the one sorting primitive: ``sort`` and
``top_k`` gather with its indices), written once as L4 (``gpu.func``) for
the ``loops.library "argsort"`` call that tfc-lower-gpu launches
(tfc/ops/sorting.py gives the semantics).

A stable merge sort of each line along the axis, as passes of one thread per
element: pass ``w`` (1, 2, 4, ... below the line's length ``n``) merges each
pair of neighbouring sorted runs of ``w`` indices. An element's place in the
merged run is its place in its own run plus the count of its partner run's
elements that go before it, found by a binary search of ``bit_length(w)``
steps over the partner (sorted) run: for an element of the left run, the
partner's elements strictly before it; for one of the right run, the
partner's elements not strictly after it, so equal values keep their index
order. Every pass writes each index once (no atomics, no shared memory, no
barrier: deterministic), O(N log n) work a pass, ``ceil(log2 n)`` passes
ping-ponging between the result and one scratch buffer (a ``loops.alloc``)
so that the last writes the result; the first pass reads the identity
permutation instead of a buffer. Keys are read through the indices (``x`` at
any strides, its view's).

"Strictly before" is numpy's order: ascending, NaN above every number (two
NaNs, and -0.0 and 0.0, are equal); descending is the same order turned
round, ties still in index order (tfc's stable descending argsort). float16
keys compare in float32 (exact), int8 in int32. The result is bit-identical
to the numpy kernel's: a permutation fixed by the order alone.

``LIBRARY[name](namer, op)`` returns the launches, as gpu_nn_library's.
"""
from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, IntegerType, MemRefType, f32, i1, i32, i64

from tfc.dialects import loops as L
from tfc.dialects.gpu import PtrType
from tfc.passes import gpu_builder as B

BLOCK = B.BLOCK


def _precedes(kb, a, b, descending: bool, unsigned: bool):
    """i1: key ``a`` goes strictly before key ``b`` in the sort's order."""
    if descending:
        a, b = b, a
    if isinstance(a.type, IntegerType):
        return kb.cmpi("ult" if unsigned else "slt", a, b)
    less = kb.emit(arith.CmpfOp(a, b, "olt"))
    b_nan = kb.emit(arith.CmpfOp(b, b, "uno"))
    a_num = kb.emit(arith.CmpfOp(a, a, "ord"))
    return kb.emit(arith.OrIOp(less, kb.emit(arith.AndIOp(b_nan, a_num))))


def _key(kb, v):
    """A loaded key in the type it compares in."""
    if isinstance(v.type, Float16Type):
        return kb.emit(arith.ExtFOp(v, f32))
    if isinstance(v.type, IntegerType) and v.type.width.data < 32:
        return kb.emit(arith.ExtSIOp(v, i32))
    return v


def _merge_pass(namer, x, shape, axis, w: int, order, first: bool, it, idx_t):
    """The kernel of the pass merging runs of ``w`` (``first``: the runs are
    the single indices 0..n-1, no source buffer); parameters (x, [src,] dst),
    indices of type ``idx_t``; ``order``: (descending, unsigned)."""
    n = shape[axis]
    inner = B.prod(shape[axis + 1:])
    total = B.prod(shape)
    xstrides, _ = L.layout_of(x.type)
    elt = x.type.element_type
    params = [PtrType(elt, "global")] + ([] if first else [PtrType(idx_t, "global")]) + [PtrType(idx_t, "global")]
    kb = B.KernelBuilder(namer(f"argsort_w{w}"), params, "elementwise", it)
    xp, dst = kb.args[0], kb.args[-1]
    src = None if first else kb.args[1]

    def index_at(line, q):
        """The index at place ``q`` of the line whose place 0 is ``line``."""
        if first:
            return q
        v = kb.load(src, kb.add(line, kb.mul(q, kb.i(inner))))[0]
        return kb.cast_int(v, it)

    def element(f):
        digits = kb.digits(f, shape)
        p = digits[axis]
        line = kb.sub(f, kb.mul(p, kb.i(inner)))  # the result's (and scratch's) place 0 of this line
        xline = kb.dot([(dg, s) for d, (dg, s) in enumerate(zip(digits, xstrides)) if d != axis])

        def key_of(v):
            return _key(kb, kb.load(xp, kb.add(xline, kb.mul(v, kb.i(xstrides[axis]))), nc=True)[0])

        v = index_at(line, p)
        k = key_of(v)
        one = kb.c(1, i1)  # xor with it: not
        run = kb.divu(p, kb.i(w)) if w > 1 else p
        start = kb.mul(run, kb.i(w))
        left = kb.cmpi("eq", kb.emit(arith.AndIOp(run, kb.i(1))), kb.i(0))
        right = kb.emit(arith.XOrIOp(left, one))
        # the partner run: [start + w, min(n, start + 2w)) for a left run, [start - w, start) for a right one
        right_start = kb.add(start, kb.i(w))
        right_len = kb.sub(kb.emit(arith.MinSIOp(kb.i(n), kb.add(start, kb.i(2 * w)))), right_start)
        right_len = kb.emit(arith.MaxSIOp(right_len, kb.i(0)))
        pstart = kb.select(left, right_start, kb.sub(start, kb.i(w)))
        plen = kb.select(left, right_len, kb.i(w))

        def step(_, lo, hi):
            active = kb.cmpi("slt", lo, hi)
            mid = kb.emit(arith.ShRUIOp(kb.add(lo, hi), kb.i(1)))
            at = kb.select(active, kb.add(pstart, mid), p)  # an inactive lane reads its own place
            b = key_of(index_at(line, at))
            # left run: does b go strictly before k; right run: not (k strictly before b)
            c = _precedes(kb, kb.select(left, b, k), kb.select(left, k, b), *order)
            before = kb.emit(arith.XOrIOp(c, right))
            go_right = kb.emit(arith.AndIOp(active, before))
            go_left = kb.emit(arith.AndIOp(active, kb.emit(arith.XOrIOp(before, one))))
            return [kb.select(go_right, kb.add(mid, kb.i(1)), lo), kb.select(go_left, mid, hi)]

        count, _ = kb.for_(kb.i(0), kb.i(w.bit_length()), kb.i(1), step, [kb.i(0), plen])
        place = kb.add(kb.add(kb.emit(arith.MinSIOp(start, pstart)), kb.sub(p, start)), count)
        kb.store([kb.cast_int(v, idx_t)], dst, kb.add(line, kb.mul(place, kb.i(inner))))
        return []

    gid = kb.add(kb.mul(kb.bid(), kb.i(BLOCK)), kb.tid())
    kb.for_(gid, kb.i(total), kb.mul(kb.gdim(), kb.i(BLOCK)), element)
    return kb.finish()


def merge_sort(namer, keys, out, axis: int, descending: bool, unsigned: bool = False):
    """The launches that write into ``out`` (int32 or int64, contiguous, of
    ``keys``' static shape) the stable order of ``keys`` along ``axis``."""
    from tfc.passes.gpu_nn_library import _shape, _span

    shape = _shape(keys, "argsort")
    elt = keys.type.element_type
    if not isinstance(elt, (Float16Type, Float32Type, Float64Type, IntegerType)) or \
            (isinstance(elt, IntegerType) and elt.width.data not in (8, 32, 64)):
        raise B.unsupported(f"argsort of {elt}")
    idx_t = out.type.element_type
    if idx_t not in (i32, i64) or out.type != MemRefType(idx_t, shape):
        raise B.unsupported(f"argsort into the buffer {out.type}")
    total = B.prod(shape)
    if total == 0:
        return []
    axis %= len(shape)
    n = shape[axis]
    grid = (min(-(-total // BLOCK), B.MAX_BLOCKS), 1, 1)
    it = i32 if max(_span([keys], [shape]), total + grid[0] * BLOCK) <= B.I32_MAX else i64
    passes = max(1, (n - 1).bit_length())
    scratch = L.AllocOp(MemRefType(idx_t, shape)).result if passes > 1 else None
    launches, src = [], None
    for k in range(passes):
        dst = out if (passes - 1 - k) % 2 == 0 else scratch
        kernel = _merge_pass(namer, keys, shape, axis, 1 << k, (descending, unsigned), src is None, it, idx_t)
        launches.append((kernel, grid, (BLOCK, 1, 1), [keys] + ([] if src is None else [src]) + [dst]))
        src = dst
    return launches


def one_in_one_out(op):
    """(operand, result buffer) of a library call of one each, else NotImplementedError."""
    name = op.callee.data
    if len(op.ins) != 1 or len(op.outs) != 1:
        raise B.unsupported(f"{name} of {len(op.ins)} operands and {len(op.outs)} results")
    return op.ins[0], op.outs[0]


def argsort(namer, op):
    """The merge passes of an argsort into its result (int32, contiguous)."""
    from tfc.passes.gpu_nn_library import _attrs

    attrs = _attrs(op)
    x, out = one_in_one_out(op)
    if out.type.element_type != i32:
        raise B.unsupported(f"argsort into the buffer {out.type}")
    return merge_sort(namer, x, out, attrs["axis"], attrs["direction"] == "DESCENDING")


LIBRARY = {"argsort": argsort}

__all__ = ["LIBRARY", "merge_sort", "one_in_one_out"]
