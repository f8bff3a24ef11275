"""The numpy backend (L3 lowering, memory plan, generated module): compiled
results equal eager ones exactly (every registry op, random op graphs, control
flow on scalars, training-step gradients); the memory plan's invariants; the
disk cache; verify=True."""
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import tfc
from tfc.backends.numpy import Compiled, blas, run_loops
from tfc.backends.numpy.emitter import emit_function
from tfc.backends.reference import run
from tfc.core.registry import REGISTRY
from tfc.dialects import tensor as T
from tfc.passes.driver import lower
from tfc.passes.plan_memory import ALIGN

from helpers import assert_meets_contract
from test_fusion import programs
from test_ir_dialect import sample, trace


def _same(got, want):
    """Compiled ``got`` against eager's ``want``, as the numpy backend's numerics contract says."""
    assert_meets_contract(got, want)


def _compile_and_run(module, args):
    st = lower(module)
    source, consts, scratch = emit_function(st.function)
    c = Compiled("f", source, consts, st.plan, scratch, "<test>")
    return c(list(args)), st


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_op_eager_vs_compiled(name):
    """Traced without folding (the sample's tensors stay constants), fused,
    lowered and run by the generated module: bit-identical to eager."""
    fn = sample(name)
    eager = fn()
    m = trace(fn)
    got, _ = _compile_and_run(m, [])
    want = eager if isinstance(eager, (list, tuple)) else [eager]
    for g, w in zip(got, want):
        _same(g, w.numpy())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_compiled_equal_reference(prog):
    """Random graphs of elementwise, broadcast, reduction and cast ops: the
    generated module gives exactly what the reference (eager kernels) gives."""
    module, args = prog
    want = run(module, args)
    got, st = _compile_and_run(module, args)
    for g, w in zip(got, want):
        _same(g, w)
    text = T.print_ir(st.loops)  # L3 prints and parses back
    assert T.print_ir(T.parse_module(text)) == text


def _plan_ok(plan):
    arena = [b for b in plan.buffers if b.kind == "arena"]
    for b in arena:
        assert b.offset % ALIGN == 0 and b.offset + b.nbytes <= plan.arena_size
    for i, a in enumerate(arena):  # buffers live at the same time never overlap
        for b in arena[i + 1:]:
            if not (a.live[1] < b.live[0] or b.live[1] < a.live[0]):
                assert a.offset + a.nbytes <= b.offset or b.offset + b.nbytes <= a.offset, (a, b)
    assert plan.peak <= plan.arena_size


def test_memory_plan_reuses_and_goes_in_place():
    @tfc.function
    def f(x):
        a = tfc.exp(x)          # kernel 1
        b = tfc.matmul(a, a)    # reads a: a's buffer cannot be reused by b
        c = tfc.tanh(b) * 2.0   # b dies here: in place
        d = tfc.reduce_sum(c, axis=1, keepdims=True)
        e = tfc.sqrt(tfc.abs(c - d))  # c dies: in place again
        return tfc.matmul(e, e)
    x = np.random.default_rng(0).normal(size=(64, 64)).astype(np.float32)
    conc = f.get_concrete_function(x)
    plan = conc.memory_plan
    _plan_ok(plan)
    assert sum(b.inplace for b in plan.buffers) >= 2
    nbytes = 64 * 64 * 4
    # without reuse: 5 buffers of 16 KB; with it, two fit
    assert plan.arena_size <= 2 * nbytes + 2 * ALIGN + 64 * 4 + ALIGN
    assert plan.peak <= plan.arena_size
    assert "arena" in str(plan) and "fresh" in str(plan)
    want = (lambda x: tfc.matmul(*(2 * [tfc.sqrt(tfc.abs((c := tfc.tanh(tfc.matmul(tfc.exp(x), tfc.exp(x))) * 2.0)
                                                         - tfc.reduce_sum(c, axis=1, keepdims=True)))])))(
        tfc.constant(x))
    _same(f(x).numpy(), want.numpy())
    # the generated code allocates only the plan's fresh buffers and the arena (once)
    src = conc.source
    assert src.count("np.empty(") + src.count("R.empty(") == sum(1 for b in plan.buffers if b.kind == "fresh")
    assert "out=" in src and "rt.kernel_into('matmul')" in src  # BLAS writes into the arena


def test_arena_reused_across_calls_results_are_fresh():
    @tfc.function
    def f(x):
        return tfc.exp(x) + 1.0, tfc.reduce_sum(tfc.exp(x) * 3.0)
    x1 = np.ones(5, np.float32)
    r1, s1 = f(x1)
    keep = r1.numpy().copy()
    r2, _ = f(x1 * 2)
    _same(r1.numpy(), keep)  # the first result was not overwritten by the second call
    assert s1.numpy().dtype == np.float32 and s1.shape == ()
    conc = f.get_concrete_function(x1)
    assert len(conc.compiled.runtime._arenas) == 1


def test_large_result_buffers_reused_only_when_dead():
    @tfc.function
    def f(x):
        return x * 2.0 + 1.0
    x = np.arange(1 << 19, dtype=np.float32)  # 2 MiB: from the runtime's result cache
    assert "R.empty(" in f.get_concrete_function(x).source
    ptr = lambda t: t.numpy().ctypes.data  # noqa: E731
    r1 = f(x)
    keep, p1 = r1.numpy().copy(), ptr(r1)
    r2 = f(x + 1)
    assert ptr(r2) != p1
    _same(r1.numpy(), keep)  # a live result is never written again
    view = r1.numpy()[3:]  # a view keeps the buffer alive
    del r1
    r3 = f(x + 2)
    assert ptr(r3) not in (p1, ptr(r2))
    _same(view, keep[3:])
    del view, r3
    r4 = f(x)
    assert ptr(r4) == p1  # nothing references the first buffer: reused
    _same(r4.numpy(), x * 2 + 1)
    _same(r2.numpy(), (x + 1) * 2 + 1)


def test_stages_and_source_visible():
    @tfc.function
    def f(x, n):
        def body(i, acc):
            return i + 1, acc * 0.5 + tfc.cast(i, tfc.float32)
        return tfc.while_loop(lambda i, acc: i < n, body, [tfc.constant(0), tfc.reduce_sum(x)])[1]
    conc = f.get_concrete_function(np.ones(3, np.float32), np.array(5, np.int32))
    loops = conc.ir("loops")
    assert "loops.while" in loops and "loops.parallel" in loops
    assert "    while " in conc.source and "def build(K, R" in conc.source
    # the loop on 0-d values is scalar code: no array per iteration
    assert f(np.ones(3, np.float32), np.array(5, np.int32)).numpy() == pytest.approx(
        (((((3 * .5 + 0) * .5 + 1) * .5 + 2) * .5 + 3) * .5 + 4))


def test_collatz_scalar_control_flow_int32_semantics():
    def collatz(n):
        steps = tfc.constant(0)
        while n != 1:
            n = tfc.where(n % 2 == 0, n // 2, 3 * n + 1)
            steps += 1
        return steps

    @tfc.function
    def compiled(n):
        def body(n, s):
            return tfc.where(n % 2 == 0, n // 2, 3 * n + 1), s + 1
        return tfc.while_loop(lambda n, s: n != 1, body, [n, tfc.constant(0)])[1]

    for start in (27, 97, 871):
        _same(compiled(np.array(start, np.int32)).numpy(), collatz(tfc.constant(np.int32(start))).numpy())

    @tfc.function
    def wrap(a):
        return a * 65536 * 65536 + 2147483647 + a
    _same(wrap(np.array(3, np.int32)).numpy(), (tfc.constant(np.int32(3)) * 65536 * 65536 + 2147483647 + 3).numpy())


def test_float32_scalars_round_like_eager():
    @tfc.function
    def f(x):
        y = x
        for _ in range(20):
            y = y * 1.1 + 1e-3
        return y / 3.0
    x = np.array(0.1, np.float32)
    y = tfc.constant(x)
    for _ in range(20):
        y = y * 1.1 + 1e-3
    _same(f(x).numpy(), (y / 3.0).numpy())


def test_training_step_gradients_equal_eager():
    rng = np.random.default_rng(1)
    w0 = rng.normal(size=(8, 4)).astype(np.float32)
    b0 = np.zeros(4, np.float32)
    x = rng.normal(size=(16, 8)).astype(np.float32)
    y = (rng.random(size=(16, 4)) > 0.5).astype(np.float32)

    def step(w, b, x, y):
        with tfc.GradientTape() as tape:
            logits = tfc.matmul(x, w) + b
            loss = tfc.reduce_mean(tfc.nn.sigmoid_cross_entropy_with_logits(y, logits))
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.1 * gw)
        b.assign_sub(0.1 * gb)
        return loss, gw, gb

    we, be = tfc.Variable(w0), tfc.Variable(b0)
    wc, bc = tfc.Variable(w0), tfc.Variable(b0)
    cstep = tfc.function(step)
    for _ in range(3):
        le, gwe, gbe = step(we, be, tfc.constant(x), tfc.constant(y))
        lc, gwc, gbc = cstep(wc, bc, x, y)
        for a, b in ((lc, le), (gwc, gwe), (gbc, gbe)):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(wc.numpy(), we.numpy(), rtol=1e-6, atol=1e-7)


def test_verify_names_the_op_and_line(monkeypatch):
    @tfc.function(verify=True)
    def f(x):
        y = tfc.exp(x) * 2.0
        return tfc.sqrt(y) + 1.0

    x = np.ones(4, np.float32)
    _same(f(x).numpy(), (tfc.sqrt(tfc.exp(tfc.constant(x)) * 2.0) + 1.0).numpy())
    # break the generated code: the divergence is reported at the first wrong value
    conc = f.get_concrete_function(x)
    verifier = conc.generic.verifier()  # [hooked executable, hook values, L2 values, reference]
    exe, got = verifier[0], verifier[1]
    src = exe.source.replace("np.exp(", "np.expm1(")
    verifier[0] = Compiled("f", src, [], exe.plan, exe.runtime.scratch_bytes, "<bad>",
                           lambda i, v: got.__setitem__(i, np.array(v)))
    with pytest.raises(AssertionError, match=r"tfc.fused \(.*math.exp.*\) .*test_numpy_backend.py:\d+"):
        f(x)


def test_disk_cache_second_process_does_not_compile(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import numpy as np, tfc\n"
        "import tfc.passes.driver as driver\n"
        "calls = []\n"
        "orig = driver.lower\n"
        "def spy(m):\n"
        "    calls.append(1); return orig(m)\n"
        "driver.lower = spy\n"
        "@tfc.function\n"
        "def f(x):\n"
        "    return tfc.tanh(x) * 2.0 + tfc.constant(np.arange(4, dtype=np.float32))\n"
        "print(f(np.ones(4, np.float32)).numpy().tolist(), len(calls))\n")
    env = dict(os.environ, TFC_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.getcwd())
    outs = [subprocess.run([sys.executable, str(prog)], env=env, capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    first, second = (o.split("] ") for o in outs)
    assert first[0] == second[0]
    assert first[1].strip() == "1" and second[1].strip() == "0"
    assert len(list((tmp_path / "cache").glob("*.py"))) == 1


def test_run_loops_executes_l3_text():
    text = """
func.func @f(%x: memref<4xf32>, %s: f32, %arena: memref<64xi8>) -> (memref<4xf32>, f32) {
  %b = loops.view %arena {offset = 0 : i64} : memref<64xi8> -> memref<4xf32>
  loops.parallel ins(%x, %s : memref<4xf32>, f32) outs(%b : memref<4xf32>) attributes {shape = array<i64: 4>, broadcast = [array<i64: 0>, array<i64>]} {
  ^bb0(%a: f32, %t: f32):
    %m = arith.mulf %a, %t : f32
    loops.yield %m : f32
  }
  %o = loops.alloc : memref<4xf32>
  loops.copy %b, %o : memref<4xf32>, memref<4xf32>
  %z = arith.constant 0.0 : f32
  %p = arith.cmpf ogt, %s, %z : f32
  %r = loops.if %p : (i1) -> (f32) {
    loops.yield %s : f32
  } else {
    loops.yield %z : f32
  }
  func.return %o, %r : memref<4xf32>, f32
}"""
    m = T.parse_module(text)
    o, r = run_loops(m, [np.arange(4, dtype=np.float32), np.array(2.5, np.float32)])
    _same(o, np.arange(4, dtype=np.float32) * np.float32(2.5))
    _same(r, np.float32(2.5))


# -- scalar code on Python numbers: bit-identical to eager ------------------------------

def _int_ops(a, b):
    """Every integer scalar op, including ones that overflow or divide by zero."""
    return [a + b, a - b, a * b, -a, tfc.abs(a), a // b, a % b, tfc.maximum(a, b), tfc.minimum(a, b),
            a * b * a + b, tfc.cast(a, tfc.int8), tfc.cast(a, tfc.float64), tfc.cast(a, tfc.float32),
            tfc.cast(a, tfc.bool), a < b, a == b, tfc.square(a), tfc.sign(a), tfc.clip_by_value(a, -3, 5)]


def _float_ops(x, y):
    return [x + y, x - y, x * y, x / y, -x, tfc.abs(x), x // y, x % y, tfc.maximum(x, y), tfc.minimum(x, y),
            tfc.exp(x), tfc.sqrt(x), tfc.floor(x), tfc.round(x), x ** y, x < y, x != y, tfc.sigmoid(x),
            tfc.cast(x, tfc.int32), tfc.cast(x, tfc.int8), tfc.cast(x, tfc.float16), tfc.cast(x, tfc.bool)]


def _check_scalars(ops, pairs, dtype):
    compiled = tfc.function(ops)
    for a, b in pairs:
        a, b = np.array(a, dtype), np.array(b, dtype)
        got = compiled(a, b)
        want = ops(tfc.constant(a), tfc.constant(b))
        for i, (g, w) in enumerate(zip(got, want)):
            g, w = g.numpy(), w.numpy()
            assert g.dtype == w.dtype and g.shape == w.shape == (), (i, a, b, g, w)
            np.testing.assert_array_equal(g, w, err_msg=f"op {i} on {a!r}, {b!r}")
    assert compiled.trace_count == 1


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.int64])
def test_integer_scalars_wrap_and_divide_like_eager(dtype):
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    pairs = [(hi, 2), (lo, -1), (lo, 1), (hi, hi), (lo, lo), (-7, 2), (7, -2), (-7, -2), (7, 2), (5, 0), (0, 0),
             (-5, 0), (lo, 0), (hi // 3, 7), (-(hi // 5), 3), (100, -100)]
    _check_scalars(_int_ops, pairs, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_float_scalars_like_eager(dtype):
    """float64 scalars are Python floats (exact); float32/16 stay numpy scalars
    (rounded as eager); division by zero, nan and inf as numpy."""
    nan, inf = float("nan"), float("inf")
    pairs = [(1.1, 3.0), (-7.5, 2.0), (7.5, -2.0), (1.0, 0.0), (-1.0, 0.0), (0.0, 0.0), (1.0, -0.0), (nan, 1.0),
             (inf, 2.0), (-inf, inf), (1e300, 1e10), (3e9, 1.0), (-2.5, 0.5), (0.1, 0.7), (1e-310, 3.0)]
    _check_scalars(_float_ops, pairs, dtype)


def test_bool_scalars_like_eager():
    def ops(p, q):
        return [tfc.logical_and(p, q), tfc.logical_or(p, q), tfc.logical_not(p), p == q, p != q,
                tfc.where(p, tfc.constant(2.5), tfc.constant(-1.0)), tfc.cast(p, tfc.int32),
                tfc.cast(q, tfc.float64), tfc.cast(p, tfc.float32)]
    _check_scalars(ops, [(a, b) for a in (False, True) for b in (False, True)], np.bool_)


def test_scalar_loops_wrap_like_eager():
    """Loop-carried integers: a counter stepping by a large constant (wrapped
    after the loop) and a product wrapping inside it; float32 accumulation."""
    def run(n, x, f):
        def body(i, c, p, s):
            return i + 1, c + 1_000_000_007, p * 31 + i, s * 1.1 + f
        return tfc.while_loop(lambda i, c, p, s: i < n, body, [tfc.constant(0), x, x, f])[1:]

    compiled = tfc.function(run)
    for n in (0, 3, 40):
        args = (np.array(n, np.int32), np.array(2_000_000_000, np.int32), np.array(0.3, np.float32))
        got = compiled(*args)
        want = run(*(tfc.constant(a) for a in args))
        for g, w in zip(got, want):
            _same(g.numpy(), w.numpy())
    assert "np.int32(" not in compiled.get_concrete_function(*args).source.split("def run")[1]


def test_collatz_is_python_integer_code():
    def collatz(a):
        def body(a, n):
            return tfc.where(a % 2 == 0, a // 2, 3 * a + 1), n + 1
        return tfc.while_loop(lambda a, n: a != 1, body, [a, tfc.constant(0)])[1]
    f = tfc.function(collatz)
    src = f.get_concrete_function(tfc.TensorSpec((), tfc.int32)).source
    loop = src.split("def collatz")[1]
    assert "np." not in loop.split("return")[0]  # Python ints only, no numpy scalars
    assert "fmod" not in src and "2 < 0" not in loop  # one floor-mod op; constants folded
    assert "NEEDS_ERRSTATE = False" in src
    for n in (1, 27, 97):
        _same(f(tfc.constant(n)).numpy(), collatz(tfc.constant(n)).numpy())
    assert f.trace_count == 1


def test_fast_call_path_matches_full_path():
    @tfc.function
    def f(x, k):
        return x * k
    x = np.arange(3, dtype=np.float32)
    r1 = f(x, 2.0)
    x[0] = 100.0  # the call copied its array argument, as the full path does
    _same(r1.numpy(), np.array([0, 2, 4], np.float32))
    r2 = f(x, 2.0)
    _same(r2.numpy(), x * 2)
    assert f.trace_count == 1 and len(f._fast) == 1
    f(x, 3.0)  # a new Python value: a new trace, with its reason
    f(tfc.constant(x), 3.0)
    f(x.astype(np.float64), 3.0)
    assert f.trace_count == 3 and "float64" in f.explain()[-1]
    with pytest.raises(TypeError, match="f"):
        f(x, 2.0, 1.0)
    # a tape around a call signature the fast path knows still records it
    v = tfc.constant(x)
    f(v, 2.0)
    with tfc.GradientTape() as tape:
        tape.watch(v)
        y = tfc.reduce_sum(f(v, 2.0))
    _same(tape.gradient(y, v).numpy(), np.full(3, 2.0, np.float32))


def test_concat_of_kernel_results_keeps_them_in_the_arena():
    # concat always copies: its inputs need no buffer of their own that outlives the call;
    # its result (lowered to copy kernels) is the one fresh buffer
    @tfc.function
    def f(x):
        return tfc.concat([tfc.reshape(tfc.exp(x), [-1]), tfc.reshape(tfc.matmul(x, x), [-1])], 0)

    x = np.random.default_rng(0).normal(size=(8, 8)).astype(np.float32)
    conc = f.get_concrete_function(x)
    fresh = [b for b in conc.memory_plan.buffers if b.kind == "fresh"]
    assert [b.shape for b in fresh] == [(128,)] and fresh[0].op.startswith("tfc.concat")
    assert all(b.kind == "arena" for b in conc.memory_plan.buffers if b not in fresh)
    got = f(x).numpy()
    _same(got, np.concatenate([np.exp(x).ravel(), (x @ x).ravel()]))
    assert not np.shares_memory(got, f(x).numpy())  # a new array per call, not an arena view


def test_compiled_sgd_update_matches_eager_in_place_update():
    v = tfc.Variable(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    w = tfc.Variable(v.numpy())
    g = tfc.constant(np.linspace(2, 3, 12, dtype=np.float32).reshape(3, 4))
    f = tfc.function(lambda: v.assign_sub(0.1 * g))
    for _ in range(3):
        f()
        w.assign_sub(0.1 * g)
        _same(v.numpy(), w.numpy())


def test_verify_passes_on_a_training_step_with_in_place_buffers():
    """verify=True compares the values whose buffer holds one value; buffers
    reused in place (and variables updated in place) must not raise falsely."""
    rng = np.random.default_rng(0)
    w1 = tfc.Variable(rng.standard_normal((20, 16)).astype(np.float32) * 0.1)
    b1 = tfc.Variable(np.zeros(16, np.float32))
    w2 = tfc.Variable(rng.standard_normal((16, 4)).astype(np.float32) * 0.1)
    params = [w1, b1, w2]

    def step(x, y):
        with tfc.GradientTape() as tape:
            h = tfc.relu(tfc.matmul(x, w1) + b1)
            loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h @ w2))
        for v, g in zip(params, tape.gradient(loss, params)):
            v.assign_sub(0.1 * g)
        return loss

    f = tfc.function(step, verify=True)
    x = tfc.constant(rng.standard_normal((8, 20)).astype(np.float32))
    y = tfc.constant(rng.integers(0, 4, 8).astype(np.int32))
    losses = [float(f(x, y)) for _ in range(3)]
    assert losses[2] < losses[0]


# Loop bodies that read a carried value after its next value is made: the
# generated code computes results straight into carried variables only where
# that cannot clobber a later read (emitter's _coalesce).
def _fib(a, b, n):
    i = 0
    while i < n:
        a, b = b, a + b
        i += 1
    return a, b


def _late_read(a, b, n):
    i = 0
    while i < n:
        new_a = a * 3 - 1       # the next a ...
        b = b + a * 2 + new_a   # ... while the old a is still read
        a = new_a
        i += 1
    return a, b


def _branch_late_read(a, b, n):
    i = 0
    while i < n:
        if a % 2 == 0:
            new_a = a // 2
            b = b - a + new_a   # old a read after the branch's new a
            a = new_a
        else:
            a, b = 3 * a + 1, b + a  # a tuple: both read the old a
        i += 1
    return a, b


@pytest.mark.parametrize("py", [_fib, _late_read, _branch_late_read])
@pytest.mark.parametrize("start", [(0, 1, 30), (7, -3, 25), (2**30, 5, 40)])
def test_loop_carried_values_match_python(py, start):
    compiled = tfc.function(py)
    got = compiled(*(tfc.constant(np.int32(v)) for v in start))
    a, b, n = start
    with np.errstate(over="ignore"):  # numpy int32 scalars: the same wrap-around
        want = py(np.int32(a), np.int32(b), np.int32(n))
    _same(np.array([g.numpy() for g in got]), np.array(want, np.int32))
    assert compiled.get_concrete_function(*(tfc.constant(np.int32(v)) for v in start)).source.count("while") >= 1


# Full float sums and means of large arrays run over chunks added in numpy's
# pairwise order (Runtime.tree_sum): the same bits as eager, with no array of
# the body's values ever made whole.
@pytest.mark.parametrize("shape", [(1 << 14,), (100003,), (17, 1001), (613, 977)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chunked_full_sums_equal_eager_bitwise(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    a = (rng.standard_normal(shape) * 10 ** rng.uniform(-3, 3, shape)).astype(dtype)
    b = rng.standard_normal(shape).astype(dtype)
    cases = {
        "square": lambda a, b: tfc.reduce_sum(a * a),
        "input": lambda a, b: tfc.reduce_sum(a),
        "mean": lambda a, b: tfc.reduce_mean((a - b) * 2.0),
        "scalar": lambda a, b: tfc.reduce_sum(a * b[(0,) * len(shape)]),
        "keepdims": lambda a, b: tfc.reduce_mean(tfc.exp(b), keepdims=True),
        # a float64 value inside a float32 sum: scratch slots as wide as the widest
        "wider": lambda a, b: tfc.reduce_sum(tfc.cast(tfc.cast(a, tfc.float64) * tfc.cast(b, tfc.float64) + 1.0,
                                                      a.dtype)),
    }
    for name, fn in cases.items():
        compiled = tfc.function(fn)
        got = compiled(a, b).numpy()
        want = fn(tfc.constant(a), tfc.constant(b)).numpy()
        assert got.dtype == want.dtype and got.shape == want.shape, name
        assert got.tobytes() == want.tobytes(), (name, got, want)
        assert "R.tree_sum(" in compiled.get_concrete_function(a, b).source, name


_SPIN_PROBE = """
import os, sys, threading
import numpy as np
from tfc.backends.numpy import blas, runtime
libs = blas.openblas_libraries()
if not libs:
    print("none"); sys.exit()
np.ones((300, 300), np.float32) @ np.ones((300, 300), np.float32)  # OpenBLAS's threads running
if sys.argv[1] == "thread":  # another Python thread could be inside a BLAS call: no restart
    stop = threading.Event(); threading.Thread(target=stop.wait).start()
runtime.pool()
print(*[blas.spin_wait_log2(lib) for lib in libs], "OPENBLAS_THREAD_TIMEOUT" in os.environ)
if sys.argv[1] == "thread":
    stop.set()
"""


@pytest.mark.parametrize("case, env, expected", [
    ("plain", {}, f"{blas.SPIN_LOG2_CYCLES} False"),
    ("plain", {"OPENBLAS_THREAD_TIMEOUT": "28"}, "28 True"),  # the user's setting stands
    ("thread", {}, "0 False"),
])
def test_openblas_spin_wait_shortened_once_safe(tmp_path, case, env, expected):
    prog = tmp_path / "probe.py"
    prog.write_text(_SPIN_PROBE)
    full = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_THREAD_TIMEOUT", "GOTO_THREAD_TIMEOUT")}
    full.update(env, PYTHONPATH=os.pathsep.join(sys.path), TFC_NUM_THREADS="2")
    out = subprocess.run([sys.executable, str(prog), case], env=full, capture_output=True, text=True,
                         check=True).stdout.split()
    if out == ["none"]:
        pytest.skip("numpy's BLAS is not an OpenBLAS that tfc can restart (not Linux, or another BLAS)")
    assert " ".join(out[-2:]) == expected


def test_compiled_axis0_reductions_match_eager_bitwise():
    x = tfc.constant((np.random.default_rng(1).standard_normal((6000, 200)) * 100).astype(np.float32))

    def f(x):
        h = tfc.sigmoid(x)
        return tfc.reduce_sum(x * 3.0, axis=0), tfc.reduce_mean(h, axis=0), tfc.reduce_max(x, axis=0, keepdims=True)

    for got, want in zip(tfc.function(f)(x), f(x)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def _row_programs():
    def softmax(x):
        e = tfc.exp(x - tfc.reduce_max(x, axis=-1, keepdims=True))
        return e / tfc.reduce_sum(e, axis=-1, keepdims=True)

    def layer_norm(x):
        mu = tfc.reduce_mean(x, axis=-1, keepdims=True)
        var = tfc.reduce_mean(tfc.square(x - mu), axis=-1, keepdims=True)
        return (x - mu) / tfc.sqrt(var + 1e-5)

    def trailing_two(x):  # two trailing axes of a 3-d view, no keepdims
        y = tfc.reshape(x, (x.shape[0], 8, -1))
        return tfc.reduce_sum(tfc.tanh(y), axis=(1, 2)), tfc.reduce_prod(y * 0.001 + 1.0, axis=2)

    def column_broadcast(x):  # a [n, 1] value reduced along the axis it broadcasts over
        c = x[:, :1] * 2.0
        return tfc.reduce_sum(c + tfc.zeros_like(x), axis=1), tfc.reduce_sum(tfc.ones_like(x), axis=1)

    def ints_and_bools(x):
        i = tfc.cast(x * 100.0, tfc.int32)
        return tfc.reduce_sum(i * i, axis=1), tfc.reduce_any(x > 2.0, axis=1), tfc.reduce_min(i, axis=1)

    return [softmax, layer_norm, trailing_two, column_broadcast, ints_and_bools]


@pytest.mark.parametrize("rows, cols", [(1, 64), (3, 8), (4099, 256), (300, 4096)])
@pytest.mark.parametrize("program", _row_programs(), ids=lambda f: f.__name__)
def test_row_chunked_reductions_match_eager_bitwise(program, rows, cols):
    """Reductions over trailing axes run on chunks of rows (the pool from 2^20
    elements): each row's result is eager's to the bit."""
    x = tfc.constant((np.random.default_rng(rows).standard_normal((rows, cols)) * 3).astype(np.float32))
    want = program(x)
    got = tfc.function(program)(x)
    if not isinstance(want, tuple):
        got, want = (got,), (want,)
    assert "rt.kernel('reduce_" in tfc.function(program).get_concrete_function(x).source  # in a chunk kernel
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def _row_library_programs():
    def softmax_last(x):
        return tfc.nn.softmax(x)

    def log_softmax_middle(x):  # a later axis of a 3-d view: rows are still apart
        return tfc.nn.log_softmax(tfc.reshape(x, (x.shape[0], 16, -1)), axis=1)

    def softmax_rows_together(x):  # along the rows: one call
        return tfc.nn.softmax(x, axis=0)

    def cross_entropy_and_gradient(x):
        labels = tfc.cast(tfc.range(x.shape[0]) % x.shape[1], tfc.int32)
        with tfc.GradientTape() as tape:
            tape.watch(x)
            loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, x))
        return loss, tape.gradient(loss, x)

    def float16(x):
        return tfc.nn.softmax(tfc.cast(x, tfc.float16))

    return [softmax_last, log_softmax_middle, softmax_rows_together, cross_entropy_and_gradient, float16]


@pytest.mark.parametrize("rows, cols", [(5, 32), (2048, 1024), (131, 8192)])
@pytest.mark.parametrize("program", _row_library_programs(), ids=lambda f: f.__name__)
def test_row_wise_library_ops_on_row_chunks_match_eager_bitwise(program, rows, cols):
    """softmax, log_softmax and the sparse cross-entropy, expanded by tfc-expand
    into fused reductions and elementwise kernels (on chunks of rows when
    large, on the pool), give eager's bits."""
    x = tfc.constant((np.random.default_rng(cols).standard_normal((rows, cols)) * 4).astype(np.float32))
    want = program(x)
    compiled = tfc.function(program)
    got = compiled(x)
    if not isinstance(want, tuple):
        got, want = (got,), (want,)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    source = compiled.get_concrete_function(x).source
    # tfc-expand writes them as reductions and elementwise ops: fused kernels
    # (which run on chunks of rows when large), no library call of the composite op
    assert not any(f"rt.kernel('{op}')" in source for op in ("softmax", "log_softmax", "sparse_softmax_cross_entropy"))
    # a kernel of one chunk is called straight, larger ones through the chunk loop
    assert ("R.run_chunks(" in source) == (rows * cols * 4 > 1 << 20)


def test_row_wise_library_op_error_from_a_chunk():
    x = tfc.constant(np.zeros((4096, 512), np.float32))
    labels = np.zeros(4096, np.int32)
    labels[3000] = 512
    f = tfc.function(tfc.nn.sparse_softmax_cross_entropy_with_logits)
    with pytest.raises(tfc.errors.InvalidArgumentError, match=r"labels must be in \[0, 512\).*512"):
        f(labels, x)
    labels[3000] = 0
    np.testing.assert_array_equal(f(labels, x).numpy(), tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, x).numpy())


def test_maps_rows_declarations():
    assert REGISTRY["softmax"].maps_rows([2], {"axis": -1})
    assert not REGISTRY["softmax"].maps_rows([2], {"axis": -2})
    assert not REGISTRY["log_softmax"].maps_rows([1], {"axis": 0})
    assert REGISTRY["sparse_softmax_cross_entropy_with_logits"].maps_rows([1, 2], {})
    assert not REGISTRY["sparse_softmax_cross_entropy_with_logits"].maps_rows([0, 1], {})
    assert not REGISTRY["matmul"].maps_rows([2, 2], {"transpose_a": False, "transpose_b": False})


def test_pooling_and_argmax_on_row_chunks_match_eager_bitwise():
    """Pooling (and its gradients, first and second) treats each image alone,
    argmax over a later axis each row: large calls run on chunks of the batch."""
    x = tfc.constant(np.random.default_rng(7).standard_normal((96, 32, 32, 12)).astype(np.float32))

    def f(x):
        with tfc.GradientTape() as outer:
            outer.watch(x)
            with tfc.GradientTape() as tape:
                tape.watch(x)
                y = tfc.nn.max_pool2d(x * x, 3, 2, "SAME") + tfc.nn.avg_pool2d(x, 2, 2, "VALID")[:, :16, :16]
                loss = tfc.reduce_sum(y * y)
            g = tape.gradient(loss, x)
            gg = tfc.reduce_sum(g * g)
        return y, g, outer.gradient(gg, x), tfc.argmax(tfc.reshape(x, (96, -1)), axis=1)

    compiled = tfc.function(f)
    for got, want in zip(compiled(x), f(x)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    src = compiled.get_concrete_function(x).source
    chunked = {op for k, op in re.findall(r"lib(\d+) = rt.kernel\('(\w+)'\)", src) if f"def rows{k}(" in src}
    assert {"max_pool2d", "max_pool2d_grad", "max_pool2d_grad_grad", "avg_pool2d", "avg_pool2d_grad"} <= chunked, chunked
    # argmax is an arg-reduction kernel (reduce kind "argmax"): its rows reduced chunk by chunk
    (k,) = [int(part.split("(")[0]) for part in src.split("def kernel")[1:] if "np.argmax(" in part.split("spec")[0]]
    assert f"R.run_chunks(kernel{k}, " in src


@pytest.mark.parametrize("ext, damage", [("py", "truncate"), ("py", "garbage"), ("npz", "truncate"),
                                         ("npz", "garbage"), ("json", "garbage"), ("json", "delete")])
def test_disk_cache_damaged_entry_is_dropped_and_recompiled(tmp_path, monkeypatch, ext, damage):
    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path))
    w = tfc.constant(np.arange(300, dtype=np.float32))  # large enough for the .npz

    def run():
        return tfc.function(lambda x: tfc.reduce_sum(x * w + tfc.exp(x)))(np.ones(300, np.float32)).numpy()

    want = run()
    (entry,) = tmp_path.glob(f"*.{ext}")
    data = entry.read_bytes()
    if damage == "delete":
        entry.unlink()
    else:
        entry.write_bytes(data[:len(data) // 2] if damage == "truncate" else b"garbage{")
    with pytest.warns(RuntimeWarning, match="damaged compile cache entry .*recompiling"):
        _same(run(), want)
    assert entry.read_bytes() == data  # rewritten whole
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same(run(), want)


def test_disk_cache_entry_with_pickled_constants_is_dropped_saying_why(tmp_path, monkeypatch):
    """An entry whose constants are an object array (its hash recomputed): never
    unpickled, dropped with what is wrong, not numpy's advice to allow pickles."""
    import hashlib
    import io
    import json

    from tfc.backends.numpy import cache

    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path))
    w = tfc.constant(np.arange(300, dtype=np.float32))

    def run():
        return tfc.function(lambda x: tfc.reduce_sum(x * w))(np.ones(300, np.float32)).numpy()

    want = run()
    (npz,) = tmp_path.glob("*.npz")
    meta_path = npz.with_suffix(".json")
    buf = io.BytesIO()
    np.savez(buf, np.array([{"evil": 1}], dtype=object))
    npz.write_bytes(buf.getvalue())
    meta = json.loads(meta_path.read_text())
    meta.pop("sha256")
    meta["sha256"] = cache._digest(npz.with_suffix(".py").read_bytes(), buf.getvalue(), meta)
    meta_path.write_text(json.dumps(meta))
    with pytest.warns(RuntimeWarning, match=r"an object array \(pickled Python objects\), which tfc never writes and refuses to load") as rec:
        _same(run(), want)
    assert not any("allow_pickle" in str(r.message) for r in rec)
    assert hashlib.sha256(npz.read_bytes()).digest() != hashlib.sha256(buf.getvalue()).digest()  # rewritten


@pytest.mark.parametrize("shape", [(1024, 409), (70000, 2)])
def test_row_wise_library_ops_of_a_strided_view_match_eager_bitwise(shape):
    """numpy's reduction order follows the memory layout: a chunk of one row of a
    transposed view was summed in another order than the whole view (the kernels
    now reduce C-order copies, in eager and in every chunk alike)."""
    x = tfc.constant(np.random.default_rng(3).standard_normal(shape).astype(np.float32))
    labels = tfc.constant(np.arange(shape[1], dtype=np.int32) % shape[0])

    def f(x):
        t = tfc.transpose(x)
        return (tfc.nn.softmax(t), tfc.nn.log_softmax(t),
                tfc.nn.sparse_softmax_cross_entropy_with_logits(labels, t))

    for got, want in zip(tfc.function(f)(x), f(x)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name", ["abs", "float", "Exception", "int", "len", "range"])
def test_a_function_named_after_a_builtin_does_not_shadow_it(name):
    """Scalar code calls abs() and float(), and the generated function catches
    Exception: a user's function of that name must not replace them."""
    ns = {"tfc": tfc}
    exec(f"def {name}(x, y, z):\n"
         "    return tfc.cast(tfc.abs(x), tfc.float64) * 0.5 + tfc.cast(tfc.reduce_sum(y + z), tfc.float64)\n", ns)
    f, V = ns[name], tfc.TensorSpec((None,))
    g = tfc.function(f, input_signature=[tfc.TensorSpec((), tfc.int32), V, V], autograph=False)
    args = [np.int32(-5), np.ones(3, np.float32), np.ones(3, np.float32)]
    _same(g(*args).numpy(), f(*[tfc.constant(a) for a in args]).numpy())
    with pytest.raises(ValueError, match="cannot be broadcast"):  # caught and reported as eager's
        g(args[0], args[1], np.ones(4, np.float32))


def test_function_names_avoid_every_builtin():
    import builtins

    from tfc.backends.numpy.emitter import function_name

    assert [n for n in dir(builtins) if function_name(n) == n] == []


def _plant(cache_dir, code):
    """Append ``code`` to the cache's one module entry, its hash recomputed
    (the SHA-256 is unkeyed: whoever can write the directory can do this)."""
    import json

    from tfc.backends.numpy import cache

    (py,) = cache_dir.glob("*.py")
    meta_path = py.with_suffix(".json")
    source = py.read_bytes() + b"\n" + code.encode() + b"\n"
    meta = json.loads(meta_path.read_text())
    meta.pop("sha256")
    npz = py.with_suffix(".npz").read_bytes() if meta["n_consts"] else b""
    meta["sha256"] = cache._digest(source, npz, meta)
    py.write_bytes(source)
    meta_path.write_text(json.dumps(meta))


@pytest.mark.parametrize("how", ["writable by others", "owned by another user"])
def test_disk_cache_directory_others_can_write_is_not_used(tmp_path, monkeypatch, how):
    """An entry is Python a hit runs: a directory others can write (or that
    another user owns) is not used, with one warning, so a planted entry
    never runs; tfc makes its own directory 0700."""
    import builtins

    from tfc.backends.numpy import cache

    d = tmp_path / "new" / "cache"
    monkeypatch.setenv("TFC_CACHE_DIR", str(d))
    monkeypatch.setattr(cache, "_REFUSED", set())

    def run(k):
        return tfc.function(lambda x: x * 2.0 + k)(np.ones(3, np.float32)).numpy()

    want = run(1.0)
    assert d.stat().st_mode & 0o777 == 0o700 and len(list(d.glob("*.py"))) == 1
    _plant(d, "__import__('builtins').__dict__.__setitem__('TFC_PLANTED', 1)")
    if how == "writable by others":
        d.chmod(0o777)
    else:
        if os.getuid() != 0:
            pytest.skip("changing a directory's owner needs root")
        os.chown(d, 12345, -1)
    with pytest.warns(RuntimeWarning, match="not using the compile cache .*" + (
            "others can write it" if how == "writable by others" else "owned by uid 12345")) as rec:
        _same(run(1.0), want)
        run(2.0)  # another function: no second warning
    assert len([r for r in rec if "compile cache" in str(r.message)]) == 1
    assert not hasattr(builtins, "TFC_PLANTED")
    assert len(list(d.glob("*.py"))) == 1  # nothing written there either


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_of_a_transpose_matches_eager_bitwise(dtype):
    """Eagerly transpose(a) @ b hands BLAS a transposed view (its transposed
    product); a transpose copied into a buffer first took BLAS's other path,
    whose sums differ in the last bits (1.9e-6 on [40, 37] @ [37, 50]; found by
    review). tfc-simplify makes it matmul(a, b, transpose_a=True)."""
    rng = np.random.default_rng(11)
    a = tfc.constant(rng.standard_normal((37, 40)).astype(dtype))
    b = tfc.constant(rng.standard_normal((37, 50)).astype(dtype))
    a3 = tfc.constant(rng.standard_normal((2, 37, 40)).astype(dtype))
    b3 = tfc.constant(rng.standard_normal((2, 37, 50)).astype(dtype))
    programs = [
        (lambda a, b: tfc.transpose(a) @ b, (a, b)),
        (lambda a, b: tfc.transpose(a * 2.0) @ b, (a, b)),
        (lambda a, b: tfc.transpose(b) @ a, (a, b)),
        (lambda a, b: b[:, 3:43] @ tfc.transpose(a), (a, tfc.constant(rng.standard_normal((50, 47)).astype(dtype)))),
        (lambda a, b: tfc.matmul(tfc.transpose(a, [0, 2, 1]), b), (a3, b3)),
    ]
    for f, args in programs:
        want = f(*args).numpy()
        got = tfc.function(f)(*args).numpy()
        assert got.dtype == want.dtype and np.array_equal(got, want)
