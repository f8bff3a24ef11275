"""tfc-specialize (tfc/passes/specialize.py): a function traced with None
dimensions, specialized to concrete argument shapes, then the default L1
pipeline: static IR that fuses and plans memory, whose results (reference
executor and numpy backend) are eager's bits; shape errors are eager's."""
from __future__ import annotations

import re

import numpy as np
import pytest
from xdsl.dialects import func

import tfc
from tfc.backends import reference
from tfc.backends.reference import Cell
from tfc.dialects.tensor import OpVerifyError, RegistryOp, parse_module, print_ir, spec_of
from tfc.passes.driver import run_time_dims
from tfc.passes.pipeline import DEFAULT_L1, run_pipeline
from tfc.passes.specialize import SpecializePass, parse_shapes, specialize

F32 = np.float32


# -- helpers ---------------------------------------------------------------------------------


def op_names(module) -> set:
    return {op.OPDEF.name for op in module.walk() if isinstance(op, RegistryOp)}


def backend_run(module, args, name="f"):
    """Run an L1 module with the numpy backend: (results, L2 module, memory plan)."""
    try:
        from tfc.passes.driver import lower
    except ImportError:  # before the compiler driver: the numpy backend lowered L1 itself
        from tfc.backends.numpy import compile_module

        compiled, stages = compile_module(module, name, use_cache=False)
        return list(compiled.call(list(args))), stages.fused, compiled.plan
    from tfc.backends import backend

    low = lower(module)
    exe = backend("cpu").compile(low.loops, low.plan, name)
    return list(exe.call(list(args))), low.fused, exe.plan


def eager_values(fn, args) -> list:
    out = fn(*[tfc.constant(a) for a in args])
    outs = out if isinstance(out, (list, tuple)) else [out]
    return [o.numpy() for o in outs]


def same(got, want, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, f"{what}: {got.dtype}{got.shape} vs {want.dtype}{want.shape}"
    assert np.array_equal(got, want, equal_nan=want.dtype.kind in "fc"), f"{what}: {got} vs {want}"


def check(fn, sig, args, static=True, fuses=False, plans=False):
    """Trace ``fn`` with ``sig`` (None dims), specialize its L1 module to the
    shapes of ``args``, run DEFAULT_L1; the reference executor and the numpy
    backend must give eager's bits. Returns the specialized module."""
    conc = tfc.function(fn, input_signature=sig).get_concrete_function()
    module = conc.module
    before = print_ir(module)
    cells = [Cell(v.numpy()) for v in conc.variables]
    shapes = [tuple(a.shape) for a in args] + [None] * len(cells)
    spec = specialize(module, shapes)
    assert print_ir(module) == before  # the input module is left as it was
    run_pipeline(spec, DEFAULT_L1)
    spec.verify()
    if static:
        assert not run_time_dims(spec), print_ir(spec)
    (f,) = [op for op in spec.ops if isinstance(op, func.FuncOp)]
    assert [spec_of(t).shape for t in f.function_type.inputs][:len(args)] == [a.shape for a in args]
    want = eager_values(fn, args)
    ref = reference.run(spec, list(args) + [Cell(c.value) for c in cells])
    for k, (g, w) in enumerate(zip(ref, want)):
        same(g, w, f"reference, result {k}")
    got, fused, plan = backend_run(spec, list(args) + [Cell(c.value) for c in cells], conc.name)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        same(g, w, f"numpy backend, result {k}")
    if fuses:
        assert any(op.name == "tfc.fused" for op in fused.walk()), print_ir(fused)
    if plans:  # intermediates in the arena
        assert plan.arena_size > 0 and any(b.kind != "fresh" for b in plan.buffers), plan
    return spec


def rand(rng, *shape, dtype=F32):
    return rng.standard_normal(shape).astype(dtype)


# -- the digits MLP ----------------------------------------------------------------------------


def mlp(seed=0):
    """The digits MLP's layers (examples/mlp_digits.py), weights from numpy's generator."""
    rng = np.random.default_rng(seed)
    hidden = tfc.layers.Dense(64, activation="relu", kernel_initializer="zeros", bias_initializer="zeros")
    out = tfc.layers.Dense(10, kernel_initializer="zeros", bias_initializer="zeros")
    hidden(tfc.zeros((1, 64)))
    out(tfc.zeros((1, 64)))
    for layer in (hidden, out):
        for v in (layer.kernel, layer.bias):
            v.assign((rng.standard_normal(v.shape) * 0.3).astype(F32))
    return hidden, out


@pytest.mark.parametrize("batch", [1, 7, 64])
def test_digits_predict_specializes_fuses_and_plans(batch, rng):
    hidden, out = mlp()

    def predict(x):
        return tfc.nn.softmax(out(hidden(x)))

    spec = check(predict, [tfc.TensorSpec([None, 64])], [rng.random((batch, 64), F32)], fuses=True, plans=True)
    assert "tfc.fused" not in print_ir(spec)  # L1 still: the pipeline after it fuses


def test_digits_predict_zero_batch_and_non_contiguous(rng):
    hidden, out = mlp()

    def predict(x):
        return tfc.nn.softmax(out(hidden(x)))

    check(predict, [tfc.TensorSpec([None, 64])], [np.zeros((0, 64), F32)])
    wide = rng.random((5, 128), F32)
    check(predict, [tfc.TensorSpec([None, 64])], [wide[:, ::2]])  # strided rows
    check(predict, [tfc.TensorSpec([None, 64])], [np.asfortranarray(rng.random((3, 64), F32))])


def test_digits_training_step_with_none_batch(rng):
    """Gradients traced with a None batch (unbroadcast_like for the biases,
    count_along for the mean): static forms after specialization; the
    variables are updated as eagerly."""
    hidden, out = mlp()
    variables = [hidden.kernel, hidden.bias, out.kernel, out.bias]

    def step(x, y):
        with tfc.GradientTape() as tape:
            logits = out(hidden(x))
            loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, variables)
        return [loss, *grads]

    sig = [tfc.TensorSpec([None, 64]), tfc.TensorSpec([None], tfc.int32)]
    conc = tfc.function(step, input_signature=sig).get_concrete_function()
    assert op_names(conc.module) & {"unbroadcast_like", "count_along"}
    for batch in (1, 13):
        x, y = rng.random((batch, 64), F32), rng.integers(0, 10, batch).astype(np.int32)
        spec = check(step, sig, [x, y], fuses=True, plans=True)
        assert not {n for n in op_names(spec) if n.endswith("_like")} | (op_names(spec) & {"count_along"})
        static = tfc.function(step, input_signature=[tfc.TensorSpec(x.shape), tfc.TensorSpec(y.shape, tfc.int32)])
        assert print_ir(spec) == print_ir(static.get_concrete_function().module)


# -- broadcasting, reductions, reshape -------------------------------------------------------------


def test_broadcasting_against_none_dims(rng):
    def f(x, y):
        return x * 2.0 + y, tfc.maximum(x, y[:1])

    sig = [tfc.TensorSpec([None, None]), tfc.TensorSpec([None])]
    check(f, sig, [rand(rng, 3, 5), rand(rng, 5)], fuses=True)
    check(f, sig, [rand(rng, 3, 1), rand(rng, 4)])  # size 1 broadcasts
    check(f, sig, [rand(rng, 0, 4), rand(rng, 4)])  # zero rows


def test_broadcast_gradients_with_none_dims(rng):
    def f(x, y):
        with tfc.GradientTape() as t:
            t.watch([x, y])
            z = tfc.reduce_sum(tfc.tanh(x * y + y))
        return t.gradient(z, [x, y])

    sig = [tfc.TensorSpec([None, None]), tfc.TensorSpec([None, None])]
    for a, b in [((3, 5), (1, 5)), ((3, 1), (3, 4)), ((2, 3), (2, 3)), ((0, 3), (1, 3))]:
        spec = check(f, sig, [rand(rng, *a), rand(rng, *b)])
        assert "unbroadcast_like" not in op_names(spec)


def test_reductions(rng):
    def f(x):
        return (tfc.reduce_mean(x, axis=0), tfc.reduce_max(x, axis=1, keepdims=True), tfc.reduce_sum(x),
                tfc.argmax(x, axis=1), tfc.reduce_mean(x))

    sig = [tfc.TensorSpec([None, None])]
    check(f, sig, [rand(rng, 7, 3)], fuses=True)
    check(f, sig, [rand(rng, 1, 9)])


def test_reshape_with_minus_one(rng):
    def f(x):
        a = tfc.reshape(x, [-1, 2])
        b = tfc.reshape(x, [-1])
        return tfc.exp(a), b[1:] * 3.0

    sig = [tfc.TensorSpec([None, 6])]
    spec = check(f, sig, [rand(rng, 5, 6)])
    shapes = {spec_of(r.type).shape for op in spec.walk() for r in op.results}
    assert (15, 2) in shapes and (30,) in shapes
    check(f, sig, [np.zeros((0, 6), F32)])


def test_reshape_gradient_reshape_like(rng):
    def f(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            z = tfc.reduce_sum(tfc.sin(tfc.reshape(x, [-1])) * tfc.squeeze(tfc.expand_dims(x, 0), 0)[0, 0])
        return t.gradient(z, x)

    conc = tfc.function(f, input_signature=[tfc.TensorSpec([None, 3])]).get_concrete_function()
    assert "reshape_like" in op_names(conc.module)
    spec = check(f, [tfc.TensorSpec([None, 3])], [rand(rng, 4, 3)])
    assert "reshape_like" not in op_names(spec)


def test_slices_concat_and_their_gradients(rng):
    def f(x, y):
        with tfc.GradientTape() as t:
            t.watch([x, y])
            c = tfc.concat([x[1:], y], axis=0)
            z = tfc.reduce_sum(c * c) + tfc.reduce_sum(tfc.tile(x, [2, 1]))
        return [c, *t.gradient(z, [x, y])]

    sig = [tfc.TensorSpec([None, 4]), tfc.TensorSpec([None, 4])]
    spec = check(f, sig, [rand(rng, 3, 4), rand(rng, 5, 4)])
    assert not op_names(spec) & {"split_like", "slice_grad_like", "tile_grad_like"}
    check(f, sig, [rand(rng, 1, 4), rand(rng, 0, 4)])


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
def test_pad_gradient(mode, rng):
    def f(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            z = tfc.reduce_sum(tfc.sin(tfc.pad(x, [[2, 1], [0, 3]], mode=mode)))
        return t.gradient(z, x)

    sig = [tfc.TensorSpec([None, None])]
    conc = tfc.function(f, input_signature=sig).get_concrete_function()
    assert "pad_grad_like" in op_names(conc.module)
    for shape in ((4, 5), (3, 4)):
        spec = check(f, sig, [rand(rng, *shape)])
        assert "pad_grad_like" not in op_names(spec)
        static = tfc.function(f, input_signature=[tfc.TensorSpec(shape)]).get_concrete_function()
        assert print_ir(spec) == print_ir(static.module)


def test_conv_and_pooling_gradients_with_none_image_sizes(rng):
    def f(x, w):
        with tfc.GradientTape() as t:
            t.watch([x, w])
            y = tfc.nn.conv2d(x, w, strides=1, padding="SAME")
            z = tfc.reduce_sum(tfc.nn.avg_pool2d(tfc.tanh(y), ksize=2, strides=2, padding="SAME"))
        return [y, *t.gradient(z, [x, w])]

    sig = [tfc.TensorSpec([None, None, None, 2]), tfc.TensorSpec([None, None, 2, 3])]
    conc = tfc.function(f, input_signature=sig).get_concrete_function()
    assert {"conv2d_backprop_input_like", "conv2d_backprop_filter_like", "avg_pool2d_grad_like"} <= op_names(conc.module)
    for xs, ws in (((2, 5, 7, 2), (3, 3, 2, 3)), ((1, 4, 4, 2), (1, 2, 2, 3))):
        spec = check(f, sig, [rand(rng, *xs), rand(rng, *ws)])
        assert not {n for n in op_names(spec) if n.endswith("_like")}, op_names(spec)
        static = tfc.function(f, input_signature=[tfc.TensorSpec(xs), tfc.TensorSpec(ws)]).get_concrete_function()
        assert print_ir(spec) == print_ir(static.module)


@pytest.mark.parametrize("axis, ishape", [(0, (5,)), (1, (2, 3)), (-2, (4,))])
def test_gather_gradient(axis, ishape, rng):
    def f(x, i):
        with tfc.GradientTape() as t:
            t.watch(x)
            z = tfc.reduce_sum(tfc.sin(tfc.gather(x, i, axis=axis)))
        return t.gradient(z, x)

    sig = [tfc.TensorSpec([None, None, 2]), tfc.TensorSpec([None] * len(ishape), tfc.int32)]
    conc = tfc.function(f, input_signature=sig).get_concrete_function()
    assert "gather_grad_like" in op_names(conc.module)
    x = rand(rng, 3, 4, 2)
    n = x.shape[axis]
    i = rng.integers(0, n, ishape).astype(np.int32)  # repeated indices: their rows add up in order
    spec = check(f, sig, [x, i])
    assert "gather_grad_like" not in op_names(spec)
    check(f, sig, [rand(rng, 0, 4, 2) if axis != 0 else rand(rng, 3, 0, 2), i[..., :0]])


def test_class_count_known_only_at_run_time(rng):
    """The sparse cross-entropy's gradient with a None class count (range_along
    for the class indices): range after specialization, folded when small."""
    def f(logits, labels):
        with tfc.GradientTape() as t:
            t.watch(logits)
            loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        return loss, t.gradient(loss, logits)

    sig = [tfc.TensorSpec([None, None]), tfc.TensorSpec([None], tfc.int32)]
    conc = tfc.function(f, input_signature=sig).get_concrete_function()
    assert {"range_along", "count_along"} <= op_names(conc.module)
    for n, k in ((5, 3), (2, 11), (0, 4)):
        spec = check(f, sig, [rand(rng, n, k), rng.integers(0, k, n).astype(np.int32)])
        assert not op_names(spec) & {"range_along", "count_along"}


def _bcast_grads(x, y):
    with tfc.GradientTape() as t:
        t.watch([x, y])
        z = tfc.reduce_sum(tfc.tanh(x * y + y))
    return t.gradient(z, [x, y])


def _slices_grads(x, y):
    with tfc.GradientTape() as t:
        t.watch([x, y])
        c = tfc.concat([x[1:], y], axis=0)
        z = tfc.reduce_sum(c * c) + tfc.reduce_sum(tfc.tile(x, [2, 1])) + tfc.reduce_mean(tfc.gather(x, [2, 0, 2]))
    return [c, *t.gradient(z, [x, y])]


def _xent_grads(logits, labels):
    with tfc.GradientTape() as t:
        t.watch(logits)
        loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    return loss, t.gradient(loss, logits)


@pytest.mark.parametrize("fn, sig, shapes", [
    (_bcast_grads, [[None, None], [None, None]], [(3, 1), (3, 4)]),
    (_bcast_grads, [[None, None], [None, None]], [(3, 5), (1, 5)]),
    (_slices_grads, [[None, 4], [None, 4]], [(3, 4), (5, 4)]),
    (_xent_grads, [[None, None], [None]], [(5, 3), (5,)]),
])
def test_specialized_gradients_are_the_static_trace(fn, sig, shapes):
    """After DEFAULT_L1, a gradient traced with None dims and specialized is the
    IR that a trace with the static shapes gives: nothing is left of the
    run-time shape computations."""
    dts = [tfc.int32 if fn is _xent_grads and k == 1 else tfc.float32 for k in range(len(sig))]
    dynamic = tfc.function(fn, input_signature=[tfc.TensorSpec(s, d) for s, d in zip(sig, dts)])
    static = tfc.function(fn, input_signature=[tfc.TensorSpec(s, d) for s, d in zip(shapes, dts)])
    spec = run_pipeline(specialize(dynamic.get_concrete_function().module, shapes), DEFAULT_L1)
    assert print_ir(spec) == print_ir(static.get_concrete_function().module)


# -- control flow ---------------------------------------------------------------------------------


def loops(x, y):
    i = tfc.constant(0)
    s = x
    t = x
    while i < 3:
        s = s + y          # keeps its shape
        t = tfc.concat([t, y], axis=0)  # grows each iteration
        i += 1
    return s, t


def test_while_shape_keeping_and_shape_changing(rng):
    sig = [tfc.TensorSpec([None]), tfc.TensorSpec([None])]
    spec = check(loops, sig, [rand(rng, 4), rand(rng, 4)], static=False)
    (w,) = [op for op in spec.walk() if op.name == "tfc.while"]
    kinds = [spec_of(r.type).shape for r in w.results]
    assert kinds == [(), (4,), (None,)]  # s stays static; t widens to ? at the fixed point
    for block in (w.cond_region.block, w.body_region.block):
        assert [spec_of(a.type).shape for a in block.args] == kinds
    check(loops, sig, [rand(rng, 0), rand(rng, 0)], static=False)


def test_while_grows_from_a_static_init_in_the_body_only(rng):
    def f(x):
        i = tfc.constant(0)
        acc = tfc.zeros([2])
        while i < 3:
            tfc.autograph.set_loop_options(shape_invariants=[(acc, (None,))])  # (2,) grows
            acc = tfc.concat([acc, x[:1]], axis=0)
            i += 1
        return acc * 2.0

    check(f, [tfc.TensorSpec([None])], [rand(rng, 3)], static=False)


def branches(x):
    if tfc.reduce_sum(x) > 0.0:
        r = tfc.concat([x, x], axis=0)
        k = x + 1.0
    else:
        r = x * 2.0
        k = x - 1.0
    return r, k


def test_cond_joins_its_branches(rng):
    sig = [tfc.TensorSpec([None])]
    for x in (np.abs(rand(rng, 3)), -np.abs(rand(rng, 3))):
        spec = check(branches, sig, [x], static=False)
        (c,) = [op for op in spec.walk() if op.name == "tfc.cond"]
        # r: (6,) or (3,), so ?; k: (3,) on both branches
        assert sorted((spec_of(r.type).shape for r in c.results), key=str) == [(3,), (None,)]


def test_cond_inside_while_gradient(rng):
    def f(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            i = tfc.constant(0)
            s = x
            while i < 3:
                if tfc.reduce_sum(s) > 0.0:
                    s = s * 0.5
                else:
                    s = s + 1.0
                i += 1
            z = tfc.reduce_sum(s * s)
        return t.gradient(z, x)

    sig = [tfc.TensorSpec([None, 2])]
    check(f, sig, [rand(rng, 3, 2)], static=False)
    check(f, sig, [np.zeros((0, 2), F32)], static=False)


def test_growing_tensor_array_and_loop_state_lists_stay_dynamic(rng):
    """Values whose shapes depend on the data (a TensorArray that grows, the
    state lists of a loop's gradient) keep their ? dims; the rest is static."""
    def ta(x):
        arr = tfc.TensorArray(tfc.float32, size=0, dynamic_size=True, element_shape=[2])
        i = tfc.constant(0)
        while i < 3:
            arr = arr.write(i, x[0] * tfc.cast(i, tfc.float32))
            i += 1
        return arr.stack(), x * 2.0

    spec = check(ta, [tfc.TensorSpec([None, 2])], [rand(rng, 3, 2)], static=False)
    (f,) = list(spec.ops)
    assert [spec_of(t).shape for t in f.function_type.outputs] == [(None, 2), (3, 2)]

    def grows(x):
        with tfc.GradientTape() as t:
            t.watch(x)
            i = tfc.constant(0)
            s = x
            while i < 3:
                s = tfc.concat([s, x[:1]], axis=0) * 0.5
                i += 1
            z = tfc.reduce_sum(s * s)
        return t.gradient(z, x)

    conc = tfc.function(grows, input_signature=[tfc.TensorSpec([None, 2])]).get_concrete_function()
    assert "state_list_push" in op_names(conc.module)
    check(grows, [tfc.TensorSpec([None, 2])], [rand(rng, 3, 2)], static=False)
    check(grows, [tfc.TensorSpec([None, 2])], [rand(rng, 1, 2)], static=False)


def test_variables_updated_in_a_training_step(rng):
    """A step that assigns its variables: the assigned values become static,
    as the variables' types are; the updates are eager's."""
    w = tfc.Variable(rng.standard_normal((4, 3)).astype(F32))
    b = tfc.Variable(np.zeros(3, F32))

    def step(x):
        with tfc.GradientTape() as t:
            loss = tfc.reduce_mean(tfc.square(tfc.matmul(x, w) + b))
        gw, gb = t.gradient(loss, [w, b])
        w.assign_sub(0.1 * gw)
        b.assign_sub(0.1 * gb)
        return loss

    sig = [tfc.TensorSpec([None, 4])]
    conc = tfc.function(step, input_signature=sig).get_concrete_function()
    x = rand(rng, 6, 4)
    spec = specialize(conc.module, [(6, 4)])
    run_pipeline(spec, DEFAULT_L1)
    assert not run_time_dims(spec)
    start = [v.numpy().copy() for v in conc.variables]
    cells = [Cell(a.copy()) for a in start]
    (loss,) = reference.run(spec, [x] + cells)
    cells2 = [Cell(a.copy()) for a in start]
    (loss2,), _, _ = backend_run(spec, [x] + cells2, conc.name)
    want = step(tfc.constant(x)).numpy()  # eager: updates w and b
    same(loss, want, "loss")
    same(loss2, want, "loss (numpy backend)")
    for c, c2, v in zip(cells, cells2, conc.variables):
        same(c.value, v.numpy(), v.name)
        same(c2.value, v.numpy(), v.name)


# -- errors ---------------------------------------------------------------------------------------


def add(x, y):
    return x + y  # line: add


def line_of(tag):
    src = open(__file__).read().splitlines()
    return next(i + 1 for i, s in enumerate(src) if s.endswith(f"# line: {tag}"))


def test_incompatible_shapes_raise_eagers_error_at_the_users_line():
    conc = tfc.function(add, input_signature=[tfc.TensorSpec([None])] * 2).get_concrete_function()
    with pytest.raises(Exception) as eager:
        add(tfc.constant(np.ones(3, F32)), tfc.constant(np.ones(4, F32)))
    with pytest.raises(Exception) as got:
        specialize(conc.module, [(3,), (4,)])
    assert type(got.value) is type(eager.value)
    assert str(got.value) == str(eager.value)
    notes = [n for n in got.value.__notes__ if n.startswith("  at ")]
    assert len(notes) == 1
    m = re.match(r"  at (.+?):(\d+)", notes[0])
    assert (m.group(1), int(m.group(2))) == (__file__, line_of("add"))


def test_batch_of_incompatible_size_in_the_mlp():
    hidden, out = mlp()

    def predict(x, y):
        return out(hidden(x)) + y  # line: mlp add

    conc = tfc.function(predict, input_signature=[tfc.TensorSpec([None, 64]),
                                                    tfc.TensorSpec([None, 10])]).get_concrete_function()
    with pytest.raises(ValueError) as got:
        specialize(conc.module, [(4, 64), (5, 10)] + [None] * 4)
    with pytest.raises(ValueError) as eager:
        predict(tfc.zeros((4, 64)), tfc.zeros((5, 10)))
    assert str(got.value) == str(eager.value)
    assert f"  at {__file__}:{line_of('mlp add')}" in got.value.__notes__


def test_arguments_must_fit_their_types():
    conc = tfc.function(add, input_signature=[tfc.TensorSpec([None, 3])] * 2).get_concrete_function()
    with pytest.raises(ValueError, match=r"argument 0 of @add has type tensor<\?x3xf32>; shape \(2, 4\)"):
        specialize(conc.module, [(2, 4), (2, 3)])
    with pytest.raises(ValueError, match="not compatible"):
        specialize(conc.module, [(2,), (2, 3)])
    with pytest.raises(ValueError, match="takes 2 arguments"):
        specialize(conc.module, [(2, 3)])
    with pytest.raises(ValueError, match="bad dimension"):
        specialize(conc.module, [(-1, 3), (2, 3)])


def test_variables_keep_their_types_and_shapes_per_tensor_argument(rng):
    hidden, out = mlp()

    def predict(x):
        return out(hidden(x))

    conc = tfc.function(predict, input_signature=[tfc.TensorSpec([None, 64])]).get_concrete_function()
    a = specialize(conc.module, [(3, 64)])  # one shape per tensor argument
    b = specialize(conc.module, [(3, 64), None, None, None, None])  # one per argument
    assert print_ir(a) == print_ir(b)
    (f,) = list(a.ops)
    assert list(f.function_type.inputs.data[1:]) == list(list(conc.module.ops)[0].function_type.inputs.data[1:])
    with pytest.raises(ValueError, match="is a variable"):
        specialize(conc.module, [(3, 64), (2, 2), None, None, None])


# -- static forms, on hand-written IR --------------------------------------------------------------


STATIC_FORMS = """
func.func @f(%x: tensor<?x?xf32>, %y: tensor<?xf32>, %z: tensor<?x1xf32>, %w: tensor<?xf32>) -> (tensor<?xf32>, tensor<?x?xf32>, tensor<?x1xf32>, tensor<i64>, tensor<?xf16>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>) {
  %r = tfc.reshape_like %x, %y : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %b = tfc.broadcast_like %z, %x : (tensor<?x1xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %u = tfc.unbroadcast_like %x, %z : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %c = tfc.count_along %x {axes = array<i64: 0, 1>} : (tensor<?x?xf32>) -> tensor<i64>
  %g = tfc.range_along %y {axis = 0 : i64, dtype = f16} : (tensor<?xf32>) -> tensor<?xf16>
  %u2 = tfc.unbroadcast_like %x, %w : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %s1, %s2 = tfc.split_like %x, %z, %z {axis = 1 : i64} : (tensor<?x?xf32>, tensor<?x1xf32>, tensor<?x1xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>)
  %sg = tfc.slice_grad_like %z, %x {index = ["::", "1:2:"]} : (tensor<?x1xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  func.return %r, %b, %u, %c, %g, %u2, %s1, %s2, %sg : tensor<?xf32>, tensor<?x?xf32>, tensor<?x1xf32>, tensor<i64>, tensor<?xf16>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
}
"""


@pytest.mark.parametrize("shapes", [[(3, 2), (6,), (3, 1), (2,)], [(0, 2), (0,), (0, 1), (2,)], [(2000, 2), (4000,), (2000, 1), (2,)]])
def test_static_forms_compute_the_like_ops_bits(shapes, rng):
    module = parse_module(STATIC_FORMS)
    args = [rand(rng, *s) for s in shapes]
    want = reference.run(module, args)
    spec = specialize(module, shapes)
    names = op_names(spec)
    assert not {n for n in names if n.endswith("_like")} and not names & {"count_along", "range_along"}, names
    assert {"reshape", "broadcast_to", "reduce_sum", "range", "split", "slice_grad"} <= names
    assert not run_time_dims(spec)
    for k, (g, w) in enumerate(zip(reference.run(spec, args), want)):
        same(g, w, f"result {k}")
    run_pipeline(spec, DEFAULT_L1)
    for k, (g, w) in enumerate(zip(reference.run(spec, args), want)):
        same(g, w, f"result {k} after DEFAULT_L1")
    for k, (g, w) in enumerate(zip(backend_run(spec, args)[0], want)):
        same(g, w, f"numpy backend, result {k}")


def test_like_ops_stay_where_the_shape_is_still_unknown():
    module = parse_module(STATIC_FORMS)
    spec = specialize(module, [(3, None), (None,), (3, 1), (None,)])
    assert {"reshape_like", "range_along", "count_along", "unbroadcast_like"} <= op_names(spec)
    assert "split_like" not in op_names(spec)  # the sizes it cuts along are known: (3, 1) twice


# -- the pass ---------------------------------------------------------------------------------------


def test_parse_shapes():
    assert parse_shapes("4x64,2,(),?x3") == [(4, 64), (2,), (), (None, 3)]
    assert parse_shapes("") == []
    assert parse_shapes("1,,2") == [(1,), (), (2,)]
    with pytest.raises(ValueError, match="bad shape"):
        parse_shapes("4*64")


def test_pass_in_place_with_options():
    from xdsl.passes import PassPipeline

    from tfc.dialects.tensor import context

    module = parse_module(STATIC_FORMS)
    (p,) = PassPipeline.parse_spec({"tfc-specialize": lambda: SpecializePass}, 'tfc-specialize{shapes="3x2,6,3x1,2"}').passes
    assert p == SpecializePass(shapes="3x2,6,3x1,2")
    p.apply(context(), module)
    module.verify()
    assert not run_time_dims(module)
    with pytest.raises(OpVerifyError, match="takes 4 tensor arguments"):
        SpecializePass(shapes="3x2").apply(context(), parse_module(STATIC_FORMS))
    with pytest.raises(OpVerifyError, match=r"argument 1 of @f has type tensor<\?xf32>; shape \(6, 1\)"):
        SpecializePass(shapes="3x2,6x1,3x1,2").apply(context(), parse_module(STATIC_FORMS))
    with pytest.raises(ValueError, match="bad shape '3-2'"):  # when the pipeline is parsed
        SpecializePass(shapes="3-2")


def test_pass_reports_inference_errors_at_the_op():
    text = ('func.func @f(%x: tensor<?xf32>, %y: tensor<?xf32>) -> tensor<?xf32> {\n'
            '  %a = tfc.add %x, %y : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32> loc("m.py":7:0)\n'
            '  func.return %a : tensor<?xf32>\n}\n')
    from tfc.dialects.tensor import context

    with pytest.raises(OpVerifyError) as e:
        SpecializePass(shapes="3,4").apply(context(), parse_module(text))
    assert e.value.location == "m.py:7"
    assert "tfc.add" in e.value.reason and "(3,)" in e.value.reason and "(4,)" in e.value.reason


# -- random programs (the differential fuzzer's generator) -----------------------------------------


def _fuzz(seed, n, grad, tmp_path):
    """For each random program: traced with its None signature, specialized to
    its inputs' shapes, DEFAULT_L1, run by the reference executor: eager's
    bits (or eager's error, at the same line). Returns (programs run, eager errors)."""
    from tests.fuzz import run as fz
    from tests.fuzz.programs import generate

    documented = {"last-bit", "none-vs-zeros-cf"}  # the fuzzer's documented exceptions
    errors = 0
    for index in range(n):
        p = generate(seed, index, grad=grad)
        mod = fz._import(p.source(), str(tmp_path), p.name)
        try:
            want = fz._flatten(mod.prog(*[tfc.constant(v) for v in p.values]))
        except Exception as e:  # noqa: BLE001
            want = e
            errors += 1
        try:
            conc = tfc.function(mod.prog, input_signature=fz._specs(tfc, p, True)).get_concrete_function()
            spec = run_pipeline(specialize(conc.module, [tuple(s) for s in p.shapes]), DEFAULT_L1)
            spec.verify()
            results = iter(reference.run(spec, [np.asarray(v) for v in p.values]))
            got = [next(results) if m else s for m, s in zip(conc._out_mask, conc._out_static)]
        except Exception as e:  # noqa: BLE001
            got = e
        found = fz.compare(p, want, got)
        assert found is None or found[0] in documented, f"program {seed}/{index}: {found}\n{p.source()}"
    return n, errors


def test_random_programs(tmp_path):
    n, errors = _fuzz(17, 25, False, tmp_path)
    assert errors < n // 4  # most programs run: the batch tests something


def test_random_gradient_programs(tmp_path):
    n, errors = _fuzz(26, 25, True, tmp_path)
    assert errors < n // 4


def pick(x):
    if tfc.reduce_sum(x) > 100.0:
        y = x[5]  # line: pick
    else:
        y = x[0]
    return y


def test_an_op_that_refuses_the_shapes_in_a_branch_raises_eagers_error_type():
    """Both branches are specialized (as a static trace types both): an op of a
    branch that may not run raises what eager raises there (here IndexError,
    not a ValueError), at its line; the caller decides (a generic form runs it)."""
    conc = tfc.function(pick, input_signature=[tfc.TensorSpec([None])]).get_concrete_function()
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3") as e:
        specialize(conc.module, [(3,)])
    assert e.value.__notes__ == [f"  at {__file__}:{line_of('pick')}"]
    specialize(conc.module, [(6,)])
