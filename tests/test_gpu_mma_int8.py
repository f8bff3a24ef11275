"""int8 tensor cores (issue #18 point 4: ``tgpu.mma m16n8k32``, PTX
``mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32``; the quantized matmul's
kernel on target="cuda" from 16 rows of x, tfc/passes/gpu_quant_library.py).

The dialect op round-trips; the simulator's reading of the fragment
registers is checked against the PTX ISA's "Matrix Fragments for
mma.m16n8k32" table, written out here a second time (a kernel whose lanes
load exactly what the table gives them, random and unit-vector matrices,
int32 wrap-around at the extremes); the quantized matmul through the mma
kernel is bit-identical to the numpy backend for odd M, N, K (K past one
step of 32 and past 1024, N past one warp's 32 columns), relu, int8 and
float32 results, per-channel and per-tensor multipliers, a strided x; small
M keeps dp4a; ptxas assembles the kernel for sm_80 and sm_90 within the
matmul budget."""
from __future__ import annotations

import numpy as np
import pytest

import tfc
from tfc.ops import quant as q

pytest.importorskip("tfc.backends.cuda.simulator", reason="the PTX simulator has not landed")
from test_lower_gpu import check_budgets, l3_of, lower  # noqa: E402

RNG = np.random.default_rng(1832)


def int8(shape, lo=-128, hi=127):
    return RNG.integers(lo, hi + 1, shape).astype(np.int8)


# -- the instruction ---------------------------------------------------------------------------------


def mma_s8_kernel_ptx():
    """Lane l of one warp: d(4) = mma(a = A[l, 0:4], b = B[l, 0:2], c = C[l, 0:4]), stored to D[l, 0:4]
    (per-lane registers as given, so the test decides every fragment's contents)."""
    from xdsl.dialects import gpu
    from xdsl.dialects.builtin import StringAttr, i32
    from xdsl.ir import Block, Region

    from tfc.backends.cuda.ptx import to_ptx
    from tfc.dialects import gpu as G
    from tfc.passes.gpu_builder import KernelBuilder

    kb = KernelBuilder("mma_s8_test", [G.PtrType(i32, "global")] * 4, "matmul", i32, (32, 1, 1))
    pa, pb, pc, pd = kb.args
    lane = kb.tid()

    def regs(ptr, n):
        return [kb.load(ptr, kb.add(kb.mul(lane, kb.i(n)), kb.i(j)))[0] for j in range(n)]
    d = kb.emit(G.MmaOp(regs(pa, 4), regs(pb, 2), regs(pc, 4))).results
    for j, v in enumerate(d):
        kb.store([v], pd, kb.add(kb.mul(lane, kb.i(4)), kb.i(j)))
    return to_ptx(gpu.ModuleOp(StringAttr("kernels"), Region(Block([kb.finish()]))))


def fragments(A, B, C):
    """Per lane, its registers as the PTX ISA's table places the elements (g = lane >> 2,
    t = lane % 4): a_i (i < 16) at row g + 8 for 4 <= i < 8 and i >= 12 (else g), column
    4t + (i & 3) + 16 for i >= 8; b_i (i < 8) at row 4t + (i & 3) + 16 for i >= 4, column g;
    c_i at row g + 8 for i >= 2, column 2t + (i & 1). Four int8 elements per .b32, a0 lowest."""
    a = np.zeros((32, 16), np.int8)
    b = np.zeros((32, 8), np.int8)
    c = np.zeros((32, 4), np.int32)
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        for i in range(16):
            row = g + 8 if (4 <= i < 8 or i >= 12) else g
            a[lane, i] = A[row, 4 * t + (i & 3) + (16 if i >= 8 else 0)]
        for i in range(8):
            b[lane, i] = B[4 * t + (i & 3) + (16 if i >= 4 else 0), g]
        for i in range(4):
            c[lane, i] = C[g + (8 if i >= 2 else 0), 2 * t + (i & 1)]
    return a.view(np.int32), b.view(np.int32), c


def unfragment(d):
    D = np.zeros((16, 8), np.int32)
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        for i in range(4):
            D[g + (8 if i >= 2 else 0), 2 * t + (i & 1)] = d[lane, i]
    return D


def run_mma(A, B, C):
    from tfc.backends.cuda import simulator as S

    a, b, c = fragments(A, B, C)
    d = np.zeros((32, 4), np.int32)
    S.run(S.parse(mma_s8_kernel_ptx()), "mma_s8_test", (1, 1, 1), (32, 1, 1),
          [a.ravel().copy(), b.ravel().copy(), c.ravel().copy(), d], S.Memory())
    return unfragment(d)


def test_mma_s8_follows_the_fragment_table():
    for _ in range(3):
        A, B = int8((16, 32)), int8((32, 8))
        C = RNG.integers(-2 ** 20, 2 ** 20, (16, 8)).astype(np.int32)
        want = (A.astype(np.int64) @ B.astype(np.int64) + C).astype(np.int32)
        assert np.array_equal(run_mma(A, B, C), want)
    # unit vectors: with B = e_p e_j^T, column j of D is column p of A (every A position checked)
    A = (np.arange(16 * 32).reshape(16, 32) % 251 - 125).astype(np.int8)
    for p in (0, 3, 4, 15, 16, 17, 28, 31):
        B = np.zeros((32, 8), np.int8)
        B[p, 5] = 1
        want = np.zeros((16, 8), np.int32)
        want[:, 5] = A[:, p]
        assert np.array_equal(run_mma(A, B, np.zeros((16, 8), np.int32)), want), p


def test_mma_s8_wraps_in_int32():
    A, B = np.full((16, 32), -128, np.int8), np.full((32, 8), -128, np.int8)  # each sum 32 * 16384 = 2^19
    C = np.full((16, 8), 2 ** 31 - 2 ** 18, np.int32)
    C[1] = -2 ** 31
    want = (A.astype(np.int64) @ B.astype(np.int64) + C).astype(np.int32)  # the low 32 bits
    got = run_mma(A, B, C)
    assert np.array_equal(got, want) and got[0, 0] == -2 ** 31 + 2 ** 18 and got[1, 0] == -2 ** 31 + 2 ** 19


def test_mma_s8_assembles():
    from tfc.backends.cuda import ptxas

    text = mma_s8_kernel_ptx()
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in text
    if not ptxas.available():
        pytest.skip("ptxas is not installed")
    for arch in ("sm_80", "sm_90"):
        assert "mma_s8_test" in ptxas.assemble(text, arch)


def test_mma_s8_op_round_trips_and_verifies():
    from tfc.dialects.tensor import parse_module, print_ir

    text = """builtin.module {
  gpu.module @kernels {
    gpu.func @k(%a: i32) kernel {
      %d0, %d1, %d2, %d3 = tgpu.mma m16n8k32 a(%a, %a, %a, %a) b(%a, %a) c(%a, %a, %a, %a) : i8 -> i32
      gpu.return
    }
  }
}"""
    m = parse_module(text)
    m.verify()
    assert "tgpu.mma m16n8k32 a(%a, %a, %a, %a) b(%a, %a) c(%a, %a, %a, %a) : i8 -> i32" in print_ir(m)
    with pytest.raises(Exception, match="m16n8k32 takes 4 a, 2 b and 4 c"):
        parse_module(text.replace("b(%a, %a)", "b(%a)")).verify()


# -- the quantized matmul on tensor cores ------------------------------------------------------------


def compiled_pair(fn, x):
    want = tfc.compile(tfc.function(fn), x)(x).numpy()
    conc = tfc.compile(tfc.function(fn), x, target="cuda")
    got = conc(x).numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    return got, want, conc.ptx


@pytest.mark.parametrize("m,k,n", [(16, 32, 8), (37, 70, 29), (20, 1029, 5), (16, 1, 70), (50, 33, 33)])
@pytest.mark.parametrize("relu,out_dtype", [(False, tfc.int8), (True, tfc.int8), (True, tfc.float32)])
def test_quantized_matmul_on_tensor_cores_is_bit_identical(cuda_driver, m, k, n, relu, out_dtype):
    x, w = int8((m, k)), int8((k, n))
    bias = RNG.integers(-2 ** 12, 2 ** 12, n).astype(np.int32)
    acc = x.astype(np.int64) @ w.astype(np.int64) + bias
    mult = RNG.uniform(0.7, 1.0, n).astype(np.float32) * np.float32(250 / max(np.abs(acc).max(initial=1), 1))
    got, want, ptx = compiled_pair(lambda x: q.quantized_matmul(x, w, bias, mult, out_zero_point=-5, relu=relu,
                                                                out_dtype=out_dtype), x)
    assert "mma.sync.aligned.m16n8k32" in ptx and "dp4a" not in ptx
    assert np.array_equal(got, want)
    if out_dtype == tfc.int8:
        assert len(np.unique(got)) > 3


def test_extremes_wrap_as_numpy_and_a_per_tensor_multiplier(cuda_driver):
    k = 1100  # every product +16384 and a bias near INT_MAX: the int32 sum wraps, as numpy's
    x, w = np.full((17, k), -128, np.int8), np.full((k, 2), -128, np.int8)
    x[1] = 127
    bias = np.array([2 ** 31 - 1 - k * 16384 + 5, -7], np.int32)
    mult = np.array([3e-9], np.float32)
    for out_dtype in (tfc.int8, tfc.float32):
        got, want, ptx = compiled_pair(lambda x: q.quantized_matmul(x, w, bias, mult, out_zero_point=3,
                                                                    out_dtype=out_dtype), x)
        assert "m16n8k32" in ptx and np.array_equal(got, want)


def test_strided_x_and_small_batches_keep_dp4a(cuda_driver):
    x, w = int8((40, 90)), int8((45, 12))
    bias, mult = RNG.integers(-99, 99, 12).astype(np.int32), np.full(12, 2e-3, np.float32)
    got, want, ptx = compiled_pair(lambda x: q.quantized_matmul(x[::2, 1::2], w, bias, mult), x)
    assert "m16n8k32" in ptx and np.array_equal(got, want)
    got, want, ptx = compiled_pair(lambda x: q.quantized_matmul(x[:15, :45], w, bias, mult), x)
    assert "m16n8k32" not in ptx and "dp4a" in ptx and np.array_equal(got, want)


def test_mma_kernel_assembles_within_budget():
    x, w = int8((64, 300)), int8((300, 40))
    bias, mult = RNG.integers(-99, 99, 40).astype(np.int32), np.full(40, 1e-3, np.float32)
    m = lower(l3_of(lambda x: q.quantized_matmul(x, w, bias, mult, relu=True), x))
    assert str(m).count("tgpu.mma m16n8k32") == 4  # four n-tiles of 8 per warp
    check_budgets(m)


# -- the hand-written tensor-core kernels of tests/gpu_kernels.py on the simulator -------------------


def test_tensor_core_kernels_on_the_simulator():
    """ldmatrix x1/x2/x4 (plain and .trans), mma m16n8k32 and cp.async (partial copies zero-filled)
    against numpy's reading of the PTX ISA (bit for bit), and ptxas for sm_80 and sm_90 within
    their budgets."""
    import gpu_kernels as GK

    from tfc.backends.cuda import ptxas
    from tfc.backends.cuda import simulator as S
    from tfc.backends.cuda.ptx import to_ptx

    for case in GK.tensor_core_kernels()[1:]:  # [0], the f16 mma: tests/test_ptx_simulator.py
        ptx = to_ptx(case.module())
        if case.name.startswith("ldmatrix"):
            num = int(case.name.split("_")[1][1])
            ins = [RNG.standard_normal(64 * num).astype(np.float16)]
        elif case.name.startswith("cp_async"):
            ins = [RNG.standard_normal(256).astype(np.float16)]
        else:
            ins = [RNG.integers(-2 ** 31, 2 ** 31, n).astype(np.int32) for n in (128, 64, 128)]
        args = case.args(*ins)
        S.run(S.parse(ptx), case.name, case.grid(*ins), case.block, args, S.Memory())
        for i, want in zip(case.outputs, case.reference(*ins)):
            assert np.array_equal(args[i].view(np.uint8), want.view(np.uint8)), case.name
        if ptxas.available():
            for arch in ("sm_80", "sm_90"):
                (res,) = ptxas.assemble(ptx, arch).values()
                assert res.spills == 0 and res.registers <= case.budget_registers
                assert res.shared_bytes <= case.budget_shared


def test_the_digits_mlp_quantized_on_tensor_cores(cuda_driver):
    """The digits MLP (examples/mlp_digits.py) quantized static int8 for cuda with a batch of
    40 (its two quantized matmuls on mma m16n8k32): bit for bit the numpy backend's."""
    import os
    import sys

    from tfc.quantization import Config

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
    from mlp_digits import MLP

    model = MLP(seed=0)
    model(tfc.zeros((1, 64)))
    fn = tfc.function(lambda x: model(x), input_signature=[tfc.TensorSpec((40, 64))])
    calibration = [(RNG.uniform(0, 16, (40, 64)).astype(np.float32),) for _ in range(2)]
    x = RNG.uniform(0, 16, (40, 64)).astype(np.float32)
    cpu = tfc.compile(fn, quantize=Config(quiet=True), calibration=calibration)
    gpu = tfc.compile(fn, target="cuda", quantize=Config(quiet=True), calibration=calibration)
    assert gpu.ptx.count("mma.sync.aligned.m16n8k32") >= 2
    assert np.array_equal(gpu(x).numpy(), cpu(x).numpy())
