"""A fixed-size TensorArray carried by compiled control flow whose rows have a size
known only at run time (a None signature): rows written before the loop give the
unwritten ones their shape; with none written, a clear NotImplementedError (it was
zeros' TypeError about a None dimension). Found by the differential fuzz."""
import numpy as np
import pytest

import tfc

X = np.array([1.0, 2.0], np.float32)
NONE_SIG = [tfc.TensorSpec((None,), tfc.float32)]


def _compiled(f):
    return tfc.function(f, input_signature=NONE_SIG)(tfc.constant(X))


def test_unwritten_rows_of_run_time_size_are_not_implemented():
    def f(x):
        ta = tfc.TensorArray(tfc.float32, size=3)
        for j in tfc.range(3):
            ta = ta.write(j, tfc.sin(x) * tfc.cast(j, tfc.float32))
        return ta.stack()

    assert f(tfc.constant(X)).shape == (3, 2)  # eagerly the rows' shape is known
    with pytest.raises(NotImplementedError, match=r"TensorArray of size 3 that no element was written to .*"
                                                  r"element shape \(\?,\) known only at run time.*element_shape"):
        _compiled(f)


@pytest.mark.parametrize("written", [0, 2])
def test_a_row_written_before_the_loop_shapes_the_others(written):
    def f(x):
        ta = tfc.TensorArray(tfc.float32, size=4)
        ta = ta.write(written, x * 3.0)
        for j in tfc.range(1, 2):
            ta = ta.write(j, tfc.sin(x) + tfc.cast(j, tfc.float32))
        return ta.stack()

    want = f(tfc.constant(X)).numpy()
    got = _compiled(f)
    assert got.shape == (4, 2) and np.array_equal(got.numpy(), want)
    assert np.array_equal(want[3], np.zeros(2, np.float32))  # never written: zeros


def test_the_suggested_forms_work():
    def known_shape(x):
        ta = tfc.TensorArray(tfc.float32, size=3, element_shape=(2,))
        for j in tfc.range(3):
            ta = ta.write(j, tfc.sin(x) * tfc.cast(j, tfc.float32))
        return ta.stack()

    def growing(x):
        ta = tfc.TensorArray(tfc.float32, size=0, dynamic_size=True)
        for j in tfc.range(3):
            ta = ta.write(j, tfc.sin(x) * tfc.cast(j, tfc.float32))
        return ta.stack()

    for f in (known_shape, growing):
        assert np.array_equal(_compiled(f).numpy(), f(tfc.constant(X)).numpy())
