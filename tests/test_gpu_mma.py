"""float16 matmul on tensor cores (tfc/passes/gpu_mma.py; below 32 rows or
columns the simple kernel, one warp per 16x8 tile; from there the tiled one,
tests/test_gpu_mma_tiled.py: ``tgpu.mma``, PTX
``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32``),
compiled for cuda and run on the PTX simulator (and a GPU where there is
one: the ``gpu`` variants), against numpy's float32 matmul of the float16
inputs: within half a float16 ulp of the result (its rounding) plus the
float32 accumulation bound K 2^-24 (|A| |B|). Odd sizes, K not a multiple of
16 and K = 0, both transpose flags, batches with broadcasting; ptxas for
sm_80 and sm_90 within the matmul budget."""
from __future__ import annotations

import numpy as np
import pytest

import tfc

pytest.importorskip("tfc.backends.cuda.simulator", reason="the PTX simulator has not landed")
from test_lower_gpu import check_budgets, kernels, l3_of, lower  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _check(got, a, b, ta, tb):
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    if ta:
        a32 = np.swapaxes(a32, -1, -2)
    if tb:
        b32 = np.swapaxes(b32, -1, -2)
    want = np.matmul(a32, b32).astype(np.float64)
    k = a32.shape[-1]
    bound = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64) / 2 \
        + k * 2.0 ** -24 * np.matmul(np.abs(a32), np.abs(b32)) + 2.0 ** -25
    got = np.asarray(got)
    assert got.dtype == np.float16 and got.shape == want.shape
    assert (np.abs(got.astype(np.float64) - want) <= bound).all()


CASES = [((16, 16), (16, 8), False, False), ((37, 29), (29, 13), False, False),
         ((2, 40, 5), (21, 40), True, True), ((3, 33, 17), (3, 9, 17), False, True),
         ((1, 48), (48, 1), False, False), ((4, 0), (0, 6), False, False)]


@pytest.mark.parametrize("ash,bsh,ta,tb", CASES)
def test_f16_matmul_on_tensor_cores(cuda_driver, ash, bsh, ta, tb):
    rng = np.random.default_rng(sum(ash) + sum(bsh))
    a = rng.standard_normal(ash).astype(np.float16)
    b = rng.standard_normal(bsh).astype(np.float16)
    f = tfc.function(lambda x, y: tfc.matmul(x, y, transpose_a=ta, transpose_b=tb), target="cuda")
    _check(f(tfc.constant(a), tfc.constant(b)), a, b, ta, tb)


def test_eager_f16_matmul_on_gpu(cuda_driver):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((19, 35)).astype(np.float16), rng.standard_normal((35, 10)).astype(np.float16)
    got = tfc.matmul(tfc.constant(a).gpu(), tfc.constant(b).gpu())
    _check(got, a, b, False, False)


def test_large_values_accumulate_in_float32(cuda_driver):
    """Products past float16's range (300 * 300 = 9e4 > 65504) stay finite in the
    float32 accumulator until the final rounding (here back below 65504)."""
    a = np.full((16, 16), 300.0, np.float16)
    b = np.full((16, 8), 300.0, np.float16)
    b[::2] = -300.0  # the sum cancels to 0
    f = tfc.function(lambda x, y: tfc.matmul(x, y), target="cuda")
    got = np.asarray(f(tfc.constant(a), tfc.constant(b)))
    assert np.array_equal(got, np.zeros((16, 8), np.float16))


def test_mma_kernel_ptxas_budgets():
    a = np.ones((2, 37, 29), np.float16)
    b = np.ones((29, 13), np.float16)
    m = lower(l3_of(lambda x, y: tfc.matmul(x, y), a, b))
    (k,) = kernels(m)
    assert k.sym_name.data.endswith("f16_mma")
    check_budgets(m)
