"""Where scalars live (issue #16, point 4): a 0-d value that a kernel makes is a
0-d buffer that later kernels read; ``loops.load`` (the host read) appears only
where the host needs the value. Bitwise against eager."""
import io
import pathlib
import sys

import numpy as np
import pytest
from xdsl.dialects import arith, func

import tfc
from helpers import assert_bit_identical
from tfc.dialects import loops as L

_BENCH = str(pathlib.Path(__file__).resolve().parents[1] / "bench")


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


same = assert_bit_identical  # eager against compiled, bit for bit


def check(fn, *args):
    f = tfc.function(fn)
    same(f(*args), fn(*args))
    return f.get_concrete_function(*args)


# what needs a value on the host: control flow, results, variables, printing, library
# calls given scalars, loop variables and branch results (scalars in L3)
HOST_USERS = (L.IfOp, L.ConditionOp, func.ReturnOp, L.AssignVariableOp, L.PrintOp, L.AssertOp,
              L.LibraryOp, L.RaiseOp, L.WhileOp)


def assert_loads_at_host_uses(module):
    loads = [op for op in module.walk() if isinstance(op, L.LoadOp)]
    for ld in loads:
        for u in ld.result.uses:
            user = u.operation
            ok = isinstance(user, HOST_USERS) or (
                isinstance(user, L.YieldOp) and isinstance(user.parent_op(), (L.IfOp, L.WhileOp)))
            assert ok, f"{ld} is read by {user.name}, no host use"
    return loads


def scalar_kernels(module):
    return [op for op in module.walk() if isinstance(op, L.ParallelOp) and op.iteration_shape == ()]


@pytest.mark.parametrize("shape", [(7, 5), (1,), (0, 3), (33, 17)])
def test_reduction_read_by_kernel_stays_a_buffer(shape):
    x = f32(*shape)
    cf = check(lambda x: x * tfc.reduce_sum(x) - tfc.reduce_mean(x * x), x)
    assert not assert_loads_at_host_uses(cf.loops_module)


def test_non_contiguous_input():
    x = f32(9, 12, seed=1)[::2, 1::3]
    cf = check(lambda x: x / (tfc.reduce_max(x) - tfc.reduce_min(x) + 1.0), x)
    assert not assert_loads_at_host_uses(cf.loops_module)


def test_scalar_code_on_kernel_values_is_a_0d_kernel():
    """sum / max + 1 (0-d, from kernels) is a loops.parallel over shape (): the
    kernel reading it gets the 0-d buffer; the result is read on the host once,
    to be returned."""
    def fn(x):
        s = tfc.reduce_sum(x) / tfc.reduce_max(tfc.abs(x)) + 1.0
        return x * s, s

    cf = check(fn, f32(6, 4, seed=2))
    (k,) = scalar_kernels(cf.loops_module)
    assert all(isinstance(v.type, L.MemRefType) for v in k.ins)
    loads = assert_loads_at_host_uses(cf.loops_module)
    assert len(loads) == 1 and isinstance(next(iter(loads[0].result.uses)).operation, func.ReturnOp)


def test_host_only_scalar_code_stays_inline():
    def fn(x, a):
        return x * 2.0, a * 2.0 + 1.0

    cf = check(fn, f32(3, 3), tfc.constant(np.float32(1.5)))
    assert not scalar_kernels(cf.loops_module)
    assert any(isinstance(op, arith.MulfOp) and isinstance(op.parent_op(), func.FuncOp)
               for op in cf.loops_module.walk())


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.float16])
def test_0d_results_and_dtypes(dtype):
    x = (f32(5, 6, seed=3) * 10).astype(dtype)

    def fn(x):
        s = tfc.reduce_sum(x)
        m = tfc.reduce_max(x)
        return s * 2 + m, x - m, tfc.reduce_any(x > m)

    cf = check(fn, x)
    assert_loads_at_host_uses(cf.loops_module)


def test_cond_on_reduction_loads_the_predicate():
    def fn(x):
        return tfc.cond(tfc.reduce_sum(x) > 0.0, lambda: x * tfc.reduce_max(x), lambda: x - tfc.reduce_min(x))

    for seed in range(4):
        cf = check(fn, f32(4, 5, seed=seed))
    loads = assert_loads_at_host_uses(cf.loops_module)
    assert len(loads) == 1 and isinstance(next(iter(loads[0].result.uses)).operation, L.IfOp)


def test_while_on_reduction_loads_the_condition():
    def fn(x):
        return tfc.while_loop(lambda x: tfc.reduce_sum(tfc.abs(x)) > 1.0, lambda x: (x * 0.5,), (x,))[0]

    cf = check(fn, f32(4, 5, seed=5) * 10)
    loads = assert_loads_at_host_uses(cf.loops_module)
    assert len(loads) == 1 and isinstance(next(iter(loads[0].result.uses)).operation, L.ConditionOp)


def test_0d_loop_variables_and_branch_results_cross_to_the_host():
    def fn(x, n):
        def body(i, acc, x):
            acc = acc + tfc.reduce_sum(x)      # a loop variable: a host scalar
            return i + 1, acc, x * 0.75
        _, acc, y = tfc.while_loop(lambda i, acc, x: i < n, body, (tfc.constant(0), tfc.constant(0.0), x))
        b = tfc.cond(acc > 0.0, lambda: tfc.reduce_max(y), lambda: tfc.reduce_min(y))
        return acc, b, y * b

    for n in (0, 1, 4):
        cf = check(fn, f32(3, 4, seed=6), tfc.constant(n))
    assert_loads_at_host_uses(cf.loops_module)


def test_print_assert_and_variable():
    v = tfc.Variable(np.float32(0.0))

    def fn(x):
        s = tfc.reduce_sum(x)
        tfc.print("sum", s)
        tfc.Assert(s > -1e9, [s])
        v.assign(s * 2.0)
        return x - s

    x = f32(4, 4, seed=7)
    f = tfc.function(fn)
    buf = io.StringIO()
    old = sys.stderr
    sys.stderr = buf
    try:
        got = f(x)
        got_v = v.numpy()
        want = fn(x)
    finally:
        sys.stderr = old
    same([got, got_v], [want, v.numpy()])
    lines = buf.getvalue().splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]
    assert_loads_at_host_uses(f.get_concrete_function(x).loops_module)


def test_mlp_training_step_loads_at_host_uses():
    if _BENCH not in sys.path:
        sys.path.insert(0, _BENCH)
    import mlp_step

    x, labels, params = mlp_step.make_data(batch=16)
    step, _ = mlp_step.make_tfc(x, labels, params, compiled=True)
    step()
    loads = assert_loads_at_host_uses(step.get_concrete_function().loops_module)
    assert any(isinstance(u.operation, func.ReturnOp) for ld in loads for u in ld.result.uses)  # the loss
