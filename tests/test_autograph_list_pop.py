"""``lst.pop()`` of a list with a declared element type in converted code: in a
tensor loop or `if` it pops the tensor list's last element (TensorFlow's
pop_back), with Python's result on the same values; the forms the conversion
leaves alone keep their clear error."""
import numpy as np
import pytest

import tfc
from tfc.core import nest
from helpers import assert_bit_identical
from tests.test_autograph_reference import nested_fill  # a list of tensor lists' stacks

ag = tfc.autograph


def _same_as_python(f, *args):
    """tfc.function(f) on tensors gives what f gives on Python ints."""
    want = f(*(a if not isinstance(a, tfc.Tensor) else int(a.numpy()) for a in args))
    got = tfc.function(f)(*args)
    for g, w in zip(nest.flatten(got), nest.flatten(want)):
        g = g.numpy() if isinstance(g, tfc.Tensor) else np.asarray(g)
        w = w.numpy() if isinstance(w, tfc.Tensor) else np.asarray(w)
        assert_bit_identical(g, w.astype(g.dtype) if w.size else w.reshape(g.shape).astype(g.dtype))


def pop_in_while(n):
    l = []
    for i in range(5):
        l.append(10 * i)
    ag.set_element_type(l, tfc.int32, ())
    total, i = 0, 0
    while i < n:
        total = total * 2 + l.pop()
        i += 1
    return ag.stack(l, strict=False), total


def pop_and_append(n):
    l = []
    l.append(1)
    ag.set_element_type(l, tfc.int32, ())
    for i in range(n):
        if i % 2 == 0:
            l.append(i + 5)
            l.append(i + 7)
        else:
            x = l.pop()
            l.append(x * 3)
    return ag.stack(l, strict=False)


def pop_vectors(n):
    rows = []
    for i in range(4):
        rows.append(tfc.constant([float(i), -float(i)]))
    ag.set_element_type(rows, tfc.float32, (2,))
    acc = tfc.constant([0.0, 0.0])
    for _ in range(n):
        acc = acc + rows.pop() * 0.5
    return ag.stack(rows, strict=False), acc


@pytest.mark.parametrize("n", [0, 1, 3, 5])
def test_pop_in_a_tensor_while(n):
    _same_as_python(pop_in_while, tfc.constant(n))


@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_pop_and_append_in_a_tensor_for_and_if(n):
    _same_as_python(pop_and_append, tfc.constant(n))


@pytest.mark.parametrize("n", [0, 2, 4])
def test_pop_of_vectors(n):
    want = pop_vectors(n)
    got = tfc.function(pop_vectors)(tfc.constant(n))
    for g, w in zip(got, want):
        assert_bit_identical(g.numpy(), w.numpy())


def test_pop_of_an_empty_tensor_list_fails_when_it_runs():
    f = tfc.function(pop_in_while)
    with pytest.raises(Exception, match=r"pop from empty list \('l', line \d+\)"):
        f(tfc.constant(6))


def test_pop_in_a_python_loop_is_pythons():
    got, want = tfc.function(pop_in_while)(3), pop_in_while(3)
    assert_bit_identical(got[0].numpy(), want[0].numpy())
    assert got[1] == want[1] == 40 * 4 + 30 * 2 + 20


def test_an_undeclared_list_popped_in_a_tensor_loop_is_a_clear_error():
    def f(n):
        l = [1, 2, 3]
        l.append(4)
        s = 0
        for _ in range(n):
            s += l.pop()
        return s

    with pytest.raises(NotImplementedError, match=r"list 'l' is popped inside a tensor loop or `if` at line \d+, "
                                                  r"but it is a Python list there.*set_element_type\(l, dtype\)"):
        tfc.function(f)(tfc.constant(2))


def _pop_in_condition(n):
    l = []
    l.append(1)
    l.append(2)
    ag.set_element_type(l, tfc.int32, ())
    s = 0
    for _ in range(n):
        s = s + (l.pop() if s >= 0 else 0)  # under a condition: Python might not pop
    return s


def _pop_with_another_use(n):
    l = []
    l.append(1)
    l.append(2)
    ag.set_element_type(l, tfc.int32, ())
    s = 0
    for _ in range(n):
        s = s + l.pop() + len(l)  # the order of the pop and len() matters
    return s


@pytest.mark.parametrize("f", [_pop_in_condition, _pop_with_another_use])
def test_forms_not_rewritten_keep_the_clear_error(f):
    with pytest.raises(NotImplementedError, match=r"pop\(\) of list 'l' \(a list with a declared element type\) "
                                                  r"at line \d+ inside a tensor loop or `if` is supported only as "
                                                  r"`lst.pop\(\)`"):
        tfc.function(f)(tfc.constant(1))
    assert tfc.function(f)(1) == f(1)  # a Python loop: Python's pop


def _pop_at_an_index(n):
    l = []
    l.append(1)
    l.append(2)
    ag.set_element_type(l, tfc.int32, ())
    s = 0
    for i in range(n):
        l.append(i)  # a tensor list in the loop
        s += l.pop(0)
    return s


def test_a_tensor_list_popped_at_an_index_is_a_clear_error():
    with pytest.raises(NotImplementedError, match=r"pop\(\) of list 'l' .* at line \d+ inside a tensor loop"):
        tfc.function(_pop_at_an_index)(tfc.constant(2))
    assert tfc.function(_pop_at_an_index)(3) == _pop_at_an_index(3) == 1 + 2 + 0


def test_converted_code_shows_the_pop():
    code = ag.to_code(pop_in_while)
    assert "l = ag__.list_pop(l, 'l'," in code and "total * 2 + ag__.popped(l)" in code


def test_a_tensor_list_of_run_time_length_elements():
    # the rows' length is known only at run time: the first row sizes the buffer
    for m, n in ((2, 3), (1, 0), (4, 1)):
        assert_bit_identical(tfc.function(nested_fill)(tfc.constant(m), tfc.constant(n)).numpy(),
                             np.array([list(range(n))] * m, np.int32).reshape(m, n))
    # rows of a static length, as before
    assert_bit_identical(tfc.function(nested_fill)(tfc.constant(2), 3).numpy(), np.array([[0, 1, 2]] * 2, np.int32))


def ragged(m):
    mat = []
    ag.set_element_type(mat, tfc.int32)
    for i in range(m):
        mat.append(tfc.range(i))  # row i has i elements
    return ag.stack(mat, strict=False)


def test_a_tensor_list_of_rows_of_different_lengths_is_an_error_not_a_broadcast():
    # numpy would broadcast a row of length 1 into a buffer of rows of length 0 or 2
    assert_bit_identical(tfc.function(ragged)(tfc.constant(1)).numpy(), np.zeros((1, 0), np.int32))
    # (the run-time shape check gives eager's error for those shapes, at the append's line)
    with pytest.raises(ValueError, match=r"element shape \(1,\) differs from the array's element shape \(0,\)"
                                         r"\n  at .*test_autograph_list_pop.py:\d+"):
        tfc.function(ragged)(tfc.constant(3))
    with pytest.raises(Exception):
        ragged(3)  # Python's stack of rows of different lengths fails too

# -- a pop of a Python list the function never appends to (not rewritten: Python's pop) ------

def pop_outer_list(n):
    l = [1, 2, 3]
    s = 0
    for _ in range(n):
        s += l.pop()
    return s


def pop_outer_list_at(n):
    l = [1, 2, 3]
    s = 0
    while s < n:
        s = s + l.pop(0)
    return s


def pop_in_tensor_if(n):
    l = [1, 2, 3]
    s = 0
    if n > 1:
        s = l.pop()
    return s, len(l)


def pop_argument(l, n):
    s = 0
    for _ in range(n):
        s += l.pop()
    return s


class _Holder:
    def __init__(self):
        self.items = [4, 5, 6]


def pop_attribute(h, n):
    s = 0
    for _ in range(n):
        s += h.items.pop()
    return s


_MODULE_LIST = [7, 8, 9]


def pop_global(n):
    s = 0
    for _ in range(n):
        s += _MODULE_LIST.pop()
    return s


_POP_OUTSIDE = r"test_autograph_list_pop.py:\d+: pop\(\) of a Python list made before the tensor loop or `if`"


@pytest.mark.parametrize("f,args", [(pop_outer_list, ()), (pop_outer_list_at, ()), (pop_in_tensor_if, ()),
                                    (pop_argument, ([1, 2, 3],)), (pop_attribute, (_Holder(),)),
                                    (pop_global, ())], ids=lambda a: getattr(a, "__name__", "args"))
def test_a_tensor_loop_does_not_pop_an_outer_python_list_once(f, args):
    # traced once, the pop would run once whatever the trips (Python's 5 would be 6)
    with pytest.raises(NotImplementedError, match=_POP_OUTSIDE):
        tfc.function(f)(*args, tfc.constant(2))
    # a Python loop or `if` pops as Python does
    if f is not pop_global:
        fresh = [_Holder() if isinstance(a, _Holder) else list(a) for a in args]
        assert tfc.function(f)(*fresh, 2) == f(*[_Holder() if isinstance(a, _Holder) else list(a) for a in args], 2)
    assert _MODULE_LIST == [7, 8, 9]  # the error came before the pop


def pop_a_list_of_the_body(n):
    s = 0
    for i in range(n):
        tmp = [1, 2, 3]
        s += tmp.pop()
        for _ in range(2):  # a Python loop in the tensor loop pops its own list
            s += tmp.pop(0)
    return s


def pop_a_list_of_the_body_kept(n):
    s = 0
    tmp = [0]
    for i in range(n):
        tmp = [1, 2, 3]  # a new list on each trip (loop state)
        s += tmp.pop()
    return s, len(tmp)


def test_a_list_made_inside_the_tensor_loop_pops_as_python():
    for n in (0, 1, 3):
        assert tfc.function(pop_a_list_of_the_body)(tfc.constant(n)).numpy() == pop_a_list_of_the_body(n) == 6 * n
    assert tfc.function(pop_a_list_of_the_body)(3) == 18
    # a new list each trip, kept as loop state: its pop is the trip's own (the loop's
    # error is about the list's structure, not the pop)
    assert pop_a_list_of_the_body_kept(2) == (6, 2)
    with pytest.raises(ValueError, match="variable 'tmp' does not have the same nested structure"):
        tfc.function(pop_a_list_of_the_body_kept)(tfc.constant(2))
