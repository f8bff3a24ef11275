"""argsort, sort and top_k on the GPU (tfc/passes/gpu_sort.py): the merge
passes run on the PTX simulator (and on a GPU where there is one: the
``gpu`` variants) and give the numpy kernel's permutation bit for bit: ties
in index order both ways, NaN above every number, -0.0 equal to 0.0, any
axis of a strided view, odd lengths, lengths of one and zero-size tensors;
eager on the GPU device and gradients; every kernel assembles with ptxas for
sm_80 and sm_90 within the elementwise budget."""
from __future__ import annotations

import numpy as np
import pytest

import tfc

pytest.importorskip("tfc.backends.cuda.simulator", reason="the PTX simulator has not landed")
from test_lower_gpu import check_budgets, kernels, l3_of, lower  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _exact(fn, *args):
    want = tfc.function(fn)(*args)
    got = tfc.function(fn, target="cuda")(*args)
    want, got = (list(v) if isinstance(v, (tuple, list)) else [v] for v in (want, got))
    for w, g in zip(want, got):
        w, g = np.asarray(w), np.asarray(g)
        assert w.dtype == g.dtype and w.shape == g.shape
        assert np.array_equal(w, g, equal_nan=w.dtype.kind == "f"), (w, g)


def _values(shape, dtype, rng):
    """Values with many ties (and, for floats, NaNs, infinities and both zeros)."""
    if np.dtype(dtype).kind == "f":
        pool = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 1.5, -2.0, 3.25, 7.0], dtype=dtype)
        v = rng.choice(pool, size=shape)
        return np.where(rng.random(shape) < 0.5, rng.standard_normal(shape).astype(dtype), v)
    info = np.iinfo(dtype)
    pool = np.array([info.min, info.max, 0, -1, 1, 5], dtype=dtype)
    return np.where(rng.random(shape) < 0.5, rng.integers(-4, 4, size=shape).astype(dtype), rng.choice(pool, size=shape))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int32", "int64"])
@pytest.mark.parametrize("direction", ["ASCENDING", "DESCENDING"])
def test_argsort_bit_exact(cuda_driver, dtype, direction):
    rng = np.random.default_rng(3)
    x = tfc.constant(_values((4, 37), dtype, rng))
    _exact(lambda x: (tfc.argsort(x, direction=direction), tfc.argsort(x, axis=0, direction=direction)), x)


@pytest.mark.parametrize("shape,axis", [((1,), 0), ((2,), 0), ((5,), 0), ((3, 1), 1), ((2, 3, 17), 1),
                                        ((300,), 0), ((2, 257), 1), ((0, 4), 1), ((4, 0), 1)])
def test_argsort_shapes(cuda_driver, shape, axis):
    x = tfc.constant(_values(shape, "float32", np.random.default_rng(sum(shape))))
    _exact(lambda x: tfc.argsort(x, axis=axis), x)


def test_argsort_of_strided_views(cuda_driver):
    # keys read through a transposed and a sliced view (the kernel indexes x with its strides)
    x = tfc.constant(_values((6, 9), "float64", np.random.default_rng(5)))
    _exact(lambda x: (tfc.argsort(tfc.transpose(x), axis=1), tfc.argsort(x[::2, 1:8], axis=-1,
                                                                          direction="DESCENDING")), x)


def test_sort_and_top_k(cuda_driver):
    x = tfc.constant(_values((3, 50), "float32", np.random.default_rng(6)))

    def f(x):
        values, indices = tfc.top_k(x, 7)
        return tfc.sort(x), tfc.sort(x, direction="DESCENDING"), values, indices
    _exact(f, x)


def test_sort_gradient(cuda_driver):
    # sort's gradient is permute_along_axis by argsort of the (int32) permutation: both on the GPU
    x = tfc.constant(np.random.default_rng(7).standard_normal((3, 11)))
    w = tfc.constant(np.arange(33.0).reshape(3, 11))

    def f(x, w):
        with tfc.GradientTape() as tape:
            tape.watch(x)
            y = tfc.reduce_sum(tfc.sort(x) * w) + tfc.reduce_sum(tfc.top_k(x, 4)[0])
        return tape.gradient(y, x)
    _exact(f, x, w)


def test_eager_gpu_argsort(cuda_driver):
    x = _values((5, 21), "float32", np.random.default_rng(8))

    def ops():
        return tfc.sort(tfc.constant(x), direction="DESCENDING"), tfc.argsort(tfc.constant(x), axis=0)
    with tfc.device("gpu:0"):
        got = ops()
    assert "GPU" in got[0].device
    for g, w in zip(got, ops()):
        assert np.array_equal(np.asarray(g), np.asarray(w), equal_nan=True)


def test_passes_and_budgets():
    """ceil(log2 n) passes (the first without a source buffer), and ptxas
    assembles each for sm_80 and sm_90 within the elementwise budget."""
    x = tfc.constant(np.zeros((4, 37), np.float32))
    m = lower(l3_of(lambda x: tfc.argsort(x, direction="DESCENDING"), x))
    names = [k.sym_name.data for k in kernels(m)]
    assert [n.split("_", 1)[1] for n in names] == [f"argsort_w{1 << k}" for k in range(6)]
    assert len(kernels(m)[0].body.block.args) == 2 and len(kernels(m)[1].body.block.args) == 3
    check_budgets(m)
    m = lower(l3_of(lambda x: tfc.argsort(tfc.cast(x, "int8"), axis=0), x))
    check_budgets(m)


def test_run_time_length_raises():
    text = """func.func @f(%x: memref<?xf32>, %arena: memref<0xi8>) -> memref<?xi32> {
  %0 = loops.library "argsort"(%x : memref<?xf32>) {attrs = {axis = -1 : i64, direction = "ASCENDING"}} -> (memref<?xi32>)
  func.return %0 : memref<?xi32>
}"""
    with pytest.raises(NotImplementedError, match="argsort of run-time shape"):
        lower(text)
