"""GPU library kernels written once as L4 (``gpu.func``), for the library calls
of L3 that tfc-lower-gpu launches (tfc/passes/lower_gpu.py).

- ``matmul`` (float32, float64; ``transpose_a``/``transpose_b``; batched with
  numpy's broadcasting of the batch dims; any strided layout of the operands
  and of the planned result): a 16x16 tiled shared-memory kernel, one thread
  per result element, block (16, 16); every (batch, tile row, tile column)
  one block of a one-dimensional grid (gridDim.x holds 2^31 - 1 blocks, y and
  z only 65535), its digits from blockIdx.x.
  Each K tile is staged through shared memory (zero-padded at the edges, so
  every thread reaches both barriers); the products are accumulated in k
  order with ``math.fma`` (one rounding per step, as BLAS's FMA kernels: the
  matmul family's tolerance covers the other summation order anyway).
- int32 / int64 (numpy's wrapping products and sums: exact in any order)
  through the 16x16 kernel;
- float results of at least half a tile: a register-blocked kernel (``BLOCKED``:
  float32 128x128 tiles, 8x8 results per thread; float64 64x64, 4x4).
"""
from __future__ import annotations

from typing import NamedTuple

from xdsl.dialects import arith, gpu
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type, i32, i64

from tfc.dialects import loops as L
from tfc.passes.gpu_builder import I32_MAX, KernelBuilder, prod, unsupported

TILE = 16
MAX_GRID_X = (1 << 31) - 1  # CUDA's gridDim.x limit (y and z: 65535): every tile of every batch goes on x
# the register-blocked kernel (results of at least BM/2 x BN/2): (BM, BN, BK, TM, TN) per
# element type: float32 a 128 x 128 tile per block of 16 x 16 threads, 8 x 8 results per
# thread (128 registers), K in steps of 8; float64 64 x 64, 4 x 4 per thread
BLOCKED = {"f32": (128, 128, 8, 8, 8), "f64": (64, 64, 8, 4, 4)}
PAD = 4  # A's tile row in shared memory is BM + PAD: the k-major stores hit distinct banks


def _digits(kb, q, sizes):
    """Row-major digits of flat index ``q`` over ``sizes`` (a list, one per dim)."""
    out = [None] * len(sizes)
    for k in range(len(sizes) - 1, -1, -1):
        if sizes[k] == 1:
            out[k] = None
            continue
        if k == 0:
            out[k] = q
            break
        out[k] = kb.remu(q, kb.i(sizes[k]))
        q = kb.divu(q, kb.i(sizes[k]))
    return out


def _batch_strides(shape, strides, batch):
    """Per batch dim of the result, the operand's stride there (0 where it is
    broadcast: missing or of size 1)."""
    rank = len(shape) - 2
    out = []
    for j in range(len(batch)):
        d = j - (len(batch) - rank)
        out.append(strides[d] if d >= 0 and shape[d] != 1 else 0)
    return out


def matmul_kernel(namer, a, b, c, transpose_a: bool, transpose_b: bool):
    """(kernel, grid, block) computing ``c = op(a) @ op(b)`` for L3 memrefs
    ``a``, ``b``, ``c`` (static shapes), or None where ``c`` has no elements."""
    elt = c.type.element_type
    if elt == Float16Type() and a.type.element_type == elt and b.type.element_type == elt:
        from tfc.passes.gpu_mma import matmul_f16  # (it builds on this module's geometry)
        return matmul_f16(namer, a, b, c, transpose_a, transpose_b)
    if elt not in (Float32Type(), Float64Type(), i32, i64) or a.type.element_type != elt \
            or b.type.element_type != elt:
        raise unsupported(f"matmul of {a.type.element_type} and {b.type.element_type} into {elt}")
    floats = isinstance(elt, (Float32Type, Float64Type))
    geo = _geometry(a, b, c, transpose_a, transpose_b)
    if geo is None:
        return None
    m, n, k, nb = geo.m, geo.n, geo.k, geo.nb
    a_i, a_k, b_k, b_j, c_i, c_j = geo.steps
    tname = str(elt)
    BM, BN = BLOCKED[tname][:2] if floats else (TILE, TILE)
    span = max(geo.extents) + BM * (abs(a_k) + abs(b_k) + 1) + BM * (abs(a_i) + abs(b_j) + abs(c_i) + abs(c_j))
    it = i32 if span <= I32_MAX else i64
    ta, tb = "t" if transpose_a else "n", "t" if transpose_b else "n"
    if floats and m >= BM // 2 and n >= BN // 2:
        name = namer(f"matmul_{ta}{tb}_{tname}_{BM}x{BN}")
        return _blocked(name, a, b, c, elt, it, geo, BLOCKED[tname])
    grid = _grid(m, n, nb, TILE, TILE)
    name = namer(f"matmul_{ta}{tb}_{tname}")
    kb = KernelBuilder(name, [_ptr(a), _ptr(b), _ptr(c)], "matmul", it, (TILE, TILE, 1))
    pa, pb, pc = kb.args
    tx, ty = kb.tid(), kb.special(gpu.ThreadIdOp, "y")
    t_row, t_col, t_batch = _tile_of_block(kb, m, n, TILE, TILE)
    row = kb.add(kb.mul(t_row, kb.i(TILE)), ty)
    col = kb.add(kb.mul(t_col, kb.i(TILE)), tx)
    bases = _batch_bases(kb, t_batch, geo)
    sa, sb = kb.shared(elt, TILE * TILE), kb.shared(elt, TILE * TILE)
    row_ok = kb.cmpi("slt", row, kb.i(m))
    col_ok = kb.cmpi("slt", col, kb.i(n))
    zero = kb.c(0.0 if floats else 0, elt)
    at = kb.add(kb.mul(ty, kb.i(TILE)), tx)  # this thread's slot in a tile
    a_row = kb.add(bases[0], kb.mul(row, kb.i(a_i)))
    b_col = kb.add(bases[1], kb.mul(col, kb.i(b_j)))

    def tile(t, acc):
        ka = kb.add(t, tx)
        ok = kb.emit(arith.AndIOp(row_ok, kb.cmpi("slt", ka, kb.i(k))))
        idx = kb.select(ok, kb.add(a_row, kb.mul(ka, kb.i(a_k))), kb.i(0))
        x = kb.select(ok, kb.load(pa, idx, nc=True)[0], zero)
        kb.store([x], sa, at)
        kr = kb.add(t, ty)
        ok = kb.emit(arith.AndIOp(col_ok, kb.cmpi("slt", kr, kb.i(k))))
        idx = kb.select(ok, kb.add(b_col, kb.mul(kr, kb.i(b_k))), kb.i(0))
        y = kb.select(ok, kb.load(pb, idx, nc=True)[0], zero)
        kb.store([y], sb, at)
        kb.emit(gpu.BarrierOp())
        a_at = kb.mul(ty, kb.i(TILE))
        for kk in range(TILE):
            u = kb.load(sa, kb.add(a_at, kb.i(kk)) if kk else a_at)[0]
            v = kb.load(sb, kb.add(tx, kb.i(kk * TILE)) if kk else tx)[0]
            acc = kb.emit(xmath.FmaOp(u, v, acc)) if floats else \
                kb.emit(arith.AddiOp(acc, kb.emit(arith.MuliOp(u, v))))  # integers wrap, exact in any order
        kb.emit(gpu.BarrierOp())
        return [acc]

    (acc,) = kb.for_(kb.i(0), kb.i(k), kb.i(TILE), tile, [zero])

    def store():
        idx = kb.add(kb.add(bases[2], kb.mul(row, kb.i(c_i))), kb.mul(col, kb.i(c_j)))
        kb.store([acc], pc, idx)
    kb.if_(kb.emit(arith.AndIOp(row_ok, col_ok)), store)
    kernel = kb.finish()
    return kernel, grid, (TILE, TILE, 1)


class _Geometry(NamedTuple):
    """A matmul's static sizes and element steps (``_geometry``)."""
    m: int
    n: int
    k: int
    batch: list          # the result's batch dims
    nb: int              # their product
    steps: tuple         # (a_i, a_k, b_k, b_j, c_i, c_j): op(a)'s row and k steps, op(b)'s, c's
    batch_strides: tuple  # per operand (a, b, c), its stride per batch dim (``_batch_strides``)
    extents: tuple       # per operand, the elements its layout spans past its first


def _geometry(a, b, c, transpose_a: bool, transpose_b: bool):
    """``c = op(a) @ op(b)``'s geometry (static shapes), or None where ``c`` has no elements."""
    shapes = [tuple(v.type.get_shape()) for v in (a, b, c)]
    if any(d < 0 for sh in shapes for d in sh):
        raise unsupported("matmul of run-time shape")
    ash, _, csh = shapes
    m, n = csh[-2:]
    k = ash[-2] if transpose_a else ash[-1]
    batch = list(csh[:-2])
    nb = prod(batch)
    if m == 0 or n == 0 or nb == 0:
        return None
    ast, bst, cst = layouts = [L.layout_of(v.type)[0] for v in (a, b, c)]
    a_i, a_k = (ast[-1], ast[-2]) if transpose_a else (ast[-2], ast[-1])
    b_k, b_j = (bst[-1], bst[-2]) if transpose_b else (bst[-2], bst[-1])
    return _Geometry(m, n, k, batch, nb, (a_i, a_k, b_k, b_j, cst[-2], cst[-1]),
                     tuple(_batch_strides(sh, st, batch) for sh, st in zip(shapes, layouts)),
                     tuple(sum((d - 1) * abs(x) for d, x in zip(sh, st) if d > 0) for sh, st in zip(shapes, layouts)))


def _batch_bases(kb, t_batch, geo: _Geometry):
    """Each operand's element offset of batch ``t_batch`` (a block's third coordinate)."""
    if not geo.batch:
        return [kb.i(0)] * 3
    z = _digits(kb, t_batch, geo.batch)
    return [kb.dot([(d, x) for d, x in zip(z, st) if d is not None]) for st in geo.batch_strides]


def _grid(m, n, nb, bm, bn):
    """The launch grid of a matmul of ``nb`` m x n results in bm x bn tiles:
    every (batch, tile row, tile column) on gridDim.x (2^31 - 1 blocks; y and z
    would cap rows of tiles and batches at 65535)."""
    blocks = nb * -(-m // bm) * -(-n // bn)
    if blocks > MAX_GRID_X:
        raise unsupported(f"matmul of {blocks} tiles of {bm}x{bn} (more than {MAX_GRID_X} blocks)")
    return (blocks, 1, 1)


def _tile_of_block(kb, m, n, bm, bn):
    """(tile row, tile column, batch) of this block: the digits of blockIdx.x,
    the tile column fastest (consecutive blocks share a row of A's tiles)."""
    tn, tm = -(-n // bn), -(-m // bm)
    q = kb.bid("x")
    col = kb.remu(q, kb.i(tn)) if tn > 1 else kb.i(0)
    q = kb.divu(q, kb.i(tn)) if tn > 1 else q
    row = kb.remu(q, kb.i(tm)) if tm > 1 else kb.i(0)
    q = kb.divu(q, kb.i(tm)) if tm > 1 else q
    return row, col, q


def _blocked(name, a, b, c, elt, it, geo: _Geometry, config):
    """The register-blocked kernel: a BM x BN tile of the result per block of
    (BN/TN, BM/TM) threads, TM x TN results per thread in registers, K in
    steps of BK through shared memory (A's tile stored k-major with a padded
    row, so that a thread reads its TM values of a k as vectors)."""
    m, n, k, nb = geo.m, geo.n, geo.k, geo.nb
    a_i, a_k, b_k, b_j, c_i, c_j = geo.steps
    BM, BN, BK, TM, TN = config
    SA_ROW = BM + PAD
    tx_n, ty_n = BN // TN, BM // TM
    nthreads = tx_n * ty_n
    grid = _grid(m, n, nb, BM, BN)
    kb = KernelBuilder(name, [_ptr(a), _ptr(b), _ptr(c)], "matmul", it, (tx_n, ty_n, 1))
    pa, pb, pc = kb.args
    tx, ty = kb.tid(), kb.special(gpu.ThreadIdOp, "y")
    tid = kb.add(kb.mul(ty, kb.i(tx_n)), tx)
    t_row, t_col, t_batch = _tile_of_block(kb, m, n, BM, BN)
    row0 = kb.mul(t_row, kb.i(BM))
    col0 = kb.mul(t_col, kb.i(BN))
    bases = _batch_bases(kb, t_batch, geo)
    sa = kb.shared(elt, BK * SA_ROW)
    sb = kb.shared(elt, BK * BN)
    zero = kb.c(0.0, elt)
    width = min(TM, 4 if isinstance(elt, Float32Type) else 2)
    a_frag_at = kb.mul(ty, kb.i(TM))
    b_frag_at = kb.mul(tx, kb.i(TN))

    def slots(rows, cols, q):
        """(row, column) in a rows x cols tile of this thread's q-th load (made
        in the loop: fewer values live across it, for the register budget)."""
        e = kb.add(tid, kb.i(q * nthreads)) if q else tid
        return kb.divu(e, kb.i(cols)), kb.remu(e, kb.i(cols)), e

    def tile(t, *acc):
        for q in range(BM * BK // nthreads):
            ml, kl, _ = slots(BM, BK, q)
            r_ = kb.add(row0, ml)
            kk = kb.add(t, kl)
            ok = kb.emit(arith.AndIOp(kb.cmpi("slt", r_, kb.i(m)), kb.cmpi("slt", kk, kb.i(k))))
            at = kb.add(bases[0], kb.add(kb.mul(r_, kb.i(a_i)), kb.mul(kk, kb.i(a_k))))
            x = kb.select(ok, kb.load(pa, kb.select(ok, at, kb.i(0)), nc=True)[0], zero)
            kb.store([x], sa, kb.add(kb.mul(kl, kb.i(SA_ROW)), ml))
        for q in range(BK * BN // nthreads):
            kl, nl, e = slots(BK, BN, q)
            c_ = kb.add(col0, nl)
            kk = kb.add(t, kl)
            ok = kb.emit(arith.AndIOp(kb.cmpi("slt", c_, kb.i(n)), kb.cmpi("slt", kk, kb.i(k))))
            at = kb.add(bases[1], kb.add(kb.mul(c_, kb.i(b_j)), kb.mul(kk, kb.i(b_k))))
            y = kb.select(ok, kb.load(pb, kb.select(ok, at, kb.i(0)), nc=True)[0], zero)
            kb.store([y], sb, e)
        kb.emit(gpu.BarrierOp())
        acc = list(acc)
        for kk in range(BK):
            av, bv = [], []
            for v in range(0, TM, width):
                av += kb.load(sa, kb.add(a_frag_at, kb.i(kk * SA_ROW + v)), width=width)
            for v in range(0, TN, width):
                bv += kb.load(sb, kb.add(b_frag_at, kb.i(kk * BN + v)), width=width)
            for i in range(TM):
                for j in range(TN):
                    acc[i * TN + j] = kb.emit(xmath.FmaOp(av[i], bv[j], acc[i * TN + j]))
        kb.emit(gpu.BarrierOp())
        return acc

    acc = kb.for_(kb.i(0), kb.i(k), kb.i(BK), tile, [zero] * (TM * TN))
    for i in range(TM):
        row = kb.add(kb.add(row0, a_frag_at), kb.i(i))
        row_ok = kb.cmpi("slt", row, kb.i(m))
        row_at = kb.add(bases[2], kb.mul(row, kb.i(c_i)))
        for j in range(TN):
            col = kb.add(kb.add(col0, b_frag_at), kb.i(j))
            ok = kb.emit(arith.AndIOp(row_ok, kb.cmpi("slt", col, kb.i(n))))

            def store(i=i, j=j, col=col, row_at=row_at):
                kb.store([acc[i * TN + j]], pc, kb.add(row_at, kb.mul(col, kb.i(c_j))))
            kb.if_(ok, store)
    kernel = kb.finish()
    return kernel, grid, (tx_n, ty_n, 1)


def _ptr(v):
    from tfc.dialects.gpu import PtrType

    return PtrType(v.type.element_type, "global")


__all__ = ["matmul_kernel", "TILE"]
