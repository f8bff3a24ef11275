"""The numpy backend's gather of whole rows (rt.load_rows): a load_at whose last
index spans the buffer's last dim is fancy indexing by the other indices alone
where they are constant along that dim; the same elements as the general form."""
import numpy as np

import tfc
from tfc.backends.numpy import runtime as rt


def test_load_rows_equals_fancy_indexing_on_both_paths(rng):
    table = rng.normal(size=(7, 5)).astype(np.float32)
    grid = np.arange(5).reshape(1, 1, -1)
    ids = rng.integers(0, 7, size=(3, 4, 1))
    assert np.array_equal(rt.load_rows(table, (ids,), grid), table[ids, grid])  # rows: the fast path
    varying = rng.integers(0, 7, size=(3, 4, 5))  # not constant along the rows: the general form
    assert np.array_equal(rt.load_rows(table, (varying,), grid), table[varying, grid])
    scalar = np.intp(2)  # a 0-d index: the general form
    assert np.array_equal(rt.load_rows(table, (scalar,), grid), table[scalar, grid])
    cube = rng.normal(size=(4, 6, 5))
    i, j = rng.integers(0, 4, size=(2, 3, 1)), rng.integers(0, 6, size=(1, 3, 1))
    assert np.array_equal(rt.load_rows(cube, (i, j), np.arange(5).reshape(1, 1, -1)), cube[i, j, np.arange(5)])


def test_compiled_gathers_of_rows_equal_eager(rng):
    table = tfc.constant(rng.normal(size=(11, 8)).astype(np.float32))
    cube = tfc.constant(rng.normal(size=(5, 3, 4)))
    ids = tfc.constant(rng.integers(0, 11, size=(6, 7)).astype(np.int32))

    def f(i):
        return (tfc.nn.embedding_lookup(table, i), tfc.gather(cube, i[:, :2] % 5, axis=0),
                tfc.gather(table, i[0] % 8, axis=1))  # (its last index is the ids: the general form)

    compiled = tfc.function(f)
    for got, want in zip(compiled(ids), f(ids)):
        assert np.array_equal(got.numpy(), want.numpy())
    assert "rt.load_rows(" in compiled.get_concrete_function(ids).source
