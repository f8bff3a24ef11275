"""AutoGraph against Python's (and TensorFlow's) semantics, table-driven.

Each program runs as plain Python (with Python values, or eager tensors) and
as ``tfc.function`` / ``tfc.autograph.to_graph``; results must be equal (values,
dtypes, structure) or both must raise. Where TensorFlow's semantics differ from
Python's on tensors (a value a tensor loop may leave unset, a return in one branch
of a tensor ``if``), the table names the error tfc must give instead.
"""
from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import tfc
from tfc.frontend.autograph import ConversionError

C = tfc.constant


def _plain(v):
    """A comparable form: tensors as ("tensor", dtype, shape, value), containers kept."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_plain(x) for x in v)
    if isinstance(v, tfc.Tensor):
        a = np.asarray(v.numpy())
        return ("tensor", a.dtype.name, a.shape, a.tolist())
    return v


def _same(want, got) -> bool:
    """Equal results. A compiled function returns tensors where Python returns a
    number (a Python ``if`` on an eager tensor): equal values then; two tensors
    must agree in dtype and shape too."""
    if isinstance(want, dict) or isinstance(got, dict):
        return isinstance(want, dict) and isinstance(got, dict) and want.keys() == got.keys() and all(
            _same(want[k], got[k]) for k in want)
    tensor = lambda v: isinstance(v, tuple) and len(v) == 4 and v[0] == "tensor"  # noqa: E731
    if tensor(want) or tensor(got):
        if tensor(want) and tensor(got):
            return want == got
        t, n = (want, got) if tensor(want) else (got, want)
        return t[2] == () and not isinstance(n, (tuple, list, type(None))) and t[3] == n
    if isinstance(want, (list, tuple)) or isinstance(got, (list, tuple)):
        return isinstance(want, (list, tuple)) and isinstance(got, (list, tuple)) and len(want) == len(got) and all(
            _same(a, b) for a, b in zip(want, got))
    return type(want) is type(got) and want == got


def _outcome(f, args):
    try:
        return "ok", _plain(f(*args))
    except Exception as e:  # noqa: BLE001 - compared as outcomes
        return "raises", type(e)


def assert_matches(f, *args):
    """``f`` as plain Python and as tfc.function give one outcome; on Python
    values, to_graph too."""
    want = _outcome(f, args)
    for conv in [tfc.function(f)] + ([] if any(isinstance(a, tfc.Tensor) for a in args)
                                     else [tfc.autograph.to_graph(f)]):
        got = _outcome(conv, args)
        assert got[0] == want[0] and (_same(want[1], got[1]) if got[0] == "ok" else got[1] is want[1]), (want, got)


def _both(values):
    """Each value as a Python value and as a tensor."""
    return [v for x in values for v in (x, C(x))]


# -- 2: return inside try / with / finally ----------------------------------------------

class _Ctx:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _raising():
    raise ValueError("raised while computing the return value")


def return_in_try_with_finally(x):
    try:
        if x > 0:
            return 1
        else:
            return 0
    finally:
        x = x + 1


def return_default_in_try_with_finally(x):
    try:
        if x > 0:
            return 1
        return 0
    finally:
        x = x + 1


def return_in_finally(x):
    try:
        return 2
    finally:
        if x > 0:
            return 1  # noqa: B012
        else:
            return 0  # noqa: B012


def return_default_in_finally(x):
    try:
        return 2
    finally:
        if x > 0:
            return 1  # noqa: B012
        return 0  # noqa: B012


def return_in_finally_default_in_try(x):
    try:
        if x > 0:
            return 0
    finally:
        return 1  # noqa: B012


def finally_reads_after_return(x):
    y = x * 0
    try:
        if x > 0:
            return x
        y = x + 3
    finally:
        y = y + 1
    return y


def return_in_with(x):
    with _Ctx():
        if x > 0:
            with _Ctx():
                return x
        else:
            return x * x
    return x * x * x  # unreachable


def return_default_in_with(x):
    with _Ctx():
        if x > 0:
            return 1
        return 0


def raise_in_return_value_caught(x):
    try:
        return _raising()
    except ValueError:
        pass
    return x


def raise_in_return_caught_after_branch(c):
    if c > 0:
        return 2
    try:
        return _raising()
    except ValueError:
        pass
    return 1


def raise_in_nested_try_return(x):
    try:
        try:
            return _raising()
        except KeyError:
            return 5
    except ValueError:
        pass
    return x


def return_in_loop_in_try(x):
    n = 0
    try:
        while n < 10:
            n += 1
            if n > x:
                return n
    finally:
        n = n + 100
    return -n


def return_in_loop_with_finally(x):
    for i in range(4):
        try:
            if i == x:
                return i * 10
        finally:
            x = x + 0
    return -1


def return_from_while_true(x):
    while True:
        if x > 2:
            return x * 10
        x = x + 1


def return_from_while_true_with_inner_loop(x):
    while True:
        for i in range(2):
            x = x + i
        if x > 4:
            return x


def return_in_try_in_tensor_loop(n):
    i = 0
    s = 0
    while i < n:
        try:
            if i > 2:
                return s
            s += i
        finally:
            i += 1
    return -s


def return_in_with_in_range_loop(n):
    s = 0
    for i in tfc.range(n):
        with _Ctx():
            if i > 2:
                return s * 100
            s += i
    return s


def finally_after_return_in_loop(n):
    s = 0
    try:
        for i in range(n):
            s += i
            if s > 3:
                return s
    finally:
        s = -1
    return s


RETURN_PROGRAMS = [return_from_while_true, return_from_while_true_with_inner_loop, return_in_try_in_tensor_loop,
                   return_in_with_in_range_loop, finally_after_return_in_loop, return_in_try_with_finally, return_default_in_try_with_finally, return_in_finally,
                   return_default_in_finally, return_in_finally_default_in_try, finally_reads_after_return,
                   return_in_with, return_default_in_with, raise_in_return_value_caught,
                   raise_in_return_caught_after_branch, raise_in_nested_try_return, return_in_loop_in_try,
                   return_in_loop_with_finally]


@pytest.mark.parametrize("f", RETURN_PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", _both([-1, 0, 1, 3]), ids=repr)
def test_returns_in_try_with_finally(f, x):
    assert_matches(f, x)


def test_break_in_finally_is_refused():
    def f(x):
        while True:
            try:
                return x
            finally:
                break  # noqa: B012 - cancels the return in Python
        return -1

    with pytest.raises(ConversionError, match="`break` or `continue` in a `finally`"):
        tfc.autograph.to_graph(f)


# -- 6: a return in only some branches of a tensor if -----------------------------------

def return_possibly_undefined(x):
    if x > 0:
        if x < 5:
            return x
    else:
        return x * x * x


def return_only_in_else(x):
    if x > 0:
        x = x + 1
    else:
        return x
    x = x * 2


@pytest.mark.parametrize("f, which", [(return_possibly_undefined, "else"), (return_only_in_else, "main")])
@pytest.mark.parametrize("x", [-2, 0, 3, 5, 7])
def test_return_in_some_branches(f, which, x):
    assert_matches(f, x)  # Python values: Python's None where it falls off the end
    lines = [i for i, text in enumerate(open(__file__).read().splitlines(), 1)
             if text.strip().startswith("if x") and f.__code__.co_firstlineno < i < f.__code__.co_firstlineno + 4]
    with pytest.raises(ValueError, match=rf"`if` at line ({'|'.join(map(str, lines))}) returns in only some of its "
                                         rf"branches: the {which} branch must also have a return"):
        tfc.function(f)(C(x))


# -- 1: any callable ----------------------------------------------------------------------

def _signed(x, scale=1):
    if x > 0:
        return x * scale
    return -x


class _Callable:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, x):
        if x > 0:
            return x * self.scale
        return -x

    def method(self, x):
        return _signed(x, self.scale)

    @staticmethod
    def static(x):
        if x > 0:
            return x * 2
        return -x

    @classmethod
    def klass(cls, x):
        if x > 0:
            return x * 2
        return -x


def _factory(scale):
    def made(x):
        if x > 0:
            return x * scale
        return -x
    return made


CALLABLES = {
    "partial": (functools.partial(_signed, scale=2), "partial(_signed)"),
    "object": (_Callable(2), "_Callable.__call__"),
    "bound method": (_Callable(2).method, "_Callable.method"),
    "staticmethod": (_Callable.static, "_Callable.static"),
    "classmethod": (_Callable.klass, "_Callable.klass"),
    "factory": (_factory(2), "_factory.<locals>.made"),
}


@pytest.mark.parametrize("kind", CALLABLES)
@pytest.mark.parametrize("x", _both([-3, 0, 4]), ids=repr)
def test_any_callable_converts(kind, x):
    f, _ = CALLABLES[kind]
    assert_matches(f, x)


@pytest.mark.parametrize("kind", CALLABLES)
def test_any_callable_retraces_warns_and_explains(kind):
    f, name = CALLABLES[kind]
    fn = tfc.function(f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(7):  # Python values: one trace each
            assert fn(i) == f(i)
    assert fn.trace_count == 7
    short = name.rsplit(".", 1)[-1] if not name.startswith("partial") else name
    assert any(f"{short} has been traced" in str(w.message) for w in caught), [str(w.message) for w in caught]
    assert fn.explain()[0].startswith("first call (x: 0") and "changed from 0 to 1" in fn.explain()[1]
    assert name in repr(fn)
    assert "ag__." in tfc.autograph.to_code(f)  # converted, and readable


def test_staticmethod_and_classmethod_objects_under_function():
    class Holder:
        scale = 3

        @tfc.function
        @staticmethod
        def static(x):
            if x > 0:
                return x * 2
            return -x

        @tfc.function
        @classmethod
        def klass(cls, x):
            if x > 0:
                return x * cls.scale
            return -x

    for x in (-2.0, 5.0):
        for owner in (Holder, Holder()):
            assert owner.static(C(x)).numpy() == (x * 2 if x > 0 else -x)
            assert owner.klass(C(x)).numpy() == (x * 3 if x > 0 else -x)
    assert isinstance(tfc.autograph.to_graph(staticmethod(_signed)), staticmethod)


def _gen(x):
    yield x


class _GenCall:
    def __call__(self, x):
        yield x

    def method(self, x):
        yield x


@pytest.mark.parametrize("wrapped", [_gen, functools.partial(_gen), functools.partial(functools.partial(_gen), 1),
                                     _GenCall(), _GenCall().method, staticmethod(_gen)],
                         ids=["function", "partial", "partial of partial", "object", "method", "staticmethod"])
@pytest.mark.parametrize("convert", [tfc.function, tfc.autograph.to_graph], ids=["function", "to_graph"])
def test_generators_rejected_however_wrapped(wrapped, convert):
    with pytest.raises(NotImplementedError, match=r"generators are not supported"):
        convert(wrapped)


# -- 4: subscripts with a variable key as branch and loop state ---------------------------

def key_dict_in_for(n):
    d = {"a": 0, "b": 10}
    k = "b"
    for i in range(n):
        d[k] = d[k] + i
    return d


def key_list_in_while(n):
    lst = [0, 0]
    j = 1
    i = 0
    while i < n:
        lst[j] = lst[j] + 2
        i += 1
    return lst


def key_dict_in_if(n):
    d = {"a": 0}
    k = "a"
    if n > 1:
        d[k] = 5
    else:
        d[k] = 7
    return d


def key_nested_in_if(n):
    d = {"x": {"a": 1, "b": 2}}
    k, j = "x", "b"
    if n > 1:
        d[k][j] = n * 3
    return d


def key_attr_item_in_while(n):
    o = _Callable(0)
    o.items = {"a": 1}
    k = "a"
    while n > 0:
        o.items[k] = o.items[k] * 2
        n -= 1
    return o.items


def index_changing_in_python_loop(n):
    lst = [0, 0, 0]
    i = 0
    while i < n:
        for j in range(3):  # a Python loop inside the tensor loop: lst[j] names each element
            lst[j] = lst[j] + j
        i += 1
    return lst


class _Keys:
    k = "a"


def key_attribute_in_while(n):
    d = {"a": 0}
    o = _Keys()
    i = 0
    while i < n:
        d[o.k] = d[o.k] + 2
        i += 1
    return d


def key_expression_in_while(n):
    lst = [0, 0]
    i = 0
    while i < n:
        lst[1 - 1] = lst[0] + 2
        lst[-1] = lst[-1] + 1
        i += 1
    return lst


def key_tuple_in_for(n):
    d = {("a", 1): 0}
    for _ in range(n):
        d["a", 1] = d["a", 1] + 2
    return d


def key_slice_in_while(n):
    lst = [0, 0, 0]
    i = 0
    while i < n:
        lst[0:2] = [lst[0] + 1, lst[1] + 2]
        i += 1
    return lst


def key_call_in_if(n):
    d = {"1": 0}
    if n > 1:
        d[str(1)] = 5
    return d


def key_call_in_while(n):
    d = {"1": 0}
    i = 0
    while i < n:
        d[str(1)] = d["1"] + 3
        i += 1
    return d


KEY_PROGRAMS = [key_dict_in_for, key_list_in_while, key_dict_in_if, key_nested_in_if, key_attr_item_in_while,
                index_changing_in_python_loop, key_attribute_in_while,
                key_expression_in_while, key_tuple_in_for, key_slice_in_while, key_call_in_if, key_call_in_while]


@pytest.mark.parametrize("f", KEY_PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", _both([0, 1, 2, 3]), ids=repr)
def test_variable_keys_are_state(f, n):
    assert_matches(f, n)


_SHARED = {}


def test_a_changing_key_of_an_object_not_carried_is_an_error():
    def f(n):
        k = 0
        while n > 0:
            _SHARED[k] = n  # _SHARED is no variable of f: its items cannot be loop state
            k = k + 1
            n -= 1
        return k

    assert f(2) == 2 and _SHARED == {0: 2, 1: 1}
    with pytest.raises(ValueError, match=r"the key of _SHARED\[k\] changes inside tensor control flow"):
        tfc.function(f)(C(2))


# -- 3: values first assigned inside a tensor loop ----------------------------------------

def creates_tensor(n):
    i = 0
    while i < n:
        v = tfc.zeros([1, 2, 3]) + tfc.cast(i, tfc.float32)
        i += 1
    return v


def creates_dict_of_tensors(n):
    i = 0
    while i < n:
        v = {"a": tfc.zeros([2]) + tfc.cast(i, tfc.float32), "b": tfc.ones([1, 2], tfc.int32) * i}
        i += 1
    return v["a"], v["b"]


def creates_tuple_in_for(n):
    for i in range(n):
        pair = (i * 2, tfc.ones([3]) * tfc.cast(i, tfc.float32))
    return pair


def creates_item(n):
    y = {}
    x = 0
    for i in range(n):
        x -= i
        y["a"] = x
    return y


def creates_item_in_while(b):
    y = {"b": b + 1}
    while y["b"] <= 10:
        y["a"] = y["b"] + 1
        y["b"] *= 2
    return y


def creates_attribute(n):
    o = _Callable(0)
    i = 0
    while i < n:
        o.last = i * 3
        i += 1
    return o.last


def creates_in_nested_loop(n):
    i = 0
    while i < n:
        j = 0
        while j < 2:
            w = i * 10 + j
            j += 1
        i += 1
    return w


def creates_by_unpacking(n):
    for i in tfc.range(n):
        a, b = i, i * 2
    return a + b


def creates_nested_item(n):
    d = {"a": {}}
    for i in range(n):
        d["a"]["b"] = i
    return d["a"]["b"]


CREATING_PROGRAMS = [creates_tensor, creates_dict_of_tensors, creates_tuple_in_for, creates_item,
                     creates_item_in_while, creates_attribute, creates_in_nested_loop, creates_by_unpacking,
                     creates_nested_item]


@pytest.mark.parametrize("f", CREATING_PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [0, 1, 2, 11, 12])
def test_loop_created_values_on_python_values(f, n):
    if f is creates_by_unpacking and n == 0:  # tfc.range(0) is a tensor while tracing: TensorFlow's check
        with pytest.raises(Exception, match="must iterate at least once to initialize variable 'a'"):
            tfc.function(f)(n)
        return
    assert_matches(f, n)


@pytest.mark.parametrize("f", CREATING_PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [0, 1, 2, 11, 12])
def test_loop_created_values_on_tensors(f, n):
    """Where the loop runs, the value of Python's; where it does not (Python's
    UnboundLocalError, KeyError or AttributeError, or a dict without the item),
    the run-time check that names the variable and the loop."""
    try:
        want = f(C(n))
    except (NameError, KeyError, AttributeError):
        want = None
    ran = not (f is creates_item_in_while and n > 10 or f is not creates_item_in_while and n == 0)
    if ran:
        assert want is not None
        assert_matches(f, C(n))
    else:
        with pytest.raises(Exception, match=r"loop at line \d+ must iterate at least once to initialize "
                                            r"(variable '\w+'|item '\w+\['a'\]'|item 'd\['a'\]\['b'\]'|"
                                            r"attribute 'o.last')"):
            tfc.function(f)(C(n))


def test_a_tensor_loop_over_a_tensor_of_length_0():
    """TensorFlow's rules: the loop's target read after it is zeros (TensorFlow gives
    it that value, with no check); a value the body creates fails the run-time check.
    The body is traced on zeros, not on an element of the empty tensor."""
    def target_after(x):
        s = 0.0
        for row in x:
            s = s + tfc.reduce_sum(row)
        return row, s

    def created_after(x):
        for row in x:
            last = row * 2
        return last

    row, s = tfc.function(target_after)(tfc.zeros([0, 3]))
    assert row.shape == (3,) and np.array_equal(row.numpy(), np.zeros(3, np.float32)) and s.numpy() == 0.0
    assert_matches(target_after, tfc.ones([2, 3]))
    with pytest.raises(Exception, match=r"must iterate at least once to initialize variable 'last'"):
        tfc.function(created_after)(tfc.zeros([0, 3]))
    assert_matches(created_after, tfc.ones([2, 3]))


def test_for_target_after_a_loop_that_did_not_run():
    def defines_target(n):
        s = 0
        for i in tfc.range(n):
            s = s * 10 + i
        return i, s

    got = tfc.function(defines_target)(0)  # tfc.range(0) is a tensor while tracing: TensorFlow's (0, 0)
    assert [t.numpy() for t in got] == [0, 0]
    for n in (1, 3):
        assert_matches(defines_target, n)
        assert_matches(defines_target, C(n))


def test_loop_created_value_whose_structure_changes():
    def f(n):
        i = 0
        v = (0, 0)
        while i < n:
            v = {"a": i}
            i += 1
        return v

    assert f(2) == {"a": 1}
    line = f.__code__.co_firstlineno + 3
    with pytest.raises(ValueError, match=rf"variable 'v' does not have the same nested structure after one "
                                         rf"iteration of the tensor loop at line {line}"):
        tfc.function(f)(C(3))


def test_loop_created_value_a_loop_cannot_carry():
    def f(n):
        i = 0
        while i < n:
            name = "step"
            i += 1
        return name, i

    line = f.__code__.co_firstlineno + 2
    with pytest.raises(ValueError, match=rf"variable 'name' is first set inside the tensor `while` loop at line "
                                         rf"{line} to str 'step'"):
        tfc.function(f)(C(3))


# -- 5: tfc.range with a tensor bound anywhere ---------------------------------------------

def range_returned(n):
    return tfc.range(n)


def range_with_start_and_step(n):
    return tfc.range(n, 2 * n + 7, 3)


def range_counting_down(n):
    return tfc.range(n, -4, -2)


def range_reduced(n):
    r = tfc.range(1, n + 1)
    return tfc.reduce_sum(r * r)


def range_iterated_after_assignment(n):
    r = tfc.range(n)
    total = 0
    for v in r:
        total += v * 2
    return total


def range_created_in_loop(n):
    i = 0
    while i < n:
        v = tfc.range(i)
        i += 1
    return v


def range_loop_variable(n):
    v = tfc.range(0)
    for i in tfc.range(n):
        # (0,) before, (None,) after: declared varying, as TensorFlow requires
        tfc.autograph.set_loop_options(shape_invariants=[(v, (None,))])
        v = tfc.range(i + 1)
    return v


def range_in_branch(n):
    if n > 2:
        r = tfc.range(n)
    else:
        r = tfc.range(3)
    return tfc.reduce_sum(r)


RANGE_PROGRAMS = [range_returned, range_with_start_and_step, range_counting_down, range_reduced,
                  range_iterated_after_assignment, range_created_in_loop, range_loop_variable, range_in_branch]


@pytest.mark.parametrize("f", RANGE_PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [1, 2, 5])
def test_tfc_range_with_a_tensor_bound(f, n):
    assert_matches(f, n)
    want = f(C(n))
    got = tfc.function(f)(C(n))
    assert got.dtype == want.dtype and np.array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("n", [0, -3])
def test_tfc_range_with_a_tensor_bound_empty(n):
    for f in (range_returned, range_with_start_and_step, range_reduced, range_iterated_after_assignment):
        assert_matches(f, C(n))


def test_tfc_range_with_a_tensor_bound_has_a_run_time_length():
    shapes = []

    def f(n):
        r = tfc.range(n)
        shapes.append(r.shape)
        return r

    fn = tfc.function(f)
    assert fn(C(4)).shape == (4,)
    assert fn(C(0)).shape == (0,)
    assert shapes == [(None,)]  # traced once: the length is known only when it runs


def test_tfc_range_float_with_a_tensor_bound_is_not_implemented():
    with pytest.raises(NotImplementedError, match="float values and a tensor bound"):
        tfc.function(lambda n: tfc.range(0.5, n))(C(3.0))


# a loop variable whose shape changes: TensorFlow's ValueError unless declared varying

def doubling(n):
    x = tfc.ones([1])
    i = 0
    while i < n:
        x = tfc.concat([x, x], 0)
        i += 1
    return x


def doubling_declared(n):
    x = tfc.ones([1])
    i = 0
    while i < n:
        tfc.autograph.set_loop_options(shape_invariants=[(x, (None,))])
        x = tfc.concat([x, x], 0)
        i += 1
    return x


def growing_item_declared(n):
    d = {"x": tfc.zeros([2, 1])}
    for i in tfc.range(n):
        tfc.autograph.set_loop_options(shape_invariants=[(d["x"], (2, None))])
        d["x"] = tfc.concat([d["x"], tfc.ones([2, 1]) * tfc.cast(i, tfc.float32)], 1)
    return d["x"]


def test_a_loop_variable_changing_shape_is_an_error_naming_the_declaration():
    line = doubling.__code__.co_firstlineno + 3
    with pytest.raises(ValueError, match=rf"variable 'x' has shape \(1,\) before the loop, but shape \(2,\) after one "
                                         rf"iteration: it changes shape in the tensor loop at line {line}; "
                                         rf".*set_loop_options\(shape_invariants="
                                         rf"\[\(x, \(None,\)\)\]\)"):
        tfc.function(doubling)(C(3))
    assert_matches(doubling, 3)  # Python values: a Python loop


@pytest.mark.parametrize("f", [doubling_declared, growing_item_declared], ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_loop_variable_declared_varying(f, n):
    assert_matches(f, n)
    assert_matches(f, C(n))


def test_shape_invariant_outside_the_declared_shape():
    def f(n):
        x = tfc.ones([1, 2])
        i = 0
        while i < n:
            tfc.autograph.set_loop_options(shape_invariants=[(x, (None, 3))])
            x = tfc.concat([x, x], 0)
            i += 1
        return x

    with pytest.raises(ValueError, match=r"variable 'x' has shape \(1, 2\) before the loop, which does not conform to the shape "
                                         r"invariant \(None, 3\)"):
        tfc.function(f)(C(2))


# -- 7: tfc's extensions give Python's results ----------------------------------------------

def condition_becomes_a_tensor(x):
    i = 0
    s = 0
    while i < 3 or x > 0:
        s += i
        i += 1
        x = x - 1
    return s, i, x


def python_range_breaks_on_a_tensor(x):
    s = 0
    for i in range(6):
        if x < i:
            break
        s += i
    return s


def python_range_returns_on_a_tensor(x):
    s = 0
    for i in range(6):
        if x < i:
            return s * 10
        s += i
    return s


def for_else(n):
    s = 0
    for i in range(n):
        if i == 7:
            break
        s += i
    else:
        s = -s
    return s


def while_else(n):
    i = 0
    while i < n:
        if i == 7:
            break
        i += 1
    else:
        i = -i
    return i


@pytest.mark.parametrize("f", [condition_becomes_a_tensor, python_range_breaks_on_a_tensor,
                               python_range_returns_on_a_tensor], ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", _both([-1, 0, 2, 5, 9]), ids=repr)
def test_python_loop_turning_into_a_tensor_loop(f, x):
    assert_matches(f, x)


@pytest.mark.parametrize("f", [for_else, while_else], ids=lambda f: f.__name__)
@pytest.mark.parametrize("n", [0, 1, 5, 7, 8, 12])
def test_loop_else_on_python_values(f, n):
    assert_matches(f, n)


@pytest.mark.parametrize("f", [for_else, while_else], ids=lambda f: f.__name__)
def test_loop_else_on_a_tensor_is_refused(f):
    with pytest.raises(NotImplementedError, match="else"):
        tfc.function(f)(C(3))


def padded_any_shape(n):
    m = tfc.zeros([2, 2], tfc.int32)
    i = 0
    while i < n:
        tfc.autograph.set_loop_options(shape_invariants=[(m, None)])  # any shape (of its rank)
        m = tfc.pad(m, [[1, 1], [1, 1]], constant_values=1)
        i += 1
    return m


def grown_from_an_iterable(items):
    v = tfc.constant([0, 0])
    for i in items:
        tfc.autograph.set_loop_options(shape_invariants=[(v, tfc.TensorSpec((None,), tfc.int32))])
        v = tfc.concat([v, tfc.reshape(tfc.cast(i, tfc.int32), [1])], 0)
    return v


@pytest.mark.parametrize("n", [0, 1, 3])
def test_shape_invariants_any_shape_and_spec(n):
    assert_matches(padded_any_shape, n)
    assert_matches(padded_any_shape, C(n))
    assert_matches(grown_from_an_iterable, range(n))
    assert_matches(grown_from_an_iterable, tfc.range(n))


# tfc's own errors about tensor control flow fail the trace even where the user's code
# catches them: an `except` running while tracing would give a value Python does not

def caught_partial_return(x):
    try:
        if x > 0:
            return x
    except ValueError:
        return -x


def caught_one_branch_value(x):
    try:
        if x > 0:
            y = x
        z = y * 2
    except ValueError:
        z = -1
    return z


def caught_structure_change(n):
    v = (0, 0)
    try:
        i = 0
        while i < n:
            v = [i]
            i += 1
    except (TypeError, ValueError):
        v = (-1, -1)
    return v


@pytest.mark.parametrize("f, message", [
    (caught_partial_return, "returns in only some of its branches"),
    (caught_one_branch_value, "must also be initialized in the else branch"),
    (caught_structure_change, "does not have the same nested structure"),
], ids=lambda v: getattr(v, "__name__", "message"))
@pytest.mark.parametrize("x", [-1, 2])
def test_own_errors_fail_the_trace_even_when_caught(f, message, x):
    assert_matches(f, x)  # Python values: Python's answer
    with pytest.raises(ValueError, match=message):
        tfc.function(f)(C(x))


def return_in_finally_drops_the_exception(x):
    try:
        if x > 100:
            return 0
        raise KeyError("dropped by the return in finally")
    finally:
        return x + 1  # noqa: B012


def return_in_finally_value_raises(x):
    try:
        try:
            return x
        finally:
            return _raising()  # noqa: B012
    except ValueError:
        return -x


def finally_without_return_keeps_the_exception(x):
    try:
        try:
            raise KeyError("kept")
        finally:
            if x > 100:
                return 0  # noqa: B012
    except KeyError:
        return x * 3


@pytest.mark.parametrize("f", [return_in_finally_drops_the_exception, return_in_finally_value_raises,
                               finally_without_return_keeps_the_exception], ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [1, 200])
def test_return_in_finally_and_exceptions(f, x):
    assert_matches(f, x)
    assert "fin_return_" in tfc.autograph.to_code(f)


def return_in_loop_and_after(x):
    s = 0
    for c in x:
        s += c
        if c % 2 > 0:
            return s
        else:
            return -s
    return s


def test_return_in_a_tensor_loop_that_did_not_run_is_pythons():
    """tfc's extension (docs/autograph.md): every path sets the return value."""
    for items in ([], [1], [2, 3]):
        assert_matches(return_in_loop_and_after, items)
        assert_matches(return_in_loop_and_after, tfc.constant(items, dtype=tfc.int32))


def initializes_from_itself(n):
    for i in range(n):
        if i == 0:
            a = 1
        else:
            a = a + 1
    return a


@pytest.mark.parametrize("n", [0, 1, 2])
def test_a_loop_value_read_before_the_loop_sets_it(n):
    assert_matches(initializes_from_itself, n)  # Python values: a Python loop
    line = initializes_from_itself.__code__.co_firstlineno + 1
    with pytest.raises(ValueError, match=rf"variable 'a' is first set inside the tensor `for` loop at line {line} "
                                         rf"and read before it is set: it must be defined before the loop"):
        tfc.function(initializes_from_itself)(C(n))


# lists the function appends to: items read and set through the runtime (tensor lists)

def list_read_write_in_loop(n):
    lst = []
    lst.append(tfc.ones([2], tfc.int32))
    lst.append(tfc.ones([2], tfc.int32))
    tfc.autograph.set_element_type(lst, tfc.int32)
    for i in range(2, n):
        lst.append(lst[i - 1] + lst[i - 2])
        lst[i - 2] = -lst[i - 2]
    return tfc.autograph.stack(lst, strict=False)


def list_item_update():
    lst = []
    lst.append(1)
    lst.append(2)
    lst.append(3)
    tfc.autograph.set_element_type(lst, tfc.int32)
    lst[1] = 5
    return tfc.autograph.stack(lst), 2 * lst[2]


@pytest.mark.parametrize("n", _both([0, 2, 4, 6]), ids=repr)
def test_list_items_read_and_set_in_a_tensor_loop(n):
    assert_matches(list_read_write_in_loop, n)


def test_list_items_and_stack():
    assert_matches(list_item_update)
    assert "ag__.set_item(lst, 1, 5)" in tfc.autograph.to_code(list_item_update)
    t = C([1, 2])
    assert tfc.autograph.stack(t) is t and tfc.autograph.stack(3, strict=False) == 3
    with pytest.raises(TypeError, match="stack expects a list"):
        tfc.autograph.stack(3)
