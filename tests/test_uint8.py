"""tfc.uint8 end to end (docs/dtypes.md, "uint8"): eager against numpy (wrapping
as numpy wraps), compiled (numpy backend) bit-identical to eager, the IR's
``ui8``, no gradients, save/load, tfc.data, and the GPU's clear refusal."""
import os

import numpy as np
import pytest

import tfc
from tfc.dialects.tensor import element_type
from tfc.ops.scatter import unsorted_segment_sum
from helpers import assert_same

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

RNG = np.random.default_rng(8)
X = RNG.integers(0, 256, (3, 4)).astype(np.uint8)
Y = RNG.integers(0, 256, (3, 4)).astype(np.uint8)
X[0, 0], X[0, 1], Y[0, 0], Y[1, 1] = 255, 0, 0, 255  # the ends, and a zero divisor

u8 = np.uint8


def _np_floordiv(x, y):
    with np.errstate(all="ignore"):
        return np.floor_divide(x, y)  # numpy: 0 for a zero divisor


def _np_mod(x, y):
    with np.errstate(all="ignore"):
        return np.mod(x, y)


def _np_segment_sum(x, ids, n):
    out = np.zeros((n,) + x.shape[1:], x.dtype)
    np.add.at(out, ids, x)
    return out


# name -> (tfc function of two uint8 tensors, numpy of the two arrays)
CASES = {
    "add": (lambda a, b: a + b, lambda x, y: x + y),
    "subtract": (lambda a, b: a - b, lambda x, y: x - y),  # wraps below 0
    "multiply": (lambda a, b: a * b, lambda x, y: x * y),
    "floordiv": (lambda a, b: a // b, _np_floordiv),
    "mod": (lambda a, b: a % b, _np_mod),
    "divide": (lambda a, b: a / b, np.true_divide),  # float64, as numpy
    "maximum": (tfc.maximum, np.maximum),
    "minimum": (tfc.minimum, np.minimum),
    "less": (lambda a, b: a < b, np.less),
    "greater_equal": (lambda a, b: a >= b, np.greater_equal),
    "equal": (tfc.equal, np.equal),
    "negative": (lambda a, b: -a, lambda x, y: (0 - x).astype(u8)),
    "abs": (lambda a, b: tfc.abs(a), np.abs),
    "sign": (lambda a, b: tfc.sign(a), lambda x, y: np.sign(x)),
    "square": (lambda a, b: tfc.square(a), lambda x, y: x * x),
    "where": (lambda a, b: tfc.where(a < b, a, b), lambda x, y: np.where(x < y, x, y)),
    "clip": (lambda a, b: tfc.clip_by_value(a, 10, 200), lambda x, y: np.clip(x, u8(10), u8(200))),
    "weak_int": (lambda a, b: a + 7, lambda x, y: x + u8(7)),
    "weak_float": (lambda a, b: a * 2.5, lambda x, y: x * 2.5),
    "with_int8": (lambda a, b: a + tfc.cast(b, tfc.int8), lambda x, y: x.astype(np.int32) + y.astype(np.int8)),
    "with_int32": (lambda a, b: a * tfc.cast(b, tfc.int32), lambda x, y: x.astype(np.int32) * y.astype(np.int32)),
    "with_float32": (lambda a, b: a + tfc.cast(b, tfc.float32), lambda x, y: x + y.astype(np.float32)),
    "to_float32": (lambda a, b: tfc.cast(a, tfc.float32), lambda x, y: x.astype(np.float32)),
    "to_int8": (lambda a, b: tfc.cast(a, tfc.int8), lambda x, y: x.astype(np.int8)),
    "to_int64": (lambda a, b: tfc.cast(a, tfc.int64), lambda x, y: x.astype(np.int64)),
    "to_bool": (lambda a, b: tfc.cast(a, tfc.bool), lambda x, y: x.astype(bool)),
    "from_int32": (lambda a, b: tfc.cast(tfc.cast(a, tfc.int32) * 3 - 200, tfc.uint8),
                   lambda x, y: (x.astype(np.int32) * 3 - 200).astype(u8)),
    "from_float": (lambda a, b: tfc.cast(tfc.cast(a, tfc.float32) * 1.7, tfc.uint8),
                   lambda x, y: (x.astype(np.float32) * np.float32(1.7)).astype(u8)),
    "from_big_float": (lambda a, b: tfc.cast(tfc.cast(a, tfc.float64) * 3e7 - 1e9, tfc.uint8),  # past int32's range
                       lambda x, y: (x.astype(np.float64) * 3e7 - 1e9).astype(u8)),
    "from_int8": (lambda a, b: tfc.cast(tfc.cast(b, tfc.int8), tfc.uint8), lambda x, y: y.astype(np.int8).astype(u8)),
    "reduce_sum": (lambda a, b: tfc.reduce_sum(a, axis=1), lambda x, y: np.sum(x, axis=1, dtype=u8)),
    "reduce_prod": (lambda a, b: tfc.reduce_prod(a, axis=0), lambda x, y: np.prod(x, axis=0, dtype=u8)),
    "reduce_max": (lambda a, b: tfc.reduce_max(a, axis=0), lambda x, y: np.max(x, axis=0)),
    "reduce_min": (lambda a, b: tfc.reduce_min(a), lambda x, y: np.min(x)),
    "argmax": (lambda a, b: tfc.argmax(a, axis=1), lambda x, y: np.argmax(x, axis=1)),
    "argmin": (lambda a, b: tfc.argmin(a, axis=0), lambda x, y: np.argmin(x, axis=0)),
    "cumsum": (lambda a, b: tfc.cumsum(a, axis=1), lambda x, y: np.cumsum(x, axis=1, dtype=u8)),
    "matmul": (lambda a, b: tfc.matmul(a, tfc.transpose(b)), lambda x, y: np.matmul(x, y.T)),
    "reshape": (lambda a, b: tfc.reshape(a, (4, 3)), lambda x, y: x.reshape(4, 3)),
    "transpose": (lambda a, b: tfc.transpose(a), lambda x, y: x.T),
    "concat": (lambda a, b: tfc.concat([a, b], 0), lambda x, y: np.concatenate([x, y], 0)),
    "stack": (lambda a, b: tfc.stack([a, b]), lambda x, y: np.stack([x, y])),
    "gather": (lambda a, b: tfc.gather(a, tfc.constant([2, 0]), axis=0), lambda x, y: x[[2, 0]]),
    "segment_sum": (lambda a, b: unsorted_segment_sum(a, tfc.constant([0, 2, 0]), 3),  # a scatter-add; wraps
                    lambda x, y: _np_segment_sum(x, [0, 2, 0], 3)),
    "getitem": (lambda a, b: a[1:, ::2], lambda x, y: x[1:, ::2]),
    "scalar_items": (lambda a, b: a[1, 2] + b[0, 1], lambda x, y: x[1, 2] + y[0, 1]),
    # 0-d values are Python ints in [0, 255] in the numpy backend's host code: wrapped there
    "scalar_wrap": (lambda a, b: (a[1, 2] - b[0, 1]) * a[0, 0], lambda x, y: (x[1, 2] - y[0, 1]) * x[0, 0]),
    "scalar_div_max": (lambda a, b: tfc.maximum(a[1, 1] // b[1, 2], a[0, 2] - a[1, 1]) + tfc.minimum(a[0, 0], b[1, 1]),
                       lambda x, y: np.maximum(_np_floordiv(x[1, 1], y[1, 2]), x[0, 2] - x[1, 1])
                       + np.minimum(x[0, 0], y[1, 1])),
    "scalar_cmp": (lambda a, b: tfc.where(a[1, 1] < b[0, 1], a[1, 1], b[1, 0]),
                   lambda x, y: np.where(x[1, 1] < y[0, 1], x[1, 1], y[1, 0])),
    "scalar_to_float": (lambda a, b: tfc.cast(a[0, 0], tfc.float32) - tfc.cast(b[1, 1], tfc.float64),
                        lambda x, y: x[0, 0].astype(np.float32) - y[1, 1].astype(np.float64)),
    "tile": (lambda a, b: tfc.tile(a, [2, 1]), lambda x, y: np.tile(x, [2, 1])),
    "pad": (lambda a, b: tfc.pad(a, [[1, 0], [0, 1]]), lambda x, y: np.pad(x, [[1, 0], [0, 1]])),
    "pad_255": (lambda a, b: tfc.pad(a, [[0, 1], [1, 0]], constant_values=255),  # -1 : i8 bitcast to ui8
                lambda x, y: np.pad(x, [[0, 1], [1, 0]], constant_values=255)),
    "sort": (lambda a, b: tfc.sort(a, axis=1), lambda x, y: np.sort(x, axis=1)),
}

def _want(name):
    with np.errstate(all="ignore"):
        return np.asarray(CASES[name][1](X, Y))


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_matches_numpy(name):
    fn, _ = CASES[name]
    want = _want(name)
    got = fn(tfc.constant(X), tfc.constant(Y))
    dt = tfc.int32 if want.dtype == np.int16 else None  # numpy's int16 for uint8 with int8 is tfc's int32
    assert_same(got, want, dt)


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_bit_identical_to_eager(name):
    fn, _ = CASES[name]
    a, b = tfc.constant(X), tfc.constant(Y)
    want = fn(a, b)
    got = tfc.function(fn, autograph=False)(a, b)
    assert got.dtype == want.dtype
    assert np.array_equal(np.asarray(got), np.asarray(want), equal_nan=True)


def test_overflow_wraps_and_weak_scalars():
    t = tfc.constant([0, 200, 255], tfc.uint8)
    assert_same(t + 100, np.array([100, 44, 99], u8))
    assert_same(t * 2, np.array([0, 144, 254], u8))
    assert (t + True).dtype == tfc.uint8
    for bad in (256, -1):
        with pytest.raises(ValueError, match=rf"add: Python value {bad} does not fit in uint8"):
            t + bad
    assert tfc.constant(np.uint8(7)).dtype == tfc.uint8
    assert tfc.constant(3, "uint8").dtype == tfc.uint8


def test_ir_element_type_prints_and_parses():
    assert str(element_type(tfc.uint8)) == "ui8"
    f = tfc.function(lambda a: tfc.reduce_max(a, axis=0) + a[0], autograph=False)
    conc = f.get_concrete_function(tfc.TensorSpec([2, 3], tfc.uint8))
    ir = conc.ir()
    assert "tensor<2x3xui8>" in ir and "tensor<3xui8>" in ir
    from tfc.dialects import tensor as T

    assert T.print_ir(T.IRParser(T.context(), ir).parse_module()) == ir  # parsed back as printed
    loops = conc.ir("loops")
    assert "memref<2x3xui8>" in loops  # the signedness stays in the types at L3


def test_no_gradient_through_uint8():
    x = tfc.constant(np.array([1.0, 2.0], np.float32))
    with tfc.GradientTape() as tape:
        tape.watch(x)
        y = tfc.cast(tfc.cast(x, tfc.uint8), tfc.float32) * x
    g = tape.gradient(y, x)
    assert_same(g, np.array([1.0, 2.0], np.float32))  # only the float path: the uint8 cast has none
    u = tfc.constant([1, 2], tfc.uint8)
    with tfc.GradientTape() as tape:
        tape.watch(u)
        z = u * u
    assert tape.gradient(z, u) is None


def test_save_and_load_roundtrip(tmp_path):
    f = tfc.function(lambda a: tfc.maximum(a, a[::-1]) * a - a[0], input_signature=[tfc.TensorSpec([6], tfc.uint8)],
                     autograph=False)
    path = tmp_path / "u8"
    tfc.save(f.get_concrete_function(), str(path))
    g = tfc.load(str(path))
    x = tfc.constant(np.array([0, 255, 7, 128, 3, 200], u8))
    assert_same(g(x), np.asarray(f(x)))


def test_data_pipeline_keeps_uint8():
    images = RNG.integers(0, 256, (5, 2, 2)).astype(u8)
    ds = tfc.data.Dataset.from_tensor_slices(images).batch(2)
    batches = [np.asarray(b) for b in ds]
    assert all(b.dtype == u8 for b in batches)
    assert np.array_equal(np.concatenate(batches), images)


def test_gpu_refuses_uint8_clearly(monkeypatch):
    monkeypatch.setenv("TFC_CUDA_DRIVER", os.environ.get("TFC_CUDA_DRIVER", "simulator"))
    f = tfc.function(lambda a: a + a, input_signature=[tfc.TensorSpec([4], tfc.uint8)], target="cuda",
                     autograph=False)
    with pytest.raises(NotImplementedError, match="uint8"):
        f(tfc.constant(np.array([250, 3, 7, 0], u8)))


def test_summary_image_takes_uint8_pixels(tmp_path):
    from tfc.summary import _image_bytes

    pixels = np.array([[[[0], [7]], [[200], [255]]]], u8)
    assert np.array_equal(_image_bytes(tfc.constant(pixels)), pixels)  # as they are: no rescaling
    writer = tfc.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        tfc.summary.image("img", tfc.constant(pixels), step=0)
    writer.flush()
    assert any(p.name.startswith("events.out.tfevents") and p.stat().st_size > 0 for p in tmp_path.iterdir())


@pytest.mark.parametrize("name", ["floordiv", "mod", "negative", "to_int8", "with_int8", "reduce_sum", "cumsum",
                                  "sort", "pad_255", "sign"])
def test_reference_executor_matches_eager(name):
    from tfc.backends.reference import run

    fn, _ = CASES[name]
    spec = tfc.TensorSpec(X.shape, tfc.uint8)
    conc = tfc.function(fn, autograph=False).get_concrete_function(spec, spec)
    (got,) = run(conc.module, [X, Y])
    want = np.asarray(fn(tfc.constant(X), tfc.constant(Y)))
    assert got.dtype == want.dtype and np.array_equal(got, want)


SPECIAL_FLOATS = [np.nan, np.inf, -np.inf, -0.0, -1.5, 255.9, 256.0, 300.7, 65504.0, 3e9 + 7, -3e9, 1e20]


@pytest.mark.parametrize("dtype", [tfc.float16, tfc.float32, tfc.float64])
def test_casts_of_nan_inf_and_out_of_range_floats_match_numpy(dtype):
    # numpy's astype goes through int32 (NaN, inf and values past int32 give 0);
    # compiled code must give the same bytes, in a kernel, as a 0-d host value and
    # in the reference executor
    from tfc.backends.reference import run

    x = np.array(SPECIAL_FLOATS, dtype.as_numpy_dtype)
    want = x.astype(u8)
    assert_same(tfc.cast(tfc.constant(x), tfc.uint8), want)

    def fused(a):
        return tfc.cast(a * 1.0, tfc.uint8) + tfc.cast(1, tfc.uint8)

    vector = tfc.function(fused, input_signature=[tfc.TensorSpec([None], dtype)], autograph=False)
    assert np.array_equal(np.asarray(vector(x)), want + u8(1))
    scalar = tfc.function(fused, input_signature=[tfc.TensorSpec([], dtype)], autograph=False)
    assert np.array_equal(np.array([np.asarray(scalar(v)) for v in x]), want + u8(1))
    (ref,) = run(vector.get_concrete_function().module, [x])
    assert np.array_equal(ref, want + u8(1))
