"""float16 matmul on tensor cores (``mma.sync.aligned.m16n8k16``, float16
products accumulated in float32, each result rounded once to float16), the
kernels ``gpu_library.matmul_kernel`` takes for float16 operands and result:

- ``tiled`` (results of at least ``TILED_MIN`` rows and columns): a 64 x 64
  tile of C per block of four warps, each warp a 32 x 32 quarter (2 x 4 mma
  tiles of 16 x 8, 32 float32 accumulators per thread). K goes in steps of
  32: the block stages A's 64 x 32 and B's 32 x 64 tiles in shared memory
  (k contiguous for both, rows padded from 32 to 40 halves), zero past the
  edges of M, N and K (any M, N, K, strides, transposes, batches); after a
  barrier each warp loads its fragments with ``tgpu.ldmatrix`` x4 (A: one
  per 16 rows and 16 k; B: one per two n-tiles and 16 k), 8 mma per 16 k,
  and a second barrier before the next stage. The choices, none measured
  (no GPU was lent while they were made): 64 x 64 x 32 keeps 10 KiB of
  shared memory and at most 128 registers per thread, so several blocks fit
  per SM on sm_80/sm_90; a 32 x 32 warp tile does 8 mma per 4 ldmatrix; the
  40-half row (80 bytes) puts the 8 rows an ldmatrix reads on distinct
  16-byte bank groups and keeps every row 16-byte aligned, as ldmatrix
  needs. An operand whose k is contiguous and whose rows start 16-byte
  aligned (row step and batch steps multiples of 8 halves, and the view's
  first element 16-byte aligned in its buffer: all known when the kernel is built) is
  staged with ``cp.async`` (sm_80), 16 bytes per copy, the copies past K or
  the rows zero-filled, then ``cp.async.wait_all`` before the barrier; any
  other operand with plain loads and stores (one element per thread per
  step, consecutive threads on consecutive addresses of whichever of its
  dims is contiguous). Single-buffered: overlapping the next stage's copies
  with this stage's mma (double buffering) is the next step, not done.
- ``simple`` (smaller results): one warp per 16 x 8 tile, fragments loaded
  straight from global memory.

Both zero A and B past the edges (a zero times a NaN of the other would
poison the sum). The tensor core's float32 accumulation order is its own:
the matmul family's float32 bound (tests/test_gpu_mma.py).
"""
from __future__ import annotations

from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import Float16Type, Float32Type, i32, i64

from tfc.dialects import gpu as G
from tfc.passes.gpu_builder import I32_MAX, KernelBuilder
from tfc.passes.gpu_library import _batch_bases, _geometry, _grid, _ptr, _tile_of_block
from tfc.passes.gpu_nn_library import _opaque

# the tiled kernel: a BM x BN tile per block of WARPS warps (2 x 2, each WM x WN), K in steps of BK,
# shared rows of BK + PAD halves (see the module's docstring for why)
BM, BN, BK, WM, WN, PAD = 64, 64, 32, 32, 32, 8
WARPS = (BM // WM) * (BN // WN)
LDS = BK + PAD
TILED_MIN = 32  # rows and columns from which the tiled kernel is taken (half a tile)


def matmul_f16(namer, a, b, c, transpose_a: bool, transpose_b: bool):
    """(kernel, grid, block) of ``c = op(a) @ op(b)`` in float16 on tensor cores, or None where
    ``c`` has no elements."""
    geo = _geometry(a, b, c, transpose_a, transpose_b)
    if geo is None:
        return None
    if geo.m >= TILED_MIN and geo.n >= TILED_MIN:
        return _tiled(namer, a, b, c, geo, transpose_a, transpose_b)
    return _simple(namer, a, b, c, geo, transpose_a, transpose_b)


def _stage(kb, ptr, base, tile_rows, rows, row_ok_limit, k0, k, row_step, k_step, smem, tid, k_fast: bool):
    """Stage a ``tile_rows`` x BK tile of an operand into ``smem`` (row r, k kk at r LDS + kk):
    element ``base + row * row_step + k * k_step`` of global memory, 0 past ``row_ok_limit`` rows
    or ``k``. Thread ``tid`` takes elements tid + 128 q: k fastest where k is the contiguous dim
    (``k_fast``), else the row, so a warp's loads are consecutive addresses."""
    zero = kb.c(0.0, Float16Type())
    nthreads = 32 * WARPS
    count = tile_rows * BK // nthreads

    def one(q):
        e = kb.add(tid, kb.mul(q, kb.i(nthreads)))
        if k_fast:
            r, kk = kb.divu(e, kb.i(BK)), kb.remu(e, kb.i(BK))
        else:
            kk, r = kb.divu(e, kb.i(tile_rows)), kb.remu(e, kb.i(tile_rows))
        kg = kb.add(k0, kk)
        rg = kb.add(rows, r)
        ok = kb.emit(arith.AndIOp(kb.cmpi("slt", rg, kb.i(row_ok_limit)), kb.cmpi("slt", kg, kb.i(k))))
        idx = kb.select(ok, kb.add(base, kb.add(kb.mul(rg, kb.i(row_step)), kb.mul(kg, kb.i(k_step)))), kb.i(0))
        v = kb.select(ok, kb.load(ptr, idx, nc=True)[0], zero)
        kb.store([v], smem, kb.add(kb.mul(r, kb.i(LDS)), kk))
        return []
    kb.for_(kb.i(0), _opaque(kb, count), kb.i(1), one)  # a loop, not unrolled: 64 registers, not 160


CHUNK = 8  # float16 per 16-byte cp.async


def _async_ok(v, row_step, k_step, batch_strides) -> bool:
    """Whether an operand's tile rows can be copied in 16-byte cp.async chunks: k contiguous,
    and every row start 16-byte aligned: the view's first element (its offset from its root
    buffer, through reshapes of offset views, whose layout offset is 0) and its row and batch
    steps multiples of 8 halves."""
    from tfc.passes.lower_gpu import _aligned  # (lower_gpu imports this module's users)

    return k_step == 1 and all(x % CHUNK == 0 for x in (row_step, *batch_strides)) and _aligned(v, 16)


def _stage_async(kb, ptr, base, tile_rows, rows, row_ok_limit, k0, k, row_step, smem, tid):
    """``_stage`` in 16-byte ``tgpu.cp_async`` chunks of CHUNK halves along k (row r, chunk j:
    thread (r BK / CHUNK + j) mod 128); a chunk past K reads only its halves before K, one past
    the rows none (the copy zero-fills the rest). The caller waits and puts the barrier."""
    per_row = BK // CHUNK
    nthreads = 32 * WARPS
    for q in range(tile_rows * per_row // nthreads):
        e = kb.add(tid, kb.i(q * nthreads)) if q else tid
        r, kc = kb.divu(e, kb.i(per_row)), kb.mul(kb.remu(e, kb.i(per_row)), kb.i(CHUNK))
        kg, rg = kb.add(k0, kc), kb.add(rows, r)
        left = kb.sub(kb.i(k), kg)  # halves of the row from kg on
        ok = kb.emit(arith.AndIOp(kb.cmpi("slt", rg, kb.i(row_ok_limit)), kb.cmpi("sgt", left, kb.i(0))))
        halves = kb.select(kb.cmpi("slt", left, kb.i(CHUNK)), left, kb.i(CHUNK))
        nbytes = kb.cast_int(kb.select(ok, kb.mul(halves, kb.i(2)), kb.i(0)), i32)
        src = kb.select(ok, kb.add(base, kb.add(kb.mul(rg, kb.i(row_step)), kg)), base)
        kb.emit(G.CpAsyncOp(smem, kb.add(kb.mul(r, kb.i(LDS)), kc), ptr, src, nbytes))


def _tiled(namer, a, b, c, geo, transpose_a, transpose_b):
    f16, f32 = Float16Type(), Float32Type()
    m, n, k, nb = geo.m, geo.n, geo.k, geo.nb
    a_i, a_k, b_k, b_j, c_i, c_j = geo.steps
    span = sum(geo.extents) + 2 * BM * (sum(abs(x) for x in geo.steps) + 1)
    it = i32 if span <= I32_MAX else i64
    grid = _grid(m, n, nb, BM, BN)
    block = (32 * WARPS, 1, 1)
    ta, tb = "t" if transpose_a else "n", "t" if transpose_b else "n"
    kb = KernelBuilder(namer(f"matmul_{ta}{tb}_f16_mma_{BM}x{BN}"), [_ptr(a), _ptr(b), _ptr(c)], "matmul", it, block)
    pa, pb, pc = kb.args
    tid = kb.tid()
    lane, warp = kb.remu(tid, kb.i(32)), kb.divu(tid, kb.i(32))
    g, t2 = kb.divu(lane, kb.i(4)), kb.mul(kb.remu(lane, kb.i(4)), kb.i(2))
    wm = kb.mul(kb.divu(warp, kb.i(BN // WN)), kb.i(WM))  # the warp's quarter of the tile
    wn = kb.mul(kb.remu(warp, kb.i(BN // WN)), kb.i(WN))
    t_row, t_col, t_batch = _tile_of_block(kb, m, n, BM, BN)
    bases = _batch_bases(kb, t_batch, geo)
    row0, col0 = kb.mul(t_row, kb.i(BM)), kb.mul(t_col, kb.i(BN))
    sa, sb = kb.shared(f16, BM * LDS), kb.shared(f16, BN * LDS)
    # ldmatrix row addresses (element indices into sa / sb), per 16 k: lane l gives A's row
    # (l mod 16) of a 16-row fragment at k + 8 (l / 16); B's n-row (l mod 8) + 8 (l / 16) of a pair
    # of n-tiles at k + 8 ((l / 8) mod 2): the matrices in mma's fragment order
    a_rows = [kb.mul(kb.add(wm, kb.add(kb.remu(lane, kb.i(16)), kb.i(16 * mi))), kb.i(LDS)) for mi in range(WM // 16)]
    a_k8 = kb.mul(kb.divu(lane, kb.i(16)), kb.i(8))
    b_n = kb.add(kb.remu(lane, kb.i(8)), kb.mul(kb.divu(lane, kb.i(16)), kb.i(8)))
    b_rows = [kb.mul(kb.add(wn, kb.add(b_n, kb.i(16 * p))), kb.i(LDS)) for p in range(WN // 16)]
    b_k8 = kb.mul(kb.remu(kb.divu(lane, kb.i(8)), kb.i(2)), kb.i(8))
    n_mi, n_ni = WM // 16, WN // 8

    a_async = _async_ok(a, a_i, a_k, geo.batch_strides[0])
    b_async = _async_ok(b, b_j, b_k, geo.batch_strides[1])

    def step(k0, *acc):
        if a_async:
            _stage_async(kb, pa, bases[0], BM, row0, m, k0, k, a_i, sa, tid)
        else:
            _stage(kb, pa, bases[0], BM, row0, m, k0, k, a_i, a_k, sa, tid, abs(a_k) == 1)
        if b_async:
            _stage_async(kb, pb, bases[1], BN, col0, n, k0, k, b_j, sb, tid)
        else:
            _stage(kb, pb, bases[1], BN, col0, n, k0, k, b_j, b_k, sb, tid, abs(b_k) == 1)
        if a_async or b_async:
            kb.emit(G.CpAsyncWaitOp())
        kb.emit(gpu.BarrierOp())
        acc = list(acc)
        for kk in range(0, BK, 16):
            afr = [kb.emit(G.LdMatrixOp(sa, kb.add(r, kb.add(a_k8, kb.i(kk))), 4)).results for r in a_rows]
            bfr = []
            for r in b_rows:
                v = kb.emit(G.LdMatrixOp(sb, kb.add(r, kb.add(b_k8, kb.i(kk))), 4)).results
                bfr += [v[0:4], v[4:8]]  # n-tile 2p: matrices 0, 1 (k 0-7, 8-15); 2p + 1: matrices 2, 3
            for mi in range(n_mi):
                for ni in range(n_ni):
                    at = 4 * (mi * n_ni + ni)
                    acc[at:at + 4] = kb.emit(G.MmaOp(list(afr[mi]), list(bfr[ni]), acc[at:at + 4])).results
        kb.emit(gpu.BarrierOp())  # every warp is done with the stage before the next overwrites it
        return acc

    acc = kb.for_(kb.i(0), kb.i(k), kb.i(BK), step, [kb.c(0.0, f32)] * (4 * n_mi * n_ni))
    for mi in range(n_mi):
        for ni in range(n_ni):
            for i in range(4):  # c_i: row g + 8 (i >> 1), column 2t + (i & 1) of the mma tile
                r = kb.add(kb.add(row0, wm), kb.add(g, kb.i(16 * mi + 8 * (i >> 1))))
                col = kb.add(kb.add(col0, wn), kb.add(t2, kb.i(8 * ni + (i & 1))))
                ok = kb.emit(arith.AndIOp(kb.cmpi("slt", r, kb.i(m)), kb.cmpi("slt", col, kb.i(n))))

                def store(v=acc[4 * (mi * n_ni + ni) + i], r=r, col=col):
                    idx = kb.add(bases[2], kb.add(kb.mul(r, kb.i(c_i)), kb.mul(col, kb.i(c_j))))
                    kb.store([kb.emit(arith.TruncFOp(v, f16))], pc, idx)
                kb.if_(ok, store)
    return kb.finish(), grid, block


MMA_M, MMA_N, MMA_K = 16, 8, 16  # mma.sync.aligned.m16n8k16: the simple kernel's tile


def _simple(namer, a, b, c, geo, transpose_a: bool, transpose_b: bool):
    """float16 matmul on tensor cores: one warp (a block of 32 threads) per
    16 x 8 tile of ``c``, K in steps of 16 through ``tgpu.mma`` (float16
    products, float32 accumulation), the result rounded once to float16.
    Each lane loads its fragment elements straight from global memory (PTX's
    fragment layout: docs/ir-gpu-dialect.md), zero past the edges of A and B
    (both: a zero times a NaN of the other would poison the sum); any strides,
    both transpose flags, batches as the 16x16 kernel's."""
    f16 = Float16Type()
    m, n, k, nb = geo.m, geo.n, geo.k, geo.nb
    a_i, a_k, b_k, b_j, c_i, c_j = geo.steps
    span = sum(geo.extents) + 32 * (sum(abs(x) for x in geo.steps) + 1)
    it = i32 if span <= I32_MAX else i64
    grid = _grid(m, n, nb, MMA_M, MMA_N)
    ta, tb = "t" if transpose_a else "n", "t" if transpose_b else "n"
    kb = KernelBuilder(namer(f"matmul_{ta}{tb}_f16_mma"), [_ptr(a), _ptr(b), _ptr(c)], "matmul", it, (32, 1, 1))
    pa, pb, pc = kb.args
    lane = kb.tid()
    g, t2 = kb.divu(lane, kb.i(4)), kb.mul(kb.remu(lane, kb.i(4)), kb.i(2))
    t_row, t_col, t_batch = _tile_of_block(kb, m, n, MMA_M, MMA_N)
    bases = _batch_bases(kb, t_batch, geo)
    row0 = kb.add(kb.mul(t_row, kb.i(MMA_M)), g)     # rows g and g + 8 of the tile
    col0 = kb.add(kb.mul(t_col, kb.i(MMA_N)), g)     # B's column g
    zero16, zero32 = kb.c(0.0, f16), kb.c(0.0, Float32Type())
    rows = [row0, kb.add(row0, kb.i(8))]
    rows_ok = [kb.cmpi("slt", r, kb.i(m)) for r in rows]
    col_ok = kb.cmpi("slt", col0, kb.i(n))

    def fetch(ptr, ok, idx):
        x = kb.load(ptr, kb.select(ok, idx, kb.i(0)), nc=True)[0]
        return kb.select(ok, x, zero16)

    def step(k0, *acc):
        ks = [kb.add(k0, kb.add(t2, kb.i(dk))) for dk in (0, 1, 8, 9)]  # columns 2t, 2t+1, 2t+8, 2t+9
        ks_ok = [kb.cmpi("slt", x, kb.i(k)) for x in ks]
        av = []
        for i in range(8):  # a_i: row g + 8((i >> 1) & 1), column 2t + (i & 1) + 8(i >> 2)
            r, kk = (i >> 1) & 1, (i & 1) + 2 * (i >> 2)
            ok = kb.emit(arith.AndIOp(rows_ok[r], ks_ok[kk]))
            av.append(fetch(pa, ok, kb.add(bases[0], kb.add(kb.mul(rows[r], kb.i(a_i)), kb.mul(ks[kk], kb.i(a_k))))))
        bv = []
        for i in range(4):  # b_i: row 2t + (i & 1) + 8(i >> 1), column g
            kk = (i & 1) + 2 * (i >> 1)
            ok = kb.emit(arith.AndIOp(col_ok, ks_ok[kk]))
            bv.append(fetch(pb, ok, kb.add(bases[1], kb.add(kb.mul(ks[kk], kb.i(b_k)), kb.mul(col0, kb.i(b_j))))))
        return list(kb.emit(G.MmaOp(av, bv, list(acc))).results)

    acc = kb.for_(kb.i(0), kb.i(k), kb.i(MMA_K), step, [zero32] * 4)
    c_col = kb.add(kb.mul(t_col, kb.i(MMA_N)), t2)
    for i, v in enumerate(acc):  # c_i: row g + 8(i >> 1), column 2t + (i & 1)
        r, col = rows[i >> 1], kb.add(c_col, kb.i(i & 1))
        ok = kb.emit(arith.AndIOp(rows_ok[i >> 1], kb.cmpi("slt", col, kb.i(n))))

        def store(v=v, r=r, col=col):
            idx = kb.add(bases[2], kb.add(kb.mul(r, kb.i(c_i)), kb.mul(col, kb.i(c_j))))
            kb.store([kb.emit(arith.TruncFOp(v, f16))], pc, idx)
        kb.if_(ok, store)
    return kb.finish(), grid, (32, 1, 1)


__all__ = ["matmul_f16", "TILED_MIN"]
