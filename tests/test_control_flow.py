"""Eager control flow: cond, while_loop, print, Assert, TensorArray; the hooks
that hand them to the builder while tracing."""
import collections
import io

import numpy as np
import pytest

import tfc
from tfc.core.context import STATE


# -- cond ----------------------------------------------------------------------------------------

def test_cond_picks_branch():
    x = tfc.constant(3.0)
    assert float(tfc.cond(x > 2, lambda: x * 2, lambda: x - 1)) == 6.0
    assert float(tfc.cond(x > 5, lambda: x * 2, lambda: x - 1)) == 2.0
    assert tfc.cond(True, lambda: "a", lambda: "b") == "a"
    out = tfc.cond(tfc.constant(False), lambda: (x, [x]), lambda: (x + 1, [x + 2]))
    assert float(out[0]) == 4.0 and float(out[1][0]) == 5.0


def test_cond_gradient():
    x = tfc.constant(2.0)
    for pred, want in ((True, 12.0), (False, -1.0)):
        with tfc.GradientTape() as tape:
            tape.watch(x)
            y = tfc.cond(tfc.constant(pred), lambda: x ** 3, lambda: -x)
        assert float(tape.gradient(y, x)) == want


def test_cond_errors():
    with pytest.raises(ValueError, match="cond.*scalar"):
        tfc.cond(tfc.constant([True, False]), lambda: 1, lambda: 2)
    with pytest.raises(TypeError, match="cond.*bool"):
        tfc.cond(tfc.constant(1), lambda: 1, lambda: 2)
    with pytest.raises(TypeError, match="cond"):
        tfc.cond(True, 1, lambda: 2)
    with pytest.raises(TypeError, match="cond"):
        tfc.cond("yes", lambda: 1, lambda: 2)


# -- while_loop --------------------------------------------------------------------------------

def test_while_loop_matches_python(rng):
    for n in (0, 1, 7):
        i, s = tfc.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s + i * i), (0, 0))
        assert int(i) == n and int(s) == sum(k * k for k in range(n))
        assert isinstance(i, tfc.Tensor) and i.dtype == tfc.int32


def test_while_loop_nested_structure():
    Pair = collections.namedtuple("Pair", "a b")
    v0 = [tfc.constant(0), {"x": tfc.constant(1.0), "p": Pair(tfc.constant(2.0), tfc.constant([1.0, 1.0]))}]

    def body(i, d):
        return [i + 1, {"x": d["x"] * 2, "p": Pair(d["p"].a + 1, d["p"].b * d["x"])}]

    i, d = tfc.while_loop(lambda i, d: i < 3, body, v0)
    assert int(i) == 3 and float(d["x"]) == 8.0 and isinstance(d["p"], Pair)
    assert float(d["p"].a) == 5.0
    np.testing.assert_array_equal(d["p"].b.numpy(), [8.0, 8.0])


def test_while_loop_single_var_and_max_iterations():
    x = tfc.while_loop(lambda x: x < 100, lambda x: x * 2, tfc.constant(1))
    assert int(x) == 128
    (y,) = tfc.while_loop(lambda y: y < 100, lambda y: y * 2, [1])
    assert int(y) == 128
    z = tfc.while_loop(lambda z: True, lambda z: z + 1, 0, maximum_iterations=5)
    assert int(z) == 5


def test_while_loop_gradient():
    x = tfc.constant(1.5)
    with tfc.GradientTape() as tape:
        tape.watch(x)
        _, y = tfc.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), (0, tfc.constant(1.0)))
    np.testing.assert_allclose(float(tape.gradient(y, x)), 3 * 1.5 ** 2)


def test_collatz_eager():
    """reference-programs.md: the Collatz loop, with the loop as while_loop."""
    def step(a, n):
        a = tfc.cond(tfc.equal(a % 2, 0), lambda: a // 2, lambda: 3 * a + 1)
        return a, n + 1

    a, n = tfc.while_loop(lambda a, n: tfc.not_equal(a, 1), step, (tfc.constant(6), 0))
    assert int(a) == 1 and int(n) == 8


def test_while_loop_errors():
    with pytest.raises(ValueError, match="while_loop.*structure"):
        tfc.while_loop(lambda a, b: a < 3, lambda a, b: (a + 1,), (0, 0))
    with pytest.raises(TypeError, match="while_loop.*dtype"):
        tfc.while_loop(lambda a: a < 3, lambda a: tfc.cast(a, tfc.float32) + 1, [0])
    with pytest.raises(ValueError, match="while_loop.*scalar"):
        tfc.while_loop(lambda a: a < 3, lambda a: a + 1, [tfc.constant([0, 1])])
    with pytest.raises(TypeError, match="while_loop"):
        tfc.while_loop(lambda a: a + 1, lambda a: a + 1, [0])
    with pytest.raises(TypeError, match="while_loop"):
        tfc.while_loop(None, lambda a: a, [0])
    with pytest.raises(ValueError, match="while_loop"):
        tfc.while_loop(lambda a: a < 3, lambda a: a, [0], maximum_iterations=-1)


# -- print and Assert ------------------------------------------------------------------------

def printed(*values, **kw):
    buf = io.StringIO()
    tfc.print(*values, output_stream=buf, **kw)
    return buf.getvalue()


def test_print_formats_like_tensorflow(capsys):
    assert printed(tfc.constant([1, 2, 3])) == "[1 2 3]\n"
    assert printed(tfc.constant(2.5)) == "2.5\n"
    assert printed(tfc.constant([1.0, 0.5])) == "[1 0.5]\n"
    assert printed(tfc.constant([[1, 2], [3, 4]])) == "[[1 2]\n [3 4]]\n"
    assert printed("x =", tfc.constant(7), 3, sep=" ", end="!") == "x = 7 3!"
    assert printed(tfc.range(10)) == "[0 1 2 ... 7 8 9]\n"
    assert printed(tfc.range(10), summarize=-1) == "[0 1 2 3 4 5 6 7 8 9]\n"
    assert printed([tfc.constant(1), (tfc.constant(2.0),)]) == "[1, (2,)]\n"
    assert printed(tfc.zeros((0,))) == "[]\n"
    tfc.print(tfc.constant(True))
    assert capsys.readouterr().err == "True\n"  # sys.stderr by default, as in TensorFlow


def test_assert():
    assert tfc.Assert(tfc.constant(True), ["never shown"]) is None
    assert tfc.Assert(tfc.constant([True, True]), ["all true"]) is None
    with pytest.raises(AssertionError) as info:
        tfc.Assert(tfc.constant(1) > 2, ["value was", tfc.constant([1, 2])])
    assert str(info.value) == "value was [1 2]"
    with pytest.raises(AssertionError, match="Do not pass zero!"):
        tfc.Assert(False, "Do not pass zero!")
    with pytest.raises(TypeError, match="Assert"):
        tfc.Assert(tfc.constant(1), ["x"])


# -- hooks for the tracer --------------------------------------------------------------------------

class FakeBuilder:
    def __init__(self):
        self.calls = []

    def cond(self, *args):
        self.calls.append(("cond", args))
        return "traced cond"

    def while_loop(self, *args):
        self.calls.append(("while_loop", args))
        return "traced loop"

    def print_(self, values, **options):
        self.calls.append(("print_", values))
        self.print_options = options

    def assert_(self, condition, data):
        self.calls.append(("assert_", (condition, data)))


def test_builder_takes_over_while_tracing():
    b = FakeBuilder()
    t, f, c, body = (lambda: 1), (lambda: 2), (lambda i: i < 2), (lambda i: i + 1)
    STATE.builder = b
    try:
        assert tfc.cond(True, t, f) == "traced cond"
        assert tfc.while_loop(c, body, [0], maximum_iterations=4) == "traced loop"
        tfc.print("a", 1)
        tfc.Assert(False, ["msg"])
    finally:
        STATE.builder = None
    assert b.calls == [
        ("cond", (True, t, f)), ("while_loop", (c, body, [0], 4)),
        ("print_", ("a", 1)), ("assert_", (False, ["msg"])),
    ]
    assert b.print_options == {"sep": " ", "end": "\n", "stream": "stderr", "summarize": 3}


# -- TensorArray ------------------------------------------------------------------------------

def test_tensor_array_write_read_stack(rng):
    rows = rng.standard_normal((4, 3)).astype(np.float32)
    ta = tfc.TensorArray(tfc.float32, size=4)
    for i, r in enumerate(rows):
        new = ta.write(i, r)
        assert new is not ta
        ta = new
    assert int(ta.size()) == 4 and ta.size().dtype == tfc.int32
    np.testing.assert_array_equal(ta.read(2).numpy(), rows[2])
    np.testing.assert_array_equal(ta.stack().numpy(), rows)


def test_tensor_array_unwritten_and_empty():
    ta = tfc.TensorArray(tfc.int32, size=3, element_shape=(2,)).write(1, [5, 6])
    np.testing.assert_array_equal(ta.stack().numpy(), [[0, 0], [5, 6], [0, 0]])
    assert tfc.TensorArray(tfc.float32, element_shape=(2,)).stack().shape == (0, 2)
    with pytest.raises(ValueError, match="TensorArray.read"):
        tfc.TensorArray(tfc.float32, size=2).read(0)


def test_tensor_array_dynamic_in_loop():
    def body(i, ta):
        return i + 1, ta.write(i, tfc.cast(i, tfc.float32) * 2.0)

    _, ta = tfc.while_loop(lambda i, ta: i < 5, body, (0, tfc.TensorArray(tfc.float32, dynamic_size=True)))
    np.testing.assert_array_equal(ta.stack().numpy(), [0, 2, 4, 6, 8])


def test_tensor_array_unstack_and_gradient():
    x = tfc.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    with tfc.GradientTape() as tape:
        tape.watch(x)
        ta = tfc.TensorArray(tfc.float32, size=3).unstack(x)
        y = ta.read(0) * ta.read(2)
    np.testing.assert_array_equal(y.numpy(), [5.0, 12.0])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [[5, 6], [0, 0], [1, 2]])


def test_tensor_array_errors():
    ta = tfc.TensorArray(tfc.float32, size=2)
    with pytest.raises(tfc.errors.InvalidArgumentError, match="TensorArray.write"):
        ta.write(2, 1.0)
    with pytest.raises(TypeError, match="TensorArray.write"):
        ta.write(0, tfc.constant(1))
    with pytest.raises(ValueError, match="TensorArray.write"):
        ta.write(0, [1.0]).write(1, [1.0, 2.0])
    with pytest.raises(tfc.errors.InvalidArgumentError, match="TensorArray.read"):
        ta.read(5)
    with pytest.raises(ValueError, match="TensorArray.unstack"):
        ta.unstack(tfc.constant(1.0))
    with pytest.raises(ValueError, match="TensorArray"):
        tfc.TensorArray(tfc.float32, size=-1)


# -- tensor_array_write: the buffer form of TensorArray.write --------------------------------

def test_tensor_array_write_op():
    from tfc.ops.control_flow import tensor_array_write

    buf = np.arange(6, dtype=np.float32).reshape(3, 2)
    got = tensor_array_write(tfc.constant(buf), tfc.constant(1), tfc.constant([9.0, 8.0]))
    want = buf.copy()
    want[1] = [9.0, 8.0]
    np.testing.assert_array_equal(got.numpy(), want)
    grown = tensor_array_write(tfc.constant(buf), tfc.constant(4), tfc.constant([9.0, 8.0]), grow=True)
    np.testing.assert_array_equal(grown.numpy(), np.concatenate([buf, [[0, 0], [9, 8]]]))
    with pytest.raises(tfc.errors.InvalidArgumentError, match="index 3 is out of range"):
        tensor_array_write(tfc.constant(buf), tfc.constant(3), tfc.constant([1.0, 1.0]))
    with pytest.raises(ValueError, match="tensor_array_write: element shape"):
        tensor_array_write(tfc.constant(buf), tfc.constant(0), tfc.constant([1.0]))
    with pytest.raises(TypeError, match="tensor_array_write: value has dtype int32"):
        tensor_array_write(tfc.constant(buf), tfc.constant(0), tfc.constant([1, 2]))


def test_tensor_array_write_gradient():
    from helpers import check_grad
    from tfc.ops.control_flow import tensor_array_write

    def f(buf, v):
        return tensor_array_write(buf, tfc.constant(1), v) * tfc.constant([[1.0, 2.0]] * 3, tfc.float64)

    check_grad(f, np.arange(6.0).reshape(3, 2), np.array([0.5, -1.5]))


def test_tensor_array_of_scalars_read_at_a_tensor_index():
    # an element shape of () is known (it once read as falsy: "element shape must be known")
    @tfc.function
    def f(i):
        ta = tfc.TensorArray(tfc.float32, size=3, element_shape=())
        for k in range(3):
            ta = ta.write(k, tfc.constant(float(k) * 2.0))
        return ta.read(i)

    assert float(f(tfc.constant(2)).numpy()) == 4.0
