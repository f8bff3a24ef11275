"""The PTX simulator (tfc/backends/cuda/simulator.py) and the simulated driver
(tfc/backends/cuda/sim_driver.py): the hand-written kernels of ptx-notes.md
against numpy (odd and zero sizes), each error class provoked on purpose,
instruction semantics at their edge cases, every instruction of the printer's
PTX_SUBSET, the printer's own test kernels (tests/gpu_kernels.py), and every
PTX text here assembled with ptxas for sm_80."""
import os
import re
import sys
import time

import numpy as np
import pytest

from tfc.backends.cuda import simulator as S

sys.path.insert(0, os.path.dirname(__file__))
import ptx_sim_kernels as K  # noqa: E402


def _ptxas():
    try:
        from tfc.backends.cuda import ptxas
    except ImportError as e:   # the module is another engineer's
        pytest.skip(f"tfc.backends.cuda.ptxas: {e}")
    if not ptxas.available():
        pytest.skip("ptxas not found (PATH, /usr/local/cuda/bin, cuda.pathfinder)")
    return ptxas


def _run(ptx, name, grid, block, args, mem=None, **kw):
    S.run(S.parse(ptx), name, grid, block, args, mem if mem is not None else S.Memory(), **kw)


def _bits_equal(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and np.array_equal(a.view(f"u{a.dtype.itemsize}"), b.view(f"u{b.dtype.itemsize}"))


def _bits_equal_nan(a, b):
    """The same bits where not NaN, NaN at the same places (any payload)."""
    a, b = np.asarray(a), np.asarray(b)
    na, nb = np.isnan(a), np.isnan(b)
    return a.shape == b.shape and np.array_equal(na, nb) and _bits_equal(a[~na], b[~nb])


# -- the four kernels of ptx-notes.md section 1 --------------------------------------------------

@pytest.mark.parametrize("name", ["fma_f32", "fma_f32_v4"])
@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 255, 1001, 4099])
def test_elementwise_fma_exact(name, n):
    rng = np.random.default_rng(n)
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    if n > 8:   # products that cancel against c: where a float64 mul + add would round twice
        c[:8] = -(a[:8].astype(np.float64) * b[:8] * (1 + 1e-7)).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    per = 4 if name.endswith("v4") else 1
    grid = (max(1, -(-n // (256 * per))), 1, 1)
    _run(K.GOOD[name], name, grid, (256, 1, 1), [a, b, c, out, np.uint64(n)])
    assert _bits_equal(out, K.fma_f32_exact(a, b, c))


def _block_sum_order(x, nblocks, nt):
    """The block sum kernel's exact float32 order: each thread's grid-stride
    partial, the shuffle tree per warp, warp 0's tree over the partials."""
    n = x.size
    stride = nblocks * nt
    acc = np.zeros((nblocks, nt), np.float32)
    for start in range(0, n, stride):
        chunk = np.zeros(stride, np.float32)
        m = min(stride, n - start)
        chunk[:m] = x[start:start + m]
        live = np.zeros(stride, bool)
        live[:m] = True
        acc = np.where(live.reshape(nblocks, nt), acc + chunk.reshape(nblocks, nt), acc)

    def tree(v):   # v: (..., 32)
        lane = np.arange(32)
        for o in (16, 8, 4, 2, 1):
            j = np.where(lane + o <= 31, lane + o, lane)
            v = v + v[..., j]
        return v[..., 0]
    nw = nt // 32
    partial = tree(acc.reshape(nblocks, nw, 32))
    first = np.zeros((nblocks, 32), np.float32)
    first[:, :nw] = partial
    return tree(first)


@pytest.mark.parametrize("n,nblocks,nt", [(0, 1, 32), (1, 1, 64), (100, 2, 96), (100_003, 7, 224),
                                           (5000, 3, 1024)])
def test_block_sum(n, nblocks, nt):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    out = np.full(nblocks, np.nan, np.float32)
    _run(K.BLOCK_SUM_F32, "block_sum_f32", (nblocks, 1, 1), (nt, 1, 1), [x, out, np.uint64(n)])
    assert _bits_equal(out, _block_sum_order(x, nblocks, nt))
    np.testing.assert_allclose(out.sum(dtype=np.float64), x.sum(dtype=np.float64), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("m,n,k", [(37, 45, 29), (1, 1, 1), (16, 16, 16), (17, 3, 33), (5, 7, 0), (64, 64, 64)])
def test_sgemm_tiled16(m, n, k):
    rng = np.random.default_rng(m * 1000 + n)
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    C = np.full((m, n), np.nan, np.float32)
    _run(K.SGEMM_TILED16, "sgemm_tiled16", (-(-n // 16), -(-m // 16), 1), (16, 16, 1),
         [A, B, C, np.uint32(m), np.uint32(n), np.uint32(k)])
    acc = np.zeros((m, n), np.float32)
    for j in range(-(-k // 16) * 16):   # fma in k order over zero-padded tiles
        if j < k:
            acc = S._fma32(A[:, j, None], B[None, j, :], acc)
    assert _bits_equal(C, acc)
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("grid,block", [((2, 3, 2), (8, 4, 2)), ((1, 1, 1), (1, 1, 1)), ((3, 1, 1), (16, 16, 1)),
                                        ((1, 2, 3), (5, 3, 7))])
def test_special_registers(grid, block):
    nb, nt = int(np.prod(grid)), int(np.prod(block))
    out = np.zeros((nb * nt, 8), np.uint32)
    dims = np.zeros(6, np.uint32)
    _run(K.SPECIALS, "specials", grid, block, [out, dims])
    assert dims.tolist() == [*block, *grid]
    i = np.arange(nb * nt)
    lt, lb = i % nt, i // nt
    bx, by, _ = block
    gx, gy, _ = grid
    want = np.stack([lt % bx, lt // bx % by, lt // (bx * by), lb % gx, lb // gx % gy, lb // (gx * gy),
                     lt % 32, lt // 32], axis=1)
    assert np.array_equal(out, want)


@pytest.mark.parametrize("nt", [32, 96, 256])
def test_dynamic_shared_memory(nt):
    x = np.arange(3 * nt, dtype=np.float32)
    out = np.zeros_like(x)
    _run(K.REVERSE_DYNAMIC, "reverse_dynamic", (3, 1, 1), (nt, 1, 1), [x, out], shared_bytes=4 * nt)
    assert np.array_equal(out, x.reshape(3, nt)[:, ::-1].ravel())
    with pytest.raises(S.SimulationError, match="outside the block's"):
        _run(K.REVERSE_DYNAMIC, "reverse_dynamic", (3, 1, 1), (nt, 1, 1), [x, out], shared_bytes=4 * nt - 4)
    with pytest.raises(S.SimulationError, match="no shared memory"):
        _run(K.REVERSE_DYNAMIC, "reverse_dynamic", (3, 1, 1), (nt, 1, 1), [x, out])


def test_zero_grid_launches_nothing():
    mem = S.Memory()
    out = np.full(3, 7, np.float32)
    _run(K.FMA_F32, "fma_f32", (0, 1, 1), (256, 1, 1),
         [out, out, out, out, np.uint64(3)], mem)
    assert (out == 7).all() and mem.live_bytes == 0


def test_speed():
    """A 16x16-tiled 64^3 matmul and a 100k-element elementwise kernel each run
    well under a second (CI runs hundreds of kernels)."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((64, 64)).astype(np.float32)
    prog = S.parse(K.SGEMM_TILED16)
    t = time.perf_counter()
    S.run(prog, "sgemm_tiled16", (4, 4, 1), (16, 16, 1),
          [A, A, np.zeros((64, 64), np.float32), np.uint32(64), np.uint32(64), np.uint32(64)], S.Memory())
    t_mm = time.perf_counter() - t
    n = 100_000
    x = rng.standard_normal(n).astype(np.float32)
    prog = S.parse(K.FMA_F32)
    t = time.perf_counter()
    S.run(prog, "fma_f32", (-(-n // 256), 1, 1), (256, 1, 1), [x, x, x, np.zeros_like(x), np.uint64(n)],
          S.Memory())
    t_ew = time.perf_counter() - t
    assert t_mm < 1.0 and t_ew < 1.0, (t_mm, t_ew)


# -- errors, each provoked on purpose ----------------------------------------------------------

def test_missing_barrier_is_a_race():
    A = np.ones((32, 32), np.float32)
    with pytest.raises(S.SimulationError) as e:
        _run(K.SGEMM_NO_BARRIER, "sgemm_tiled16", (2, 2, 1), (16, 16, 1),
             [A, A, np.zeros((32, 32), np.float32), np.uint32(32), np.uint32(32), np.uint32(32)])
    msg = str(e.value)
    assert "shared-memory race" in msg and "kernel sgemm_tiled16" in msg and "block (0, 0, 0)" in msg
    assert "PTX line" in msg and "ld.shared.f32" in msg


_RW = K.HEADER + """
.visible .entry rw(.param .u32 p_shift)
{
    .reg .u32 %r<8>;
    .reg .TYPE %v;
    .shared .align 4 .TYPE s[64];
    ld.param.u32 %r1, [p_shift];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, s;
    mad.lo.u32 %r4, %r2, SIZE, %r3;
    ld.shared.TYPE %v, [%r4];
    BARRIER
    add.u32 %r5, %r2, %r1;
    and.b32 %r5, %r5, 63;
    mad.lo.u32 %r6, %r5, SIZE, %r3;
    st.shared.TYPE [%r6], %v;
    ret;
}
"""


@pytest.mark.parametrize("type_,size", [("f32", 4), ("u8", 1)])
def test_write_after_read_race(type_, size):
    ptx = _RW.replace("TYPE", type_).replace("SIZE", str(size))
    # each thread reads its element, then writes its neighbour's: a race without a barrier between
    with pytest.raises(S.SimulationError,
                       match="shared-memory race: write of .* read by block .0, 0, 0. thread .1, 0, 0."):
        _run(ptx.replace("BARRIER", ""), "rw", (2, 1, 1), (64, 1, 1), [np.uint32(1)])
    _run(ptx.replace("BARRIER", "bar.sync 0;"), "rw", (2, 1, 1), (64, 1, 1), [np.uint32(1)])
    # its own element again: no other thread touches it
    _run(ptx.replace("BARRIER", ""), "rw", (2, 1, 1), (64, 1, 1), [np.uint32(0)])
    # two threads write one element in the same instruction
    two = ptx.replace("BARRIER", "bar.sync 0;").replace("and.b32 %r5, %r5, 63;", "and.b32 %r5, %r5, 62;")
    with pytest.raises(S.SimulationError, match="written in the same instruction"):
        _run(two, "rw", (1, 1, 1), (64, 1, 1), [np.uint32(0)])


def test_barrier_inside_bounds_check_is_divergent():
    x = np.ones(100, np.float32)
    with pytest.raises(S.SimulationError) as e:
        _run(K.BLOCK_SUM_BARRIER_IN_BOUNDS, "block_sum_f32", (1, 1, 1), (128, 1, 1),
             [x, np.zeros(1, np.float32), np.uint64(100)])
    msg = str(e.value)
    assert "bar.sync 0 reached by 100 of the block's 128 threads" in msg and "bar.sync" in msg
    # the same kernel with every thread in bounds is fine
    y = np.ones(128, np.float32)
    out = np.zeros(1, np.float32)
    _run(K.BLOCK_SUM_BARRIER_IN_BOUNDS, "block_sum_f32", (1, 1, 1), (128, 1, 1), [y, out, np.uint64(128)])
    assert out[0] == 128


def test_out_of_bounds_read():
    n = 100
    a = np.ones(n, np.float32)
    mem = S.Memory()
    ptrs = [mem.to_device(a) for _ in range(4)]
    with pytest.raises(S.SimulationError) as e:
        _run(K.FMA_F32_NO_BOUNDS, "fma_f32", (1, 1, 1), (128, 1, 1),
             [np.uint64(p) for p in ptrs] + [np.uint64(n)], mem)
    msg = str(e.value)
    assert "kernel fma_f32: block (0, 0, 0) thread (100, 0, 0)" in msg
    assert f"4-byte read at address {ptrs[0] + 400:#x}: outside every allocation" in msg
    assert "ld.global.nc.f32 %f1, [%rd10]" in msg and "PTX line 3" in msg


def test_misaligned_vector_load():
    mem = S.Memory()
    base = mem.alloc(4 * 68)
    p = np.uint64(base + 4)     # a view starting one float in: not 16-byte aligned
    with pytest.raises(S.SimulationError) as e:
        _run(K.FMA_F32_V4, "fma_f32_v4", (1, 1, 1), (32, 1, 1), [p, p, p, p, np.uint64(64)], mem)
    assert f"misaligned 16-byte read at address {base + 4:#x}" in str(e.value)
    assert "ld.global.nc.v4.f32" in str(e.value)


def test_nc_load_of_a_buffer_the_kernel_writes():
    # in place: out is a: an ld.global.nc of a buffer the launch writes
    mem = S.Memory()
    n = 300
    a = mem.to_device(np.ones(n, np.float32))
    b = mem.to_device(np.ones(n, np.float32))
    with pytest.raises(S.SimulationError, match="ld.global.nc bytes this launch writes|through ld.global.nc"):
        _run(K.FMA_F32, "fma_f32", (2, 1, 1), (256, 1, 1),
             [np.uint64(a), np.uint64(b), np.uint64(b), np.uint64(a), np.uint64(n)], mem)
    # the same without .nc is fine, and so are disjoint parts of one allocation
    _run(K.FMA_F32.replace("ld.global.nc.f32", "ld.global.f32"), "fma_f32", (2, 1, 1), (256, 1, 1),
         [np.uint64(a), np.uint64(b), np.uint64(b), np.uint64(a), np.uint64(n)], mem)
    arena = mem.alloc(4 * 4 * 128)
    p = [np.uint64(arena + 512 * i) for i in range(4)]
    _run(K.FMA_F32, "fma_f32", (1, 1, 1), (256, 1, 1), p + [np.uint64(128)], mem)


@pytest.mark.parametrize("line,why", [
    ("mul.f32 %f1, %f1, %f1;", "must be .rn"),
    ("ex2.approx.ftz.f32 %f1, %f1;", ".ftz"),
    ("vote.sync.all.pred %p1, %p1, 0xffffffff;", "unsupported instruction vote.sync.all.pred"),
    ("shfl.sync.down.b32 %f1, %f1, 1, 0x1f, 0xffff;", "membermask"),
    ("bar.sync 1;", "only bar.sync 0"),
    ("mov.u32 %r1, %warpid;", "physical slot"),
    ("ld.global.v8.f32 {%f1, %f1, %f1, %f1, %f1, %f1, %f1, %f1}, [%rd1];", "sm_100"),
])
def test_unsupported_instruction(line, why):
    ptx = K.HEADER + (".visible .entry k(.param .u64 p)\n{\n    .reg .pred %p<2>;\n    .reg .f32 %f<2>;\n"
                      "    .reg .u64 %rd<2>;\n    .reg .u32 %r<2>;\n    " + line + "\n    ret;\n}\n")
    with pytest.raises(S.SimulationError) as e:
        S.parse(ptx)
    assert why in str(e.value) and "line 10" in str(e.value) and "kernel k" in str(e.value)


def test_syntax_errors():
    base = K.HEADER + (".visible .entry k(.param .u64 p)\n{\n    .reg .f32 %f<2>;\n    .reg .u32 %r<2>;\n"
                       "    .reg .pred %p<2>;\n    .reg .b32 %b<2>;\n    {}\n    ret;\n}\n")
    for bad, msg in [("add.rn.f32 %f1, %f1, %f9;", "unknown register %f9"),
                     ("bra $L_nowhere;", "unknown label $L_nowhere"),
                     ("mov.f32 %f1, 1;", "integer literal"),
                     ("ld.param.f32 %f1, [p_missing];", "unknown parameter p_missing"),
                     ("add.rn.f32 %f1, %f1, %r1;", "a .f32 operand in register %r1 declared .u32"),
                     ("setp.lt.s32 %p1, %f1, 0;", "a .s32 operand in register %f1 declared .f32")]:
        with pytest.raises(S.PTXSyntaxError, match=re.escape(msg)):
            S.parse(base.replace("{}", bad))
    # what ptxas accepts: a .f32 operand in a .b32 register, .s32 in .u32, a v4.f32 load into .u32 registers
    for ok in ("add.rn.f32 %f1, %f1, %b1;", "add.s32 %r1, %r1, 1;", "ld.param.b32 %f1, [p];", "mov.b32 %f1, %r1;"):
        S.parse(base.replace("{}", ok))
    with pytest.raises(S.PTXSyntaxError, match="missing ';'"):
        S.parse(base.replace("{}", "mov.f32 %f1, %f0\n").replace("    ret;", "    ret"))


def test_uninitialized_and_shared_errors():
    # a shared access past the block's array, and shared memory used by a shfl with a partial warp
    ptx = K.HEADER + """
.visible .entry k(.param .u32 p_i)
{
    .reg .u32 %r<4>;
    .reg .f32 %f<2>;
    .shared .align 4 .f32 s[8];
    ld.param.u32 %r1, [p_i];
    mov.u32 %r2, s;
    shl.b32 %r3, %r1, 2;
    add.u32 %r2, %r2, %r3;
    ld.shared.f32 %f1, [%r2];
    ret;
}
"""
    _run(ptx, "k", (1, 1, 1), (1, 1, 1), [np.uint32(7)])
    with pytest.raises(S.SimulationError, match="outside the block's 32 bytes of shared memory"):
        _run(ptx, "k", (1, 1, 1), (1, 1, 1), [np.uint32(8)])
    with pytest.raises(S.SimulationError, match="not a numpy scalar"):
        _run(ptx, "k", (1, 1, 1), (1, 1, 1), [8])
    with pytest.raises(S.SimulationError, match="int64, not uint32"):
        _run(ptx, "k", (1, 1, 1), (1, 1, 1), [np.int64(8)])
    with pytest.raises(S.SimulationError, match="requires .reqntid"):
        _run(K.SGEMM_TILED16, "sgemm_tiled16", (1, 1, 1), (32, 8, 1),
             [np.uint64(0)] * 3 + [np.uint32(0)] * 3)


def test_partial_warp_shuffle_is_refused():
    x = np.ones(48, np.float32)
    with pytest.raises(S.SimulationError, match="not a multiple of 32"):
        _run(K.BLOCK_SUM_F32, "block_sum_f32", (1, 1, 1), (48, 1, 1), [x, np.zeros(1, np.float32), np.uint64(48)])


def test_endless_loop_is_stopped():
    ptx = K.HEADER + ".visible .entry k()\n{\n$L:\n    bra.uni $L;\n}\n"
    with pytest.raises(S.SimulationError, match="more than 1000 steps"):
        _run(ptx, "k", (1, 1, 1), (32, 1, 1), [], max_steps=1000)


# -- instruction semantics at their edges --------------------------------------------------------

def _probe(body, srcs, dst, *inputs):
    n = len(inputs[0])
    out = np.zeros(n, {"pred": np.uint8}.get(dst) or K_NP[dst])
    _run(K.probe(body, srcs, dst), "probe", (max(1, -(-n // 128)), 1, 1), (128, 1, 1),
         [np.ascontiguousarray(x) for x in inputs] + [out, np.uint32(n)])
    return out


K_NP = {"f32": np.float32, "f64": np.float64, "s32": np.int32, "u32": np.uint32, "s64": np.int64,
        "u64": np.uint64, "b32": np.uint32, "b64": np.uint64, "b16": np.uint16}


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_float_arithmetic_is_ieee(t):
    a, b = K.float_inputs(K_NP[t])
    with np.errstate(all="ignore"):
        for op, ref in [("add.rn", np.add), ("sub.rn", np.subtract), ("mul.rn", np.multiply),
                        ("div.rn", np.divide)]:
            got = _probe(f"{op}.{t} %d, %a0, %a1;", [t, t], t, a, b)
            want = ref(a, b)
            assert np.array_equal(got, want, equal_nan=True), op
        assert np.array_equal(_probe(f"sqrt.rn.{t} %d, %a0;", [t], t, a), np.sqrt(a), equal_nan=True)
        num = ~np.isnan(a)   # NaN results: test_nan_results_as_an_h100_gives_them
        assert _bits_equal(_probe(f"neg.{t} %d, %a0;", [t], t, a)[num], -a[num])
        assert _bits_equal(_probe(f"abs.{t} %d, %a0;", [t], t, a)[num], np.abs(a[num]))
        got = _probe(f"copysign.{t} %d, %a0, %a1;", [t, t], t, a, b)
        assert _bits_equal(got, np.copysign(b, a))   # PTX: a's sign on b


def test_fma_f64_exact():
    a, b = K.float_inputs(np.float64)
    c = np.roll(a, 3)
    got = _probe("fma.rn.f64 %d, %a0, %a1, %a2;", ["f64"] * 3, "f64", a, b, c)
    want = np.array([S._fma_exact(x, y, z) for x, y, z in zip(a.tolist(), b.tolist(), c.tolist())])
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_nan_results_as_an_h100_gives_them():
    a, b = K.float_inputs(np.float32)
    with np.errstate(all="ignore"):
        for body, srcs, ref in [("add.rn.f32 %d, %a0, %a1;", 2, np.add), ("mul.rn.f32 %d, %a0, %a1;", 2, np.multiply),
                                ("sqrt.rn.f32 %d, %a0;", 1, np.sqrt), ("neg.f32 %d, %a0;", 1, np.negative),
                                ("cvt.rni.f32.f32 %d, %a0;", 1, np.rint)]:
            got = _probe(body, ["f32"] * srcs, "f32", *((a, b)[:srcs]))
            want = ref(a, b) if srcs == 2 else ref(a)
            assert np.array_equal(got, want, equal_nan=True), body
            assert (got.view(np.uint32)[np.isnan(got)] == 0x7FFFFFFF).all(), body   # the canonical NaN
        h = _probe("cvt.rn.f16.f32 %d, %a0;", ["f32"], "b16", a)
        assert (h[np.isnan(a)] == 0x7FFF).all()
        d = np.array([np.nan, -np.nan, 1.0], np.float64)
        assert _bits_equal(_probe("neg.f64 %d, %a0;", ["f64"], "f64", d)[:2], d[:2])   # f64: the NaN as it is
        # float to integer: NaN is 0 from f32 to 32 bits, the sign bit alone otherwise
        nan32, nan64 = np.full(3, np.nan, np.float32), np.full(3, np.nan)
        assert (_probe("cvt.rzi.s32.f32 %d, %a0;", ["f32"], "s32", nan32) == 0).all()
        assert (_probe("cvt.rzi.s32.f64 %d, %a0;", ["f64"], "s32", nan64) == -2**31).all()
        assert (_probe("cvt.rni.u64.f32 %d, %a0;", ["f32"], "u64", nan32) == 2**63).all()
        # fma: the exact product is finite, an infinite c wins
        m = np.finfo(np.float64).max
        got = _probe("fma.rn.f64 %d, %a0, %a1, %a2;", ["f64"] * 3, "f64", np.array([-m, m]), np.array([m, 2.0]),
                     np.array([np.inf, -m]))
        assert got[0] == np.inf and got[1] == m


def test_approximations():
    x = np.array([np.nan, -1.0, 1e-40, -1e-40, 0.5, 3.0, -np.inf], np.float32)
    with np.errstate(all="ignore"):
        for op, f in [("ex2", np.exp2), ("lg2", np.log2), ("sin", np.sin), ("cos", np.cos), ("tanh", np.tanh),
                      ("rsqrt", lambda v: 1 / np.sqrt(v))]:
            got = _probe(f"{op}.approx.f32 %d, %a0;", ["f32"], "f32", x)
            want = f(x.astype(np.float64)).astype(np.float32)   # correctly rounded
            num = ~np.isnan(want)
            if op == "sin":   # a subnormal argument is flushed to zero (an H100)
                want[2:4] = [0.0, -0.0]
            assert _bits_equal(got[num], want[num]), op
            assert (got.view(np.uint32)[~num] == 0x7FFFFFFF).all(), op


def test_min_max_nan_and_zero_signs():
    a = np.array([np.nan, 1.0, np.nan, -0.0, 0.0, 2.0], np.float32)
    b = np.array([1.0, np.nan, np.nan, 0.0, -0.0, -3.0], np.float32)
    mn = _probe("min.f32 %d, %a0, %a1;", ["f32"] * 2, "f32", a, b)
    assert _bits_equal(mn[[0, 1, 3, 4, 5]], np.array([1.0, 1.0, -0.0, -0.0, -3.0], np.float32))
    assert np.isnan(mn[2])
    mx = _probe("max.NaN.f32 %d, %a0, %a1;", ["f32"] * 2, "f32", a, b)
    assert np.isnan(mx[:3]).all() and _bits_equal(mx[3:], np.array([0.0, 0.0, 2.0], np.float32))


@pytest.mark.parametrize("t", ["s32", "u32", "s64", "u64"])
def test_integer_division(t):
    dt = K_NP[t]
    a, b = K.int_inputs(dt)
    q = _probe(f"div.{t} %d, %a0, %a1;", [t, t], t, a, b)
    r = _probe(f"rem.{t} %d, %a0, %a1;", [t, t], t, a, b)
    nz = b != 0
    ok = nz & ~((a == np.iinfo(dt).min) & (b == -1)) if t[0] == "s" else nz
    aa, bb = a[ok].astype(object), b[ok].astype(object)
    tq = np.array([abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1) for x, y in zip(aa, bb)], object)
    assert np.array_equal(q[ok].astype(object), tq)
    assert np.array_equal(r[ok].astype(object), aa - tq * bb)
    # by zero: all ones, quotient and remainder (what an H100 gives)
    ones = np.iinfo(dt).max if t[0] == "u" else -1
    assert (q[~nz] == ones).all() and (r[~nz] == ones).all()
    if t[0] == "s":   # INT_MIN / -1 wraps
        m = (a == np.iinfo(dt).min) & (b == -1)
        assert m.any() and (q[m] == np.iinfo(dt).min).all() and (r[m] == 0).all()


def test_integer_ops():
    a, b = K.int_inputs(np.int32)
    sh = (b.view(np.uint32) % 40).astype(np.uint32)
    got = _probe("shl.b32 %d, %a0, %a1;", ["b32", "u32"], "b32", a.view(np.uint32), sh)
    want = np.where(sh >= 32, 0, (a.view(np.uint32).astype(np.uint64) << np.minimum(sh, 31)) & 0xFFFFFFFF)
    assert np.array_equal(got, want.astype(np.uint32))
    got = _probe("shr.s32 %d, %a0, %a1;", ["s32", "u32"], "s32", a, sh)
    assert np.array_equal(got, a >> np.minimum(sh, 31).astype(np.int32))
    got = _probe("shr.u32 %d, %a0, %a1;", ["u32", "u32"], "u32", a.view(np.uint32), sh)
    assert np.array_equal(got, np.where(sh >= 32, 0, a.view(np.uint32) >> np.minimum(sh, 31)).astype(np.uint32))
    got = _probe("mul.hi.s32 %d, %a0, %a1;", ["s32", "s32"], "s32", a, b)
    assert np.array_equal(got, ((a.astype(np.int64) * b) >> 32).astype(np.int32))
    got = _probe("mul.wide.s32 %d, %a0, %a1;", ["s32", "s32"], "s64", a, b)
    assert np.array_equal(got, a.astype(np.int64) * b)
    a64, b64 = K.int_inputs(np.uint64)
    got = _probe("mul.hi.u64 %d, %a0, %a1;", ["u64", "u64"], "u64", a64, b64)
    assert [int(x) for x in got] == [(int(x) * int(y)) >> 64 for x, y in zip(a64, b64)]
    s64a, s64b = K.int_inputs(np.int64)
    got = _probe("mul.hi.s64 %d, %a0, %a1;", ["s64", "s64"], "s64", s64a, s64b)
    assert [int(x) for x in got] == [(int(x) * int(y)) >> 64 for x, y in zip(s64a, s64b)]
    u = a.view(np.uint32)
    assert np.array_equal(_probe("popc.b32 %d, %a0;", ["b32"], "u32", u), [bin(int(x)).count("1") for x in u])
    assert np.array_equal(_probe("clz.b32 %d, %a0;", ["b32"], "u32", u), [32 - int(x).bit_length() for x in u])
    assert np.array_equal(_probe("brev.b32 %d, %a0;", ["b32"], "b32", u),
                          [int(f"{int(x):032b}"[::-1], 2) for x in u])
    assert np.array_equal(_probe("clz.b64 %d, %a0;", ["b64"], "u32", a64), [64 - int(x).bit_length() for x in a64])


def test_setp_nan_orderings():
    a, b = K.float_inputs(np.float32)
    nan = np.isnan(a) | np.isnan(b)
    for c, ref in [("eq", a == b), ("ne", (a != b) & ~nan), ("lt", a < b), ("geu", ~(a < b)),
                   ("neu", a != b), ("equ", (a == b) | nan), ("num", ~nan), ("nan", nan)]:
        got = _probe(f"setp.{c}.f32 %d, %a0, %a1;", ["f32", "f32"], "pred", a, b)
        assert np.array_equal(got.astype(bool), ref), c
    got = _probe("setp.lt.and.f32 %d|%q, %a0, %a1, %a2;", ["f32", "f32", "pred"], "pred", a, b,
                 (np.arange(a.size) % 2).astype(np.uint8))
    assert np.array_equal(got.astype(bool), (a < b) & (np.arange(a.size) % 2 == 1))


def test_cvt_rounding_and_saturation():
    a, _ = K.float_inputs(np.float32)
    with np.errstate(all="ignore"):
        for r, f in [("rni", np.rint), ("rzi", np.trunc), ("rmi", np.floor), ("rpi", np.ceil)]:
            got = _probe(f"cvt.{r}.s32.f32 %d, %a0;", ["f32"], "s32", a)
            x = f(a.astype(np.float64))
            want = np.where(np.isnan(x), 0, np.clip(np.nan_to_num(x), -2**31, 2**31 - 1)).astype(np.int32)
            assert np.array_equal(got, want), r
            assert np.array_equal(_probe(f"cvt.{r}.f32.f32 %d, %a0;", ["f32"], "f32", a), f(a), equal_nan=True)
        got = _probe("cvt.rzi.u32.f32 %d, %a0;", ["f32"], "u32", a)
        x = np.trunc(a.astype(np.float64))
        assert np.array_equal(got, np.where(np.isnan(x), 0, np.clip(np.nan_to_num(x), 0, 2**32 - 1)).astype(np.uint32))
        i, _ = K.int_inputs(np.int64)
        assert np.array_equal(_probe("cvt.rn.f32.s64 %d, %a0;", ["s64"], "f32", i),
                              [np.float32(float(int(v))) if abs(int(v)) < 2**53 else
                               np.float32(K.round_fraction_f32(__import__("fractions").Fraction(int(v)), float(v)))
                               for v in i])
        num = ~np.isnan(a)
        assert _bits_equal(_probe("cvt.rn.f16.f32 %d, %a0;", ["f32"], "b16", a)[num], a[num].astype(np.float16))
        h = np.arange(0, 65536, 7, dtype=np.uint16)
        assert np.array_equal(_probe("cvt.f32.f16 %d, %a0;", ["b16"], "f32", h), h.view(np.float16).astype(np.float32),
                              equal_nan=True)


def test_shuffles():
    n = 64
    x = np.arange(n, dtype=np.uint32) * 10
    lane = np.arange(n) % 32
    for mode, c, src in [("down", 0x1F, np.where(lane + 3 <= 31, lane + 3, lane)),
                         ("up", 0x0, np.where(lane - 3 >= 0, lane - 3, lane)),
                         ("bfly", 0x1F, lane ^ 3),
                         ("idx", 0x1F, np.full(n, 3)),
                         ("down", 0x181F, np.where((lane + 3) <= (lane & 0x18 | 7), lane + 3, lane))]:
        got = _probe(f"shfl.sync.{mode}.b32 %d, %a0, %a1, %a2, 0xffffffff;", ["b32", "u32", "u32"], "b32",
                     x, np.full(n, 3, np.uint32), np.full(n, c, np.uint32))
        assert np.array_equal(got, (np.arange(n) // 32 * 32 + src) * 10), (mode, hex(c))


def test_atomics_in_thread_order():
    ptx = K.HEADER + """
.visible .entry k(.param .u64 p_sum, .param .u64 p_ctr, .param .u64 p_old, .param .u64 p_x)
{
    .reg .u32 %r<6>;
    .reg .u64 %rd<8>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [p_sum];
    ld.param.u64 %rd2, [p_ctr];
    ld.param.u64 %rd3, [p_old];
    ld.param.u64 %rd4, [p_x];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.u32 %r4, %r1, %r2, %r3;
    mul.wide.u32 %rd5, %r4, 4;
    add.s64 %rd6, %rd4, %rd5;
    ld.global.f32 %f1, [%rd6];
    red.global.add.f32 [%rd1], %f1;
    atom.global.add.u32 %r5, [%rd2], 1;
    add.s64 %rd7, %rd3, %rd5;
    st.global.u32 [%rd7], %r5;
    ret;
}
"""
    x = np.random.default_rng(0).standard_normal(256).astype(np.float32)
    s, ctr, old = np.zeros(1, np.float32), np.zeros(1, np.uint32), np.zeros(256, np.uint32)
    _run(ptx, "k", (2, 1, 1), (128, 1, 1), [s, ctr, old, x])
    assert ctr[0] == 256 and np.array_equal(old, np.arange(256))
    want = np.float32(0)
    for v in x:
        want = np.float32(want + v)
    assert s[0] == want


# -- every instruction of the printer's PTX_SUBSET ------------------------------------------

_REG = {"pred": "%p1", "u32": "%r1", "s32": "%r1", "b32": "%r1", "u64": "%rd1", "s64": "%rd1", "b64": "%rd1",
        "f32": "%f1", "f64": "%fd1", "b16": "%h1", "f16": "%h1", "u8": "%r1", "s8": "%r1"}


def _subset_line(entry):
    """One instruction of a PTX_SUBSET entry with plausible operands."""
    parts = entry.split(".")
    op = parts[0]
    types = [p for p in parts if p in S._DTYPES]
    t = types[-1] if types else None
    r = _REG.get(t)
    vec = next((int(p[1]) for p in parts if p in ("v2", "v4")), 1)
    if op == "ld":
        if "param" in parts:
            return f"{entry} {r}, [p_{t}];"
        addr = "[%r2]" if "shared" in parts else "[%rd2]"
        d = r if vec == 1 else "{" + ", ".join([r] * vec) + "}"
        return f"{entry} {d}, {addr};"
    if op == "st":
        addr = "[%r2]" if "shared" in parts else "[%rd2]"
        s = r if vec == 1 else "{" + ", ".join([r] * vec) + "}"
        return f"{entry} {addr}, {s};"
    if op in ("bra",):
        return f"{entry} $L_end;"
    if op == "ret":
        return "ret;"
    if op == "bar":
        return "bar.sync 0;"
    if op == "shfl":
        return f"{entry} %r1, %r2, 1, 0x1f, 0xffffffff;"
    if op == "mma" and "s8" in parts:
        return f"{entry} {{%r1, %r1, %r1, %r1}}, {{%r1, %r1, %r1, %r1}}, {{%r1, %r1}}, {{%r1, %r1, %r1, %r1}};"
    if op == "mma":
        return f"{entry} {{%f1, %f1, %f1, %f1}}, {{%hh1, %hh1, %hh1, %hh1}}, {{%hh1, %hh1}}, {{%f1, %f1, %f1, %f1}};"
    if entry == "cp.async.wait_all":
        return f"{entry};"
    if op == "cp":
        return f"{entry} [%r2], [%rd2], 16, %r1;"
    if op == "ldmatrix":
        n = int(next(p for p in parts if p in ("x1", "x2", "x4"))[1])
        return f"{entry} {{{', '.join(['%hh1'] * n)}}}, [%r2];"
    if op in ("red", "atom"):
        return f"{entry} [%rd2], {r};" if op == "red" else f"{entry} {r}, [%rd2], {r};"
    if op == "cvta":
        return f"{entry} %rd1, %rd2;"
    if op == "cvt":
        return f"{entry} {_REG[types[0]]}, {_REG[types[1]]};"
    if op == "setp":
        return f"{entry} %p1, {r}, {r};"
    if op == "testp":
        return f"{entry} %p1, {r};"
    if op == "selp":
        return f"{entry} {r}, {r}, {r}, %p1;"
    if op == "mul" and "wide" in parts:
        return f"{entry} %rd1, %r1, %r2;"
    if op in ("fma", "mad", "dp4a"):
        return f"{entry} {r}, {r}, {r}, {r};"
    if op in ("mov", "neg", "abs", "not", "sqrt", "rcp", "ex2", "lg2", "sin", "cos", "rsqrt", "tanh"):
        return f"{entry} {r}, {r};"
    if op in ("shl", "shr"):
        return f"{entry} {r}, {r}, %r2;"
    return f"{entry} {r}, {r}, {r};"


def _subset():
    try:
        from tfc.backends.cuda.ptx import PTX_SUBSET
    except ImportError as e:
        pytest.skip(f"the PTX printer (tfc/backends/cuda/ptx.py): {e}")
    return PTX_SUBSET


def _subset_kernel(line):
    return K.HEADER + (".visible .entry k(.param .u32 p_u32, .param .u64 p_u64, .param .f32 p_f32, "
                       ".param .f64 p_f64)\n{\n    .reg .pred %p<3>;\n    .reg .u32 %r<3>;\n"
                       "    .reg .u64 %rd<3>;\n    .reg .f32 %f<3>;\n    .reg .f64 %fd<3>;\n"
                       "    .reg .b16 %h<3>;\n    .reg .b32 %hh<3>;\n    .shared .align 16 .b8 s[64];\n"
                       f"    {line}\n$L_end:\n    ret;\n}}\n")


def test_every_subset_instruction_runs():
    missing = []
    for entry in sorted(_subset()):
        try:
            S.parse(_subset_kernel(_subset_line(entry)))
        except S.SimulationError as e:
            missing.append(f"{entry}: {e}")
    assert not missing, "\n".join(missing)


def test_subset_lines_are_real_ptx():
    ptxas = _ptxas()
    subset = _subset()
    text = K.HEADER + ".visible .entry k(.param .u32 p_u32, .param .u64 p_u64, .param .f32 p_f32, " \
        ".param .f64 p_f64)\n{\n    .reg .pred %p<3>;\n    .reg .u32 %r<3>;\n    .reg .u64 %rd<3>;\n" \
        "    .reg .f32 %f<3>;\n    .reg .f64 %fd<3>;\n    .reg .b16 %h<3>;\n    .reg .b32 %hh<3>;\n" \
        "    .shared .align 16 .b8 s[64];\n" + \
        "".join(f"    {_subset_line(e)}\n" for e in sorted(subset)) + "$L_end:\n    ret;\n}\n"
    ptxas.assemble(text, "sm_80")


def test_testp_nan_is_not_ptx():
    """``testp.nan`` is refused by ptxas ("Comparison qualifier is not
    allowed") and by the simulator: the NaN test is ``testp.notanumber``."""
    ptxas = _ptxas()
    for t in ("f32", "f64"):
        with pytest.raises(Exception, match="not allowed"):
            ptxas.assemble(_subset_kernel(_subset_line(f"testp.nan.{t}")), "sm_80")
        with pytest.raises(S.SimulationError):
            S.parse(_subset_kernel(_subset_line(f"testp.nan.{t}")))
        ptxas.assemble(_subset_kernel(_subset_line(f"testp.notanumber.{t}")), "sm_80")


# -- the printer's kernels (tests/gpu_kernels.py, tfc/backends/cuda/ptx.py) ---------------------

def _gpu_kernels():
    try:
        import gpu_kernels as G
        from tfc.backends.cuda.ptx import to_ptx
    except ImportError as e:
        pytest.skip(f"the PTX printer or tests/gpu_kernels.py: {e}")
    return G, to_ptx


def test_printer_kernels():
    G, to_ptx = _gpu_kernels()
    rng = np.random.default_rng(0)
    for build in G.ALL:
        case = build()
        ptx = to_ptx(case.module())
        if case.name == "matmul16":
            sizes = [((37, 29), (29, 45)), ((16, 16), (16, 16)), ((3, 0), (0, 5))]
            ins_list = [[rng.standard_normal(a).astype(np.float32), rng.standard_normal(b).astype(np.float32)]
                        for a, b in sizes]
        else:
            nin = case.args.__code__.co_argcount
            ins_list = [[rng.standard_normal(n).astype(np.float32) for _ in range(nin)] for n in (0, 1, 1001, 70_001)]
        for ins in ins_list:
            args = case.args(*ins)
            prog = S.parse(ptx)
            S.run(prog, case.name, case.grid(*ins), case.block, args, S.Memory())
            for i, want in zip(case.outputs, case.reference(*ins)):
                if case.name == "ew":  # mul.rn then add.rn: numpy's a * b + a bit for bit
                    assert _bits_equal(args[i], want)
                else:
                    np.testing.assert_allclose(args[i], want, rtol=1e-5, atol=1e-4)


def test_mma_fragments():
    """tgpu.mma through the printer and the simulator: each lane loads the
    elements PTX's fragment layout gives it, and the warp's product is A B
    (integers: exact in float32 whatever the order). A layout mistake in
    either the kernel or the simulator's reading of the registers moves
    elements and fails; a permutation-sensitive A (distinct rows and columns)
    checks every position."""
    G, to_ptx = _gpu_kernels()
    case = G.mma_kernel()
    prog = S.parse(to_ptx(case.module()))
    rng = np.random.default_rng(5)
    for a, b in [(np.arange(256).reshape(16, 16) % 23 - 11, np.arange(128).reshape(16, 8) % 7 - 3),
                 (rng.integers(-8, 9, (16, 16)), rng.integers(-8, 9, (16, 8)))]:
        a, b = a.astype(np.float16), b.astype(np.float16)
        args = case.args(a, b)
        S.run(prog, case.name, case.grid(a, b), case.block, args, S.Memory())
        assert np.array_equal(args[2], case.reference(a, b)[0])
    # unit vectors: C's element (i, j) is A's (i, p) for B = e_p e_j^T, so each lane's A elements
    # are where the layout puts them
    a = (np.arange(256).reshape(16, 16) / 8).astype(np.float16)
    for p in (0, 1, 7, 8, 9, 15):
        b = np.zeros((16, 8), np.float16)
        b[p, 3] = 1
        args = case.args(a, b)
        S.run(prog, case.name, (1, 1, 1), case.block, args, S.Memory())
        want = np.zeros((16, 8), np.float32)
        want[:, 3] = a[:, p]
        assert np.array_equal(args[2], want), p


def test_mma_needs_the_whole_warp():
    G, to_ptx = _gpu_kernels()
    case = G.mma_kernel()
    ptx = to_ptx(case.module()).replace(".reqntid 32, 1, 1", ".reqntid 16, 1, 1")
    a, b = np.ones((16, 16), np.float16), np.ones((16, 8), np.float16)
    with pytest.raises(S.SimulationError, match="mma.sync .* partial"):
        S.run(S.parse(ptx), case.name, (1, 1, 1), (16, 1, 1), case.args(a, b), S.Memory())


def test_printer_op_kernels():
    G, to_ptx = _gpu_kernels()
    rng = np.random.default_rng(1)
    bad = []
    for entry in G.OP_TABLE:
        case = G.op_kernel(entry)
        ins = [g(rng, 1001) for g in entry[4]]
        args = case.args(*ins)
        with np.errstate(all="ignore"):
            S.run(S.parse(to_ptx(case.module())), case.name, case.grid(*ins), case.block, args, S.Memory())
            want = case.reference(*ins)[0]
        got = args[case.outputs[0]]
        if entry[6] is True:  # the same bits (signed zeros included), NaN payloads aside
            same = _bits_equal(got, want) or (got.dtype.kind == "f" and _bits_equal_nan(got, want))
        else:
            same = np.allclose(got, want, rtol=1e-6, equal_nan=True)
        if not same:
            u = f"u{got.dtype.itemsize}"
            ok = got.view(u) == want.view(u)
            if got.dtype.kind == "f":
                ok |= (np.isnan(got) & np.isnan(want)) if entry[6] is True else np.isclose(got, want, 1e-6)
            i = int(np.flatnonzero(~ok)[0])
            bad.append(f"{entry[0]}: inputs {[x[i] for x in ins]} -> {got[i]!r}, numpy {want[i]!r}")
    assert not bad, "\n".join(bad)


# -- every kernel here is real PTX -----------------------------------------------------------

@pytest.mark.parametrize("name", sorted(K.GOOD) + ["SPECIALS", "REVERSE_DYNAMIC", "SGEMM_NO_BARRIER",
                                                  "BLOCK_SUM_BARRIER_IN_BOUNDS",
                                                  "FMA_F32_NO_BOUNDS", "probe"])
def test_kernels_assemble_for_sm80(name):
    ptxas = _ptxas()
    text = K.GOOD.get(name) or (getattr(K, name) if name != "probe" else None) or K.probe(
        "fma.rn.f32 %d, %a0, %a1, %a2;\nsetp.lt.and.f32 %q, %a0, %a1, %q;\nselp.f32 %d, %d, %a0, %q;",
        ["f32"] * 3, "f32")
    ptxas.assemble(text, "sm_80")


# -- the simulated driver ------------------------------------------------------------------------

def test_simulated_driver_end_to_end():
    from tfc.backends.cuda.sim_driver import SimulatedDriver
    from tfc.core.errors import CompileError
    d = SimulatedDriver()
    assert (d.name, d.device_name, d.compute_capability) == ("simulator", "tfc PTX simulator", (9, 0))
    n = 1001
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    ptrs = [d.alloc(n * 4) for _ in range(4)]
    assert all(p % 256 == 0 for p in ptrs) and len(set(ptrs)) == 4
    for p, x in zip(ptrs, (a, b, c)):
        d.copy_htod(p, x)
    mod = d.load_module(K.FMA_F32)
    f = d.function(mod, "fma_f32")
    d.launch(f, (4, 1, 1), (256, 1, 1), [np.uint64(p) for p in ptrs] + [np.uint64(n)])
    d.synchronize()
    out = np.empty(n, np.float32)
    d.copy_dtoh(out, ptrs[3])
    assert _bits_equal(out, K.fma_f32_exact(a, b, c))
    d.copy_dtod(ptrs[0], ptrs[3], n * 4)
    d.memset(ptrs[1], 0, 8)
    d.copy_dtoh(out, ptrs[0])
    assert _bits_equal(out, K.fma_f32_exact(a, b, c))
    d.copy_dtoh(out[:2], ptrs[1])
    assert (out[:2] == 0).all()
    d.launch(f, (0, 1, 1), (256, 1, 1), [np.uint64(p) for p in ptrs] + [np.uint64(n)])
    assert d.stats["launches"] == 1 and d.stats["empty_launches"] == 1 and d.stats["allocs"] == 4
    assert d.stats["htod"] == 3 and d.stats["dtoh"] == 3 and d.stats["modules"] == 1
    assert d.launches == [("fma_f32", (4, 1, 1), (256, 1, 1))]
    # launched with other argument types than the first time: what a real driver refuses
    with pytest.raises(TypeError):
        d.launch(f, (4, 1, 1), (256, 1, 1), [np.uint64(p) for p in ptrs] + [np.int64(n)])
    # use after free, double free
    d.free(ptrs[3])
    with pytest.raises(S.SimulationError, match="freed"):
        d.launch(f, (4, 1, 1), (256, 1, 1), [np.uint64(p) for p in ptrs] + [np.uint64(n)])
    with pytest.raises(S.SimulationError, match="freed"):
        d.copy_dtoh(out, ptrs[3])
    with pytest.raises(S.SimulationError, match="freed twice"):
        d.free(ptrs[3])
    z = d.alloc(0)
    d.copy_htod(z, np.zeros(0, np.float32))
    with pytest.raises(S.SimulationError, match="outside every allocation"):
        d.copy_htod(z, np.zeros(1, np.float32))
    # what the JIT refuses: CompileError
    with pytest.raises(CompileError, match="Unsupported .version 9.1"):
        d.load_module(K.FMA_F32.replace(".version 8.0", ".version 9.1"))
    with pytest.raises(CompileError, match="unknown register"):
        d.load_module(K.FMA_F32.replace("%f4, %f1", "%f9, %f1"))
    with pytest.raises(CompileError, match="sm_100"):
        d.load_module(K.FMA_F32.replace("sm_80", "sm_100"))
    from tfc.backends.cuda.driver import CudaError
    with pytest.raises(CudaError, match="no such kernel"):
        d.function(mod, "nope")


def test_get_driver_simulator(monkeypatch):
    from tfc.backends.cuda import driver
    monkeypatch.setattr(driver, "_drivers", {})
    monkeypatch.setenv("TFC_CUDA_DRIVER", "simulator")
    d = driver.get_driver()
    assert d.name == "simulator" and isinstance(d, driver.Driver)


def test_gpu_check_probes_are_real_ptx_and_run():
    """The probes of tools/ptx_sim_gpu_check.py (one instruction each, compared
    with an H100 there) assemble for sm_80 and run here."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", "ptx_sim_gpu_check.py")
    spec = importlib.util.spec_from_file_location("ptx_sim_gpu_check", path)
    chk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chk)
    probes = chk.probes()
    assert len(probes) > 200
    rng = np.random.default_rng(0)
    for name, body, srcs, dst, kind in probes:
        inp = chk.inputs(srcs, kind, name, rng)
        n = len(inp[0])
        out = np.zeros(n, chk.NP[dst])
        with np.errstate(all="ignore"):
            _run(K.probe(body, srcs, dst), "probe", (-(-n // 128), 1, 1), (128, 1, 1), inp + [out, np.uint32(n)])
    ptxas = _ptxas()
    module = K.HEADER + "".join(K.probe(body, srcs, dst, name=f"probe{i}")[len(K.HEADER):]
                                for i, (name, body, srcs, dst, kind) in enumerate(probes))
    ptxas.assemble(module, "sm_80")


def test_register_typing_agrees_with_ptxas():
    ptxas = _ptxas()
    base = K.HEADER + (".visible .entry k(.param .u64 p)\n{\n    .reg .f32 %f<2>;\n    .reg .u32 %r<2>;\n"
                       "    .reg .pred %p<2>;\n    .reg .b32 %b<2>;\n    mov.f32 %f1, 0f00000000;\n"
                       "    mov.u32 %r1, 0;\n    mov.b32 %b1, 0;\n    {}\n    st.global.f32 [p], %f1;\n"
                       "    ret;\n}\n").replace("[p]", "[%rd1]").replace(".reg .b32 %b<2>;", ".reg .b32 %b<2>;\n"
                                                                             "    .reg .u64 %rd<2>;")
    for ok in ("add.rn.f32 %f1, %f1, %b1;", "add.s32 %r1, %r1, 1;", "mov.b32 %f1, %r1;",
               "ld.global.v2.f32 {%r1, %r1}, [%rd1];", "st.global.v2.f32 [%rd1], {%r1, %r1};",
               "ld.global.b32 %f1, [%rd1];", "cvt.rn.f32.s32 %f1, %r1;", "and.b32 %r1, %f1, %r1;",
               "shfl.sync.down.b32 %f1, %r1, 1, 0x1f, 0xffffffff;", "cvt.u32.u64 %r1, %rd1;",
               "cvt.s32.s8 %r1, %r1;", "ld.global.u8 %r1, [%rd1];"):
        text = base.replace("{}", ok)
        ptxas.assemble(text, "sm_80")
        S.parse(text)
    for bad in ("add.rn.f32 %f1, %f1, %r1;", "setp.lt.s32 %p1, %f1, 0;", "mov.f32 %f1, %r1;",
                "ld.global.f32 %r1, [%rd1];", "st.global.f32 [%rd1], %r1;", "selp.f32 %f1, %r1, %f1, %p1;",
                "cvt.u64.u32 %rd1, %f1;", "red.global.add.u32 [%rd1], %f1;", "ld.global.u32 %f1, [%rd1];",
                "add.u32 %r1, %rd1, 1;", "and.b32 %r1, %rd1, 1;", "mov.u32 %r1, %rd1;", "add.u64 %rd1, %r1, 1;"):
        text = base.replace("{}", bad)
        with pytest.raises(Exception, match="Arguments mismatch"):
            ptxas.assemble(text, "sm_80")
        with pytest.raises(S.PTXSyntaxError, match="Arguments mismatch"):
            S.parse(text)


def test_simulated_driver_with_ptxas():
    _ptxas()
    from tfc.backends.cuda.sim_driver import SimulatedDriver
    from tfc.core.errors import CompileError
    d = SimulatedDriver(check_ptxas=True)
    d.load_module(K.SGEMM_TILED16)
    # register-typed PTX the simulator would run but ptxas refuses (a .u64 operation on a .u32 register)
    bad = K.FMA_F32.replace("cvt.u64.u32         %rd7, %r3;", "add.s64             %rd7, %r3, 0;")
    with pytest.raises(CompileError, match="ptxas|Arguments mismatch|register"):
        d.load_module(bad)
    assert d.stats["modules"] == 1


_WRITE0 = K.HEADER + """
.visible .entry w0(.param .u64 p_out, .param .u32 p_same)
{
    .reg .pred %p<3>;
    .reg .u32 %r<4>;
    .reg .u64 %rd<2>;
    ld.param.u64 %rd1, [p_out];
    ld.param.u32 %r3, [p_same];
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    setp.ne.u32 %p2, %r3, 0;
    @%p2 mov.u32 %r2, 7;
    setp.ne.u32 %p1, %r1, 0;
    WHO
    st.global.u32 [%rd1], %r2;
    ret;
}
"""


def test_global_write_races(monkeypatch):
    out = np.zeros(1, np.uint32)
    one_per_block = _WRITE0.replace("WHO", "@%p1 ret;")
    with pytest.raises(S.SimulationError, match=r"global-memory race: write of .* block \(0, 0, 0\) thread "
                                                r"\(0, 0, 0\) in the same launch, with another value"):
        _run(one_per_block, "w0", (2, 1, 1), (32, 1, 1), [out, np.uint32(0)])
    _run(one_per_block, "w0", (2, 1, 1), (32, 1, 1), [out, np.uint32(1)])   # the same value: benign
    assert out[0] == 7
    with monkeypatch.context() as mp:   # one block per chunk: the blocks' writes meet across chunks
        mp.setattr(S, "_CHUNK_THREADS", 32)
        with pytest.raises(S.SimulationError, match=r"block \(1, 0, 0\) thread \(0, 0, 0\): global-memory race: "
                                                    r"write of .* by block \(0, 0, 0\) thread \(0, 0, 0\)"):
            _run(one_per_block, "w0", (2, 1, 1), (32, 1, 1), [out, np.uint32(0)])
    every_thread = _WRITE0.replace("WHO", "").replace("@%p2 mov.u32 %r2, 7;", "@%p2 mov.u32 %r2, 7;\n"
                                                      "    @!%p2 mov.u32 %r2, %tid.x;")
    with pytest.raises(S.SimulationError, match="in the same instruction as block"):
        _run(every_thread, "w0", (1, 1, 1), (32, 1, 1), [out, np.uint32(0)])
    _run(every_thread, "w0", (1, 1, 1), (32, 1, 1), [out, np.uint32(1)])
    ptxas = _ptxas()
    ptxas.assemble(one_per_block, "sm_80")


def test_divergent_bra_uni():
    # the bounds check of fma_f32 as bra.uni: threads of the last warp disagree
    uni = K.FMA_F32.replace("@%p1 bra            $L_done;", "@%p1 bra.uni        $L_done;")
    x = np.ones(100, np.float32)
    with pytest.raises(S.SimulationError, match=r"bra.uni whose guard differs .* \(28 of 32 take it\)"):
        _run(uni, "fma_f32", (1, 1, 1), (128, 1, 1), [x, x, x, np.zeros_like(x), np.uint64(100)])
    y = np.ones(96, np.float32)   # whole warps agree: fine
    _run(uni, "fma_f32", (1, 1, 1), (128, 1, 1), [y, y, y, np.zeros_like(y), np.uint64(96)])


def test_predicate_read_before_written():
    # %p1 is set only on one path, then guards a store for every thread
    ptx = K.HEADER + """
.visible .entry k(.param .u64 p_out)
{
    .reg .pred %p<3>;
    .reg .u32 %r<3>;
    .reg .u64 %rd<3>;
    ld.param.u64 %rd1, [p_out];
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p2, %r1, 16;
    @%p2 bra $L_skip;
    setp.lt.u32 %p1, %r1, 24;
$L_skip:
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd2, %rd1, %rd2;
    @%p1 st.global.u32 [%rd2], %r1;
    ret;
}
"""
    out = np.zeros(32, np.uint32)
    with pytest.raises(S.SimulationError, match=r"thread \(0, 0, 0\): predicate %p1 read before this thread wrote it"):
        _run(ptx, "k", (1, 1, 1), (32, 1, 1), [out])
    _run(ptx.replace("@%p2 bra $L_skip;", "setp.ne.u32 %p1, %r1, %r1;\n    @%p2 bra $L_skip;"), "k",
         (1, 1, 1), (32, 1, 1), [out])
    assert out.tolist() == [0] * 16 + list(range(16, 24)) + [0] * 8
