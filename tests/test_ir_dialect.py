"""The tfc dialect: one generated op per registry op; print -> parse -> print is
stable for every op; the verifier runs the op's inference; locations survive."""
import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

import tfc
from tfc.backends.reference import run
from tfc.core.context import STATE
from tfc.core.registry import REGISTRY
from tfc.dialects import tensor as T
from tfc.frontend.tracing import FunctionBuilder
from tfc.ops import conv as _conv
from tfc.ops import control_flow as _cf
from tfc.ops import shapes
from tfc.ops import nn as _nn
from tfc.ops import quant as _quant
from tfc.ops import sorting as _sorting
from tfc.ops import summary as _summary_op

F23 = tfc.constant(np.arange(6, dtype=np.float32).reshape(2, 3) / 7 + 0.1)
_I8 = tfc.constant([[1, -2, 3], [-4, 5, 127]], tfc.int8)
F32 = tfc.constant(np.arange(6, dtype=np.float32).reshape(3, 2) / 5 - 0.3)
B23 = tfc.constant(np.array([[True, False, True], [False, True, True]]))


def _slice_grad():
    return shapes.slice_grad(tfc.constant([1.0, 2.0]), (2, 3), (0, ("slice", 1, None, None)))


def _slice_grad_like():
    return shapes.slice_grad_like(tfc.constant([1.0, 2.0]), F23, (0, ("slice", 1, None, None)))


# Sample calls for ops whose arguments the heuristic below cannot guess, or whose
# attributes deserve a non-default value. Ops added elsewhere either fit the
# heuristic (1-3 tensors of one dtype) or need an entry here.
SAMPLES = {
    # this session's ops whose arguments the heuristic cannot guess
    "categorical": lambda: tfc.random.categorical(F23, 2, seed=1),
    "truncated_normal": lambda: tfc.random.truncated_normal((2, 3), seed=1),
    "shuffle_indices": lambda: tfc.ops.random.shuffle_indices(F23, seed=1),
    "moments": lambda: tfc.nn.moments(F23, axes=[1]),
    "normalize": lambda: _nn.normalize(F23, axes=[1], epsilon=1e-3),
    "permute_along_axis": lambda: _sorting.permute_along_axis(F23, tfc.argsort(F23, axis=1), axis=1),
    "quantize": lambda: _quant.quantize(F23, 0.05, 3),
    "dequantize": lambda: _quant.dequantize(_I8, 0.05, 1),
    "quantized_matmul": lambda: _quant.quantized_matmul(
        _I8, tfc.transpose(_I8), tfc.constant([5, -7], tfc.int32), tfc.constant([0.02, 0.03]), 2, relu=True),
    "quantized_conv2d": lambda: _quant.quantized_conv2d(
        tfc.reshape(_I8, (1, 2, 3, 1)), tfc.reshape(_I8[:, :2], (2, 2, 1, 1)), tfc.constant([3], tfc.int32),
        tfc.constant([0.05]), padding="SAME", pad_value=1, out_zero_point=-1),
    "weight_quantized_matmul": lambda: _quant.weight_quantized_matmul(F23, tfc.transpose(_I8),
                                                                      tfc.constant([0.1, 0.2])),
    "weight_quantized_conv2d": lambda: _quant.weight_quantized_conv2d(
        tfc.reshape(F23, (1, 2, 3, 1)), tfc.reshape(_I8[:, :2], (2, 2, 1, 1)), tfc.constant([0.1])),
    "reshape": lambda: tfc.reshape(F23, (3, -1)),
    "write_summary": lambda: _summary_op.write_summary(tfc.constant(3, tfc.int64), F23, kind="histogram", tag="h"),
    "broadcast_to": lambda: tfc.broadcast_to(F23[0], (4, 3)),
    "transpose": lambda: tfc.transpose(F23, (1, 0)),
    "expand_dims": lambda: tfc.expand_dims(F23, 1),
    "squeeze": lambda: tfc.squeeze(tfc.reshape(F23, (1, 6, 1)), axis=(0,)),
    "getitem": lambda: F23[0, 1:, None, ...],
    "slice_grad": _slice_grad,
    "slice_grad_like": _slice_grad_like,
    "broadcast_like": lambda: shapes.broadcast_like(F23[0], F23),
    "count_along": lambda: shapes.count_along(F23, (0, 1)),
    "pad_grad_like": lambda: shapes.pad_grad_like(tfc.pad(F23, [[1, 0], [2, 1]], mode="REFLECT"), F23, (1, 0, 2, 1),
                                                  "REFLECT"),
    "range_along": lambda: shapes.range_along(F23, -1, tfc.int32),
    "wrap_index": lambda: shapes.wrap_index(tfc.constant([0, -1, 2], tfc.int32), F23, 1),
    "unbroadcast_like": lambda: shapes.unbroadcast_like(F23, F23[:1, :]),
    "reshape_like": lambda: shapes.reshape_like(F23, F32),
    "split_like": lambda: shapes.split_like(F23, [F23[:, :1], F23[:, 1:]], 1),
    "tile_grad_like": lambda: shapes.tile_grad_like(tfc.tile(F23, (2, 1)), F23, (2, 1)),
    "gather_grad_like": lambda: shapes.gather_grad_like(F32, tfc.constant([1, 0, 1]), F23[:, :2], 0),
    "zeros": lambda: tfc.zeros((2, 3), tfc.int32),
    "ones": lambda: tfc.ones((2,)),
    "zeros_like": lambda: tfc.zeros_like(F23, dtype=tfc.int64),
    "ones_like": lambda: tfc.ones_like(F23),
    "fill": lambda: tfc.fill((2, 2), 3.5),
    "dynamic_fill": lambda: tfc.ops.creation.dynamic_fill(tfc.constant([2, 3], tfc.int64), 3.5, (-1, 3)),
    "range": lambda: tfc.range(1, 7, 2),
    "linspace": lambda: tfc.linspace(0.0, 1.0, 5),
    "eye": lambda: tfc.eye(3, 2, dtype=tfc.float64),
    "matmul": lambda: tfc.matmul(F23, F23, transpose_b=True),
    "cast": lambda: tfc.cast(F23, tfc.int8),
    "integer_pow": lambda: F23 ** 3,
    "where": lambda: tfc.where(B23, F23, F23 * 2),
    "clip_by_value": lambda: tfc.clip_by_value(F23, 0.2, 0.5),
    "reduce_sum": lambda: tfc.reduce_sum(F23, axis=1, keepdims=True),
    "reduce_mean": lambda: tfc.reduce_mean(F23, axis=(0, 1)),
    "argmax": lambda: tfc.argmax(F23, axis=1, output_type=tfc.int32),
    "concat": lambda: tfc.concat([F23, F23 * 2], axis=0),
    "stack": lambda: tfc.stack([F23, F23], axis=1),
    "split": lambda: tfc.split(F23, [1, 2], axis=1),
    "tile": lambda: tfc.tile(F23, (2, 1)),
    "pad": lambda: tfc.pad(F23, [[1, 0], [0, 2]], constant_values=1.5),
    "gather": lambda: tfc.gather(F23, tfc.constant([1, 0, 1]), axis=1),
    "unsorted_segment_sum": lambda: _seg(),
    "one_hot": lambda: tfc.one_hot(tfc.constant([0, 2, 1]), 3),
    "pick_along_last": lambda: tfc.ops.nn.pick_along_last(F23, tfc.constant([2, 0], tfc.int32)),
    "uniform": lambda: tfc.random.uniform((2, 3), seed=3),
    "uniform_bounds": lambda: tfc.random.uniform((2, 3), tfc.constant(1.0), tfc.constant(4.0), seed=3),
    "normal": lambda: tfc.random.normal((4,), stddev=2.0, seed=5),
    "sparse_softmax_cross_entropy_with_logits": lambda: tfc.nn.sparse_softmax_cross_entropy_with_logits(
        tfc.constant([0, 2]), F23),
    "conv2d": lambda: _conv.conv2d(IMG, FILT, strides=2, padding="SAME"),
    "conv2d_backprop_input": lambda: _conv.conv2d_backprop_input((5, 5), FILT, OUT, padding="VALID"),
    "conv2d_backprop_filter": lambda: _conv.conv2d_backprop_filter(IMG, (3, 3), OUT, padding="VALID"),
    "max_pool2d": lambda: _conv.max_pool2d(IMG, 2, 2),
    "max_pool2d_grad": lambda: _conv.max_pool2d_grad(IMG, POOLED, 2, 2),
    "max_pool2d_grad_grad": lambda: _conv.max_pool2d_grad_grad(IMG, IMG, 2, 2),
    "avg_pool2d": lambda: _conv.avg_pool2d(IMG, 2, 2, padding="SAME"),
    "avg_pool2d_grad": lambda: _conv.avg_pool2d_grad((5, 5), POOLED, 2, 2),
    "conv2d_backprop_input_like": lambda: _conv.conv2d_backprop_input_like(IMG, FILT, OUT, padding="VALID"),
    "conv2d_backprop_filter_like": lambda: _conv.conv2d_backprop_filter_like(IMG, OUT, FILT, padding="VALID"),
    "avg_pool2d_grad_like": lambda: _conv.avg_pool2d_grad_like(IMG, POOLED, 2, 2),
    "dropout_mask": lambda: _conv.dropout_mask(F23, 0.5, seed=1),
    "seeded_dropout_mask": lambda: tfc.ops.random.seeded_dropout_mask(F23, tfc.constant(np.int64(3)), 0.5),
    "tensor_array_write": lambda: _cf.tensor_array_write(F23, tfc.constant(3), F23[0], grow=True),
    # state lists: flat values, then a table of shapes (_LIST_SHAPES: a 1x1 state, then a 1x2 one)
    "state_list_push": lambda: _cf.state_list_push(F23[0], tfc.constant(np.array([[3]], np.int64)), F23[1]),
    "state_list_get": lambda: _cf.state_list_get(F23[0], _LIST_SHAPES, tfc.constant(1), F23[:1, :2]),
    "state_list_get_grad": lambda: _cf.state_list_get_grad(F23[:1, :2], F23[0], _LIST_SHAPES, tfc.constant(1)),
    "state_list_push_grad": lambda: _cf.state_list_push_grad(F23[0], F23[0, :1], F23[0, 1:]),
    "guarded_select": lambda: _cf.guarded_select(tfc.constant(False), F23, F23 * 2.0),
}

_LIST_SHAPES = tfc.constant(np.array([[1, 1], [1, 2]], np.int64))
IMG = tfc.constant(np.arange(50, dtype=np.float32).reshape(1, 5, 5, 2) / 50)
FILT = tfc.constant(np.arange(36, dtype=np.float32).reshape(3, 3, 2, 2) / 36 - 0.5)
OUT = tfc.constant(np.ones((1, 3, 3, 2), np.float32))
POOLED = tfc.constant(np.ones((1, 2, 2, 2), np.float32))


def _seg():
    from tfc.ops.shapes import unsorted_segment_sum

    return unsorted_segment_sum(F23, tfc.constant([1, 0]), 3)


def _heuristic(api):
    for dt in (tfc.float32, tfc.bool, tfc.int32):
        x = tfc.cast(F23 * 4, dt) if dt != tfc.bool else B23
        for n in (1, 2, 3):
            try:
                api(*([x] * n))
            except Exception:  # noqa: BLE001 - trying shapes of calls
                continue
            return lambda: api(*([x] * n))
    return None


def sample(name):
    if name in SAMPLES:
        return SAMPLES[name]
    fn = _heuristic(REGISTRY[name].api)
    if fn is None:
        pytest.fail(f"no sample call for op {name!r}: add one to SAMPLES in tests/test_ir_dialect.py")
    return fn


def trace(fn):
    b = FunctionBuilder("f")
    STATE.builder = b
    try:
        out = fn()
    finally:
        STATE.builder = None
    from xdsl.dialects.builtin import ModuleOp

    outs = out if isinstance(out, (list, tuple)) else [out]
    return ModuleOp([b.finish(outs)])


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_op_round_trips(name):
    fn = sample(name)
    eager = fn()
    m = trace(fn)
    m.verify()
    for debug in (False, True):
        text = T.print_ir(m, debug)
        assert f"tfc.{name} " in text
        again = T.print_ir(T.parse_module(text), debug)
        assert again == text
    # generic form parses back to the same custom form
    import io
    from xdsl.printer import Printer

    buf = io.StringIO()
    Printer(stream=buf, print_generic_format=True).print_op(m)
    assert T.print_ir(T.parse_module(buf.getvalue())) == T.print_ir(m)
    # the reference executor computes what eager mode computed
    got = run(T.parse_module(T.print_ir(m)), [])
    want = eager if isinstance(eager, (list, tuple)) else [eager]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w.numpy())
        assert g.dtype == w.numpy().dtype


def test_location_round_trips():
    m = trace(lambda: tfc.exp(F23))
    text = T.print_ir(m, debuginfo=True)
    assert 'loc("' in text and "test_ir_dialect.py" in text
    m2 = T.parse_module(text)
    ops = [op for op in m2.walk() if op.name == "tfc.exp"]
    assert T.loc_str(ops[0]).endswith(f"test_ir_dialect.py:{test_location_round_trips.__code__.co_firstlineno + 1}")


def test_verifier_runs_inference_with_location():
    src = '''func.func @f(%a: tensor<3xf32>, %b: tensor<4xf32>) -> tensor<3xf32> {
      %0 = tfc.add %a, %b : (tensor<3xf32>, tensor<4xf32>) -> tensor<3xf32> loc("model.py":12:4)
      func.return %0 : tensor<3xf32>
    }'''
    with pytest.raises(VerifyException, match=r"model.py:12:4: tfc.add: .*cannot be broadcast"):
        T.parse_module(src)


def test_verifier_checks_while_arity():
    src = '''func.func @f(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
      %w = tfc.while %a, %b : (tensor<f32>, tensor<f32>) -> tensor<f32> cond {
      ^bb0(%x: tensor<f32>):
        %q = tfc.less %x, %x : (tensor<f32>, tensor<f32>) -> tensor<i1>
        tfc.condition %q : tensor<i1>
      } do {
      ^bb0(%x: tensor<f32>):
        tfc.yield %x : tensor<f32>
      }
      func.return %w : tensor<f32>
    }'''
    with pytest.raises(VerifyException, match="initial values and results must have the same types"):
        T.parse_module(src)


def test_verifier_checks_result_type():
    src = '''func.func @f(%a: tensor<3xf32>) -> tensor<3xi32> {
      %0 = tfc.exp %a : (tensor<3xf32>) -> tensor<3xi32>
      func.return %0 : tensor<3xi32>
    }'''
    with pytest.raises(VerifyException, match="inference gives tensor<3xf32>"):
        T.parse_module(src)


def test_dynamic_dims():
    src = '''func.func @f(%a: tensor<?x3xf32>, %b: tensor<3xf32>) -> tensor<?x3xf32> {
      %0 = tfc.add %a, %b : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
      %1 = tfc.reduce_sum %0 {axis = array<i64: 1>, keepdims = false} : (tensor<?x3xf32>) -> tensor<?xf32>
      func.return %0 : tensor<?x3xf32>
    }'''
    m = T.parse_module(src)
    assert T.print_ir(T.parse_module(T.print_ir(m))) == T.print_ir(m)
    a = np.ones((5, 3), np.float32)
    (r,) = run(m, [a, np.arange(3, dtype=np.float32)])
    np.testing.assert_array_equal(r, a + np.arange(3))


@pytest.mark.parametrize("kind,value", [
    ("int", -3), ("int?", 7), ("seed", 42), ("float", 0.1), ("float?", -2.5e-7), ("bool", True),
    ("ints", (1, -2, 3)), ("ints?", ()), ("dtype", tfc.int8), ("str", 'a "quoted" {x}'),
    ("index", (1, ("slice", None, 4, 2), None, "...", ("slice", -1, None, None))),
])
def test_codecs_round_trip(kind, value):
    from xdsl.parser import Parser

    codec = T.CODECS[kind]
    attr = codec.encode(value)
    parsed = Parser(T.context(), str(attr)).parse_attribute()
    assert codec.decode(parsed) == value


def test_every_attr_kind_has_a_codec():
    from tfc.core.registry import ATTR_KINDS

    assert set(T.CODECS) == set(ATTR_KINDS)


def test_region_and_variable_ops_round_trip():
    src = '''func.func @f(%p: tensor<i1>, %x: tensor<f32>, %v: !tfc.ref<tensor<f32>>) -> tensor<f32> {
      %r = tfc.read_variable %v : !tfc.ref<tensor<f32>> -> tensor<f32>
      %c = tfc.cond %p : (tensor<i1>) -> tensor<f32> {
        tfc.yield %r : tensor<f32>
      } else {
        %n = tfc.negative %x : (tensor<f32>) -> tensor<f32>
        tfc.yield %n : tensor<f32>
      }
      %w = tfc.while %c {max_iterations = 5 : i64} : (tensor<f32>) -> tensor<f32> cond {
      ^bb0(%a: tensor<f32>):
        %k = tfc.constant dense<100.0> : tensor<f32>
        %q = tfc.less %a, %k : (tensor<f32>, tensor<f32>) -> tensor<i1>
        tfc.condition %q : tensor<i1>
      } do {
      ^bb0(%a: tensor<f32>):
        %d = tfc.add %a, %a : (tensor<f32>, tensor<f32>) -> tensor<f32>
        tfc.yield %d : tensor<f32>
      }
      tfc.assign_variable %v, %w : !tfc.ref<tensor<f32>>, tensor<f32>
      tfc.print %w {format = "w = {}\\n"} : tensor<f32>
      tfc.assert %p, %w {message = "p failed for {}"} : tensor<i1>, tensor<f32>
      func.return %w : tensor<f32>
    }'''
    m = T.parse_module(src)
    text = T.print_ir(m)
    assert T.print_ir(T.parse_module(text)) == text
    from tfc.backends.reference import Cell

    cell = Cell(np.float32(3.0))
    (w,) = run(m, [np.bool_(True), np.float32(1.0), cell])
    assert w == 96.0 and cell.value == 96.0  # 3 doubled 5 times: the limit stops it
    with pytest.raises(tfc.errors.InvalidArgumentError, match="p failed for -32"):
        run(m, [np.bool_(False), np.float32(1.0), Cell(np.float32(0.0))])


def test_cond_verifier_rejects_mismatched_yield():
    src = '''func.func @f(%p: tensor<i1>, %x: tensor<f32>) -> tensor<f32> {
      %c = tfc.cond %p : (tensor<i1>) -> tensor<f32> {
        tfc.yield %x : tensor<f32>
      } else {
        tfc.yield %p : tensor<i1>
      }
      func.return %c : tensor<f32>
    }'''
    with pytest.raises(VerifyException, match="false branch yields"):
        T.parse_module(src)
