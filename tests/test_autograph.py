"""AutoGraph: converted functions behave exactly as the originals with Python
values and eager tensors; the symbolic path is checked with a fake builder."""
import collections
import functools
import traceback

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tfc
from tfc.core.context import STATE
from tfc.core.registry import run_eager
from tfc.frontend.autograph import operators

ag = tfc.autograph


def _val(x):
    return x.numpy().item() if isinstance(x, tfc.Tensor) else x


# -- reference programs -------------------------------------------------------------

delta = 1.0


@tfc.autograph.convert()
def huber_loss(a):
    if tfc.abs(a) <= delta:
        loss = a * a / 2
    else:
        loss = delta * (tfc.abs(a) - delta / 2)
    return loss


def test_huber_loss():
    for a in (-3.0, -0.5, 0.0, 0.7, 2.5):
        want = a * a / 2 if abs(a) <= delta else delta * (abs(a) - delta / 2)
        got = huber_loss(tfc.constant(a))
        assert isinstance(got, tfc.Tensor)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def collatz(a):
    counter = 0
    while a != 1:
        if a % 2 == 0:
            a = a // 2
        else:
            a = 3 * a + 1
        counter = counter + 1
    return counter


def test_collatz_python_and_eager():
    g = ag.to_graph(collatz)
    for n in range(1, 1001):
        assert g(n) == collatz(n)
    for n in list(range(1, 60)) + [97, 871, 1000]:
        assert _val(g(tfc.constant(n))) == collatz(n)


def test_to_code_readable():
    code = ag.to_code(collatz)
    assert code.startswith("def collatz(a):")
    assert "ag__.while_stmt" in code and "ag__.if_stmt" in code
    assert "counter = counter + 1" in code
    compile(code, "<to_code>", "exec")


def test_nested_if_while_print(capsys):
    def f(n):
        if n >= 0:
            while n < 5:
                n += 1
                print(n)
        return n

    g = ag.to_graph(f)
    assert g(2) == 5
    assert capsys.readouterr().out.split() == ["3", "4", "5"]
    assert g(-1) == -1
    out = g(tfc.constant(3))
    assert _val(out) == 5
    assert len(capsys.readouterr().out.strip().splitlines()) == 2


def test_list_append_stack():
    def f(n):
        z = []
        tfc.autograph.set_element_type(z, tfc.int32)
        for i in range(n):
            z.append(i)
        return tfc.autograph.stack(z)

    g = ag.to_graph(f)
    r = g(5)
    assert r.dtype == tfc.int32
    np.testing.assert_array_equal(r.numpy(), np.arange(5))
    np.testing.assert_array_equal(g(tfc.constant(3)).numpy(), np.arange(3))
    assert g(0).shape == (0,)


def test_assert_message():
    def f(x):
        assert x != 0, 'Do not pass zero!'
        return x * x

    g = ag.to_graph(f)
    assert g(3) == 9
    assert _val(g(tfc.constant(3))) == 9
    with pytest.raises(AssertionError, match="Do not pass zero!"):
        g(0)
    with pytest.raises(AssertionError, match="Do not pass zero!"):
        g(tfc.constant(0))


# -- control flow lowering ------------------------------------------------------------

def loops(xs, limit):
    total = 0
    for x in xs:
        if x > limit:
            break
        if x % 2 == 0:
            continue
        total += x
        if total > 20:
            return -total
    else:
        total += 1000
    i = 0
    while True:
        i += 1
        if i >= 3:
            break
    return total + i


@pytest.mark.parametrize("xs", [[], [1, 3, 5], [1, 2, 9, 3], [7, 9, 11, 13], [2, 4], [1, 100, 3]])
@pytest.mark.parametrize("limit", [0, 5, 50])
def test_break_continue_return_for_else(xs, limit):
    assert ag.to_graph(loops)(xs, limit) == loops(xs, limit)


def nested_returns(n):
    for i in range(n):
        for j in range(n):
            if i * j == 6:
                return i, j
            if j > i:
                break
    while n > 0:
        n -= 1
        if n == 2:
            return "two"
    return None


@pytest.mark.parametrize("n", range(0, 8))
def test_nested_returns(n):
    assert ag.to_graph(nested_returns)(n) == nested_returns(n)


def test_ternary_and_or_not_lazy():
    calls = []

    def side(v):
        calls.append(v)
        return v

    def f(a, b):
        x = side(a) and side(b)
        y = side(a) or side(b)
        z = not a
        w = "pos" if a > 0 else "neg"
        return x, y, z, w

    g = ag.to_graph(f)
    for a, b in [(0, 5), (3, 0), (2, 7)]:
        calls.clear()
        want = f(a, b)
        want_calls = list(calls)
        calls.clear()
        assert g(a, b) == want and calls == want_calls


def test_eager_tensor_conditions():
    def f(x):
        y = x if x > 0 else -x
        if x > 0 and x < 10:
            y = y + 100
        elif not x < -5:
            y = y - 100
        return y

    g = ag.to_graph(f)
    for v in (-7.0, -2.0, 3.0, 12.0):
        assert _val(g(tfc.constant(v))) == pytest.approx(f(v))


def test_for_over_tensor_and_enumerate():
    def f(t):
        s = 0.0
        for i, row in enumerate(t):
            s = s + row * i
        n = len(t)
        return s, n, abs(-s), int(t[0]), float(t[0])

    g = ag.to_graph(f)
    t = tfc.constant([1.0, 2.0, 3.0])
    s, n, a, i, fl = g(t)
    assert _val(s) == 8.0 and n == 3 and _val(a) == 8.0 and i == 1 and fl == 1.0


# -- Python semantics ----------------------------------------------------------------

def test_unbound_local_error():
    def f(c):
        if c:
            x = 1
        return x

    g = ag.to_graph(f)
    assert g(True) == 1
    with pytest.raises(UnboundLocalError):
        g(False)

    def h(n):
        for i in range(n):
            pass
        return i

    with pytest.raises(UnboundLocalError):
        ag.to_graph(h)(0)
    assert ag.to_graph(h)(4) == 3


def test_python_constructs():
    Point = collections.namedtuple("Point", "x y")
    scale = 3

    def f(n):
        out = []
        try:
            if n < 0:
                raise ValueError("neg")
            out.append(1 < n < 5)
        except ValueError as e:
            out.append(str(e))
        finally:
            out.append("fin")
        with open(__file__) as fh:
            out.append(bool(fh.readline()))
        d = {"a": 1}
        del d["a"]
        out.append(len(d))
        sq = [i * i for i in range(n) if i % 2 == 0]
        out.append(sq)
        out.append({k: v for k, v in enumerate("ab")})

        def inner(y):
            return y * scale if y > 1 else y

        out.append(list(map(lambda v: v + 1, sq)))
        out.append(inner(n))
        p = Point(n, 2)
        out.append(p.x + p.y)
        k = 0
        while k < 3:
            k += 1
        else:
            out.append("done")
        return out

    g = ag.to_graph(f)
    for n in (-1, 0, 3, 7):
        assert g(n) == f(n)


def test_closures_and_nonlocal():
    def make():
        count = 0

        def bump(k):
            nonlocal count
            for _ in range(k):
                if count >= 5:
                    break
                count += 1
            return count
        return bump

    bump = make()
    g = ag.to_graph(bump)
    assert g(3) == 3
    assert g(4) == 5
    assert bump(1) == 5  # shares the same cell


class Model:
    def __init__(self, k):
        self.k = k

    def __call__(self, x):
        return self.scale(x)

    def scale(self, x):
        if x > 0:
            return x * self.k
        return 0


class Sub(Model):
    def scale(self, x):
        return super().scale(x) + 1


def test_callables():
    m = Model(3)
    assert ag.to_graph(m.scale)(2) == 6
    assert ag.to_graph(m)(2) == 6
    assert ag.to_graph(Sub(2).scale)(5) == 11
    assert ag.to_graph(functools.partial(collatz))(6) == collatz(6)
    lam = ag.to_graph(lambda x: x if x > 0 else -x)
    assert lam(-4) == 4
    assert "ag__.if_exp" in ag.to_code(lambda x: x if x > 0 else -x)


def test_recursive_conversion_and_library_untouched():
    def helper(x):
        if x > 0:
            return x
        return -x

    def f(x):
        return helper(x) + int(np.sum(np.arange(3)))

    assert ag.to_graph(f)(-5) == 8
    from tfc.frontend.autograph.api import converted_or_none
    assert converted_or_none(helper) is not None
    assert converted_or_none(np.sum) is None
    assert converted_or_none(tfc.abs) is None
    assert converted_or_none(functools.reduce) is None


def test_generators_not_supported():
    def gen(n):
        yield n

    with pytest.raises(NotImplementedError, match="generators"):
        ag.to_graph(gen)

    def uses_gen(n):
        return sum(gen(n))  # a generator called from converted code runs as is

    assert ag.to_graph(uses_gen)(4) == 4


def test_error_points_at_user_line():
    def f(x):
        if x > 0:
            y = x + 1
            raise RuntimeError("boom")  # MARK
        return x

    g = ag.to_graph(f)
    with pytest.raises(RuntimeError) as info:
        g(1)
    frames = traceback.extract_tb(info.value.__traceback__)
    last = frames[-1]
    assert last.filename == __file__
    assert "MARK" in last.line


# -- generated programs agree with Python ---------------------------------------------

@st.composite
def _programs(draw):
    """Small functions of (a, b) with nested ifs, loops, breaks and returns."""
    lines = ["def prog(a, b):", "    r = 0"]

    def expr():
        return draw(st.sampled_from(["a", "b", "r", "a + b", "r - a", "b * 2", "r % 3", "a - r"]))

    def cond():
        return f"{expr()} {draw(st.sampled_from(['<', '>', '<=', '>=', '==', '!=']))} {draw(st.integers(-3, 6))}"

    def block(depth, indent, in_loop):
        n = draw(st.integers(1, 3))
        for _ in range(n):
            kinds = ["assign", "assign"]
            if depth < 3:
                kinds += ["if", "while", "for"]
            if in_loop:
                kinds += ["break", "continue"]
            kinds.append("return")
            k = draw(st.sampled_from(kinds))
            pad = " " * indent
            if k == "assign":
                lines.append(f"{pad}r = r + ({expr()})")
            elif k == "if":
                lines.append(f"{pad}if {cond()}:")
                block(depth + 1, indent + 4, in_loop)
                if draw(st.booleans()):
                    lines.append(f"{pad}else:")
                    block(depth + 1, indent + 4, in_loop)
            elif k == "while":
                v = f"w{len(lines)}"
                lines.append(f"{pad}{v} = 0")
                lines.append(f"{pad}while {v} < {draw(st.integers(0, 4))}:")
                lines.append(f"{pad}    {v} = {v} + 1")
                block(depth + 1, indent + 4, True)
            elif k == "for":
                lines.append(f"{pad}for i{len(lines)} in range({draw(st.integers(0, 4))}):")
                block(depth + 1, indent + 4, True)
            elif k == "break":
                lines.append(f"{pad}if {cond()}:")
                lines.append(f"{pad}    break")
            elif k == "continue":
                lines.append(f"{pad}if {cond()}:")
                lines.append(f"{pad}    r = r + 1")
                lines.append(f"{pad}    continue")
            else:
                lines.append(f"{pad}if {cond()}:")
                lines.append(f"{pad}    return r * 10 + a")

    block(0, 4, False)
    lines.append("    return r")
    return "\n".join(lines) + "\n"


@settings(max_examples=40, deadline=None)
@given(_programs(), st.integers(-3, 5), st.integers(-3, 5))
def test_generated_programs(tmp_path_factory, src, a, b):
    path = tmp_path_factory.mktemp("prog") / "prog.py"
    path.write_text(src)
    ns = {}
    exec(compile(src, str(path), "exec"), ns)
    prog = ns["prog"]
    want = prog(a, b)
    conv = ag.to_graph(prog)
    assert conv(a, b) == want, src
    ta, tb = tfc.constant(a, tfc.int64), tfc.constant(b, tfc.int64)
    assert _val(conv(ta, tb)) == _val(prog(ta, tb)), src  # same eager tensor arithmetic


# -- the symbolic path, with a fake tracer ------------------------------------------------
# While STATE.builder is set every tensor counts as symbolic; the fake builder runs
# ops eagerly, the fake control flow records the functional calls and runs them,
# and bool() of a tensor raises, as it would on a real symbolic tensor.

class _FakeBuilder:
    def emit(self, op, tensors, attrs):
        return run_eager(op, tensors, attrs)


class _FakeTensorArray:
    def __init__(self, dtype, size=0, dynamic_size=False, element_shape=None, items=()):
        self.dtype, self.items = dtype, list(items)

    def write(self, i, x):
        assert _val(i) == len(self.items)
        return _FakeTensorArray(self.dtype, items=self.items + [tfc.constant(x, self.dtype)])

    def size(self):
        return tfc.constant(len(self.items))

    def stack(self):
        return tfc.constant(np.array([x.numpy() for x in self.items], self.dtype.as_numpy_dtype))


class _FakeControlFlow:
    TensorArray = _FakeTensorArray

    def __init__(self):
        self.calls = []

    @staticmethod
    def _tensors(xs):
        return tuple(tfc.constant(x) if isinstance(x, (bool, int, float)) else x for x in xs)

    def cond(self, pred, true_fn, false_fn):
        self.calls.append("cond")
        t, f = true_fn(), false_fn()  # both branches are traced
        if isinstance(t, tuple):
            t, f = self._tensors(t), self._tensors(f)
            assert len(t) == len(f)
        return t if pred.numpy() else f

    def while_loop(self, cond, body, loop_vars, maximum_iterations=None):
        self.calls.append("while_loop")
        loop_vars = self._tensors(loop_vars)
        body(*loop_vars)  # traced once before running, like a real tracer
        while cond(*loop_vars).numpy():
            loop_vars = self._tensors(body(*loop_vars))
        return loop_vars

    def print(self, *args, **kwargs):
        self.calls.append(("print", args))

    def Assert(self, cond, data):
        self.calls.append(("Assert", data))
        if not cond.numpy():
            raise tfc.errors.InvalidArgumentError(str(data[0]))


@pytest.fixture
def traced(monkeypatch):
    fake = _FakeControlFlow()
    monkeypatch.setattr(operators, "CONTROL_FLOW", fake)

    def no_bool(self):
        raise TypeError("bool() of a symbolic tensor")

    monkeypatch.setattr(tfc.Tensor, "__bool__", no_bool)
    monkeypatch.setattr(STATE, "builder", _FakeBuilder())
    return fake


def test_symbolic_collatz(traced):
    got = ag.to_graph(collatz)(tfc.constant(27))
    assert _val(got) == collatz(27)
    assert "while_loop" in traced.calls and "cond" in traced.calls


def test_symbolic_huber_ternary_boolops(traced):
    assert _val(huber_loss(tfc.constant(3.0))) == pytest.approx(2.5)

    def f(x):
        y = x if x > 0 else -x
        if x > 0 and x < 10 or not x > -100:
            y = y + 1
        return y

    assert _val(ag.to_graph(f)(tfc.constant(-4.0))) == 4.0
    assert _val(ag.to_graph(f)(tfc.constant(4.0))) == 5.0


def test_symbolic_for_range_and_tensor(traced):
    def f(n, t):
        s = 0
        for i in range(n):
            s = s + i
        acc = 0.0
        for x in t:
            acc = acc + x
        return s, acc

    s, acc = ag.to_graph(f)(tfc.constant(5), tfc.constant([1.0, 2.0, 3.0]))
    assert _val(s) == 10 and _val(acc) == 6.0
    assert traced.calls.count("while_loop") == 2


def test_symbolic_break_continue_return(traced):
    def f(n):
        total = 0
        i = 0
        while i < n:
            i += 1
            if i % 2 == 0:
                continue
            if total > 10:
                break
            total += i
        return total

    for n in (0, 3, 10):
        traced.calls.clear()
        assert _val(ag.to_graph(f)(tfc.constant(n))) == f(n)

    def g(x):
        if x > 0:
            return x * 2
        else:
            return -x

    assert _val(ag.to_graph(g)(tfc.constant(3))) == 6
    assert _val(ag.to_graph(g)(tfc.constant(-3))) == 3


def test_symbolic_print_assert(traced):
    def f(x):
        assert x != 0, "Do not pass zero!"
        print("x is", x)
        return x * x

    g = ag.to_graph(f)
    assert _val(g(tfc.constant(3))) == 9
    kinds = [c[0] for c in traced.calls if isinstance(c, tuple)]
    assert kinds == ["Assert", "print"]
    with pytest.raises(tfc.errors.InvalidArgumentError, match="Do not pass zero!"):
        g(tfc.constant(0))


def test_symbolic_list_append(traced):
    def f(n):
        z = []
        tfc.autograph.set_element_type(z, tfc.int32)
        for i in range(n):
            z.append(i)
        return tfc.autograph.stack(z)

    np.testing.assert_array_equal(ag.to_graph(f)(tfc.constant(4)).numpy(), np.arange(4))

    def bad(n):
        z = []
        for i in range(n):
            z.append(i)
        return z

    with pytest.raises(ValueError, match="'z'.*set_element_type"):
        ag.to_graph(bad)(tfc.constant(4))


def test_symbolic_errors(traced):
    def one_branch(x):
        if x > 0:
            y = x
        return y

    with pytest.raises(ValueError, match=r"'y'.*both branches.*line \d+"):
        ag.to_graph(one_branch)(tfc.constant(1))

    def none_branch(x):
        y = x
        if x > 0:
            y = None
        return y

    with pytest.raises(ValueError, match="'y' is None"):
        ag.to_graph(none_branch)(tfc.constant(1))

    def some_return(x):
        if x > 0:
            return x
        x = x + 1

    with pytest.raises(ValueError, match="returns in only some"):
        ag.to_graph(some_return)(tfc.constant(1))

    def dtype_change(x):
        y = 0
        while x > 0:
            y = tfc.cast(y, tfc.float32) + 1.0
            x = x - 1
        return y

    with pytest.raises(TypeError, match="'y' has dtype"):
        ag.to_graph(dtype_change)(tfc.constant(3))

    def shape_change(x):
        y = tfc.constant([1.0])
        while x > 0:
            y = tfc.reshape(tfc.zeros([2]), [2])
            x = x - 1
        return y

    with pytest.raises(ValueError, match="'y' has shape"):
        ag.to_graph(shape_change)(tfc.constant(3))

    def first_bound_inside(x):
        while x > 0:
            x = x - 1
            z = x
        return z

    with pytest.raises((ValueError, NotImplementedError), match="'z'"):
        ag.to_graph(first_bound_inside)(tfc.constant(3))

    def python_while_becomes_tensor(x):
        i = 0
        while i < 3:
            i = x
        return i

    # the rest of the loop runs as a tensor loop
    traced.calls.clear()
    assert _val(ag.to_graph(python_while_becomes_tensor)(tfc.constant(5))) == 5
    assert traced.calls == ["while_loop"]

    def break_in_python_loop(x):
        for i in [1, 2, 3]:
            if x > i:
                break
        return x

    with pytest.raises(NotImplementedError, match="Python iterable"):
        ag.to_graph(break_in_python_loop)(tfc.constant(1))

    def while_else(x):
        while x > 0:
            x = x - 1
        else:
            x = x + 10
        return x

    with pytest.raises(NotImplementedError, match="while/else"):
        ag.to_graph(while_else)(tfc.constant(1))
