"""tfc.core.blas_threads: small products on the calling thread, the count restored."""

import numpy as np
import pytest

from tfc.core import blas_threads


def test_matmul_is_numpys_product(rng=np.random.default_rng(0)):
    for shape in ((3, 5, 4), (1024, 144, 32), (300, 200, 150)):  # one thread, and above the limit
        m, k, n = shape
        a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
        np.testing.assert_allclose(blas_threads.matmul(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
        out = np.empty((m, n), np.float32)
        assert blas_threads.matmul(a, b, out=out) is out
        np.testing.assert_array_equal(out, blas_threads.matmul(a, b))


def test_thread_count_restored_after_a_product_and_an_error():
    setters = blas_threads._local_setters()
    if not setters:
        pytest.skip("no OpenBLAS with openblas_set_num_threads_local in this process")
    set_local = setters[0]
    before = set_local(3)  # the count: 3 while we look
    try:
        blas_threads.matmul(np.ones((4, 4)), np.ones((4, 4)))  # (below TINY_MACS: no section)
        assert set_local(3) == 3
        with pytest.raises(ValueError):
            blas_threads.matmul(np.ones((4, 4)), np.ones((5, 4)))  # numpy's shape error
        assert set_local(3) == 3
        with blas_threads.one_thread():
            assert set_local(1) == 1
        assert set_local(3) == 3
    finally:
        set_local(before)


def test_tiny_products_skip_the_section_a_times_its_transpose_does_not(monkeypatch):
    """Below TINY_MACS OpenBLAS runs one thread anyway (no section); a @ a.T is
    numpy's syrk, which has no such limit: it still takes the section."""
    if not blas_threads._local_setters():
        pytest.skip("no OpenBLAS with openblas_set_num_threads_local in this process")
    entered, enter = [], blas_threads._enter
    monkeypatch.setattr(blas_threads, "_enter", lambda: (entered.append(1), enter())[1])
    a = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    np.testing.assert_array_equal(blas_threads.matmul(a, a + 1), a @ (a + 1))
    np.testing.assert_array_equal(blas_threads.matmul(a, a), a @ a)  # one buffer, but gemm
    assert entered == []
    np.testing.assert_array_equal(blas_threads.matmul(a, a.T), a @ a.T)
    assert entered == [1]
    big = np.ones((16, 16), np.float32)  # 4096 multiply-adds: above TINY_MACS
    blas_threads.matmul(big, big + 1)
    assert entered == [1, 1]


def _one_thread_blocks(a, b, parts):
    """``a @ b`` block by block (rows, or columns where b has more than a has rows),
    each on one OpenBLAS thread."""
    with blas_threads.one_thread():
        if b.shape[1] > a.shape[0]:
            return np.concatenate([a @ b[:, lo:hi] for lo, hi in parts], axis=1)
        return np.concatenate([a[lo:hi] @ b for lo, hi in parts])


@pytest.mark.parametrize("m, k, n, transposed", [(2048, 64, 256, False), (64, 2048, 256, True),
                                                 (2048, 256, 65, False), (100, 1000, 300, True)])
def test_large_products_are_cut_by_their_shapes_alone(m, k, n, transposed, monkeypatch,
                                                      rng=np.random.default_rng(1)):
    if not blas_threads._local_setters():
        pytest.skip("no OpenBLAS with openblas_set_num_threads_local in this process")
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal((k, m) if transposed else (m, k)).astype(dtype)
        a = a.T if transposed else a
        b = rng.standard_normal((k, n)).astype(dtype)
        cut = n if n > m else m
        parts = blas_threads.blocks(cut, m * k * n, blas_threads.ROW_ALIGN)
        assert len(parts) > 1 and parts[0][0] == 0 and parts[-1][1] == cut
        assert all(hi - lo == parts[0][1] - parts[0][0] for lo, hi in parts[:-1])
        assert (parts[0][1] - parts[0][0]) % blas_threads.ROW_ALIGN == 0
        expected = _one_thread_blocks(a, b, parts)
        np.testing.assert_array_equal(blas_threads.matmul(a, b), expected)
        out = np.full((m, n), np.nan, dtype)
        blas_threads.matmul(a, b, out=out)
        np.testing.assert_array_equal(out, expected)
        monkeypatch.setattr(blas_threads, "NUM_THREADS", 1)  # the calling thread alone: the same cut
        np.testing.assert_array_equal(blas_threads.matmul(a, b), expected)
        monkeypatch.undo()
        np.testing.assert_allclose(expected, a.astype(np.float64) @ b, rtol=1e-3, atol=1e-3)


def test_batched_products_split_by_batch_are_each_matrixs_gemm(rng=np.random.default_rng(2)):
    for sa, sb in (((64, 64, 32), (64, 32, 64)),  # the GPT's attention scores, batch x heads flattened
                   ((1, 32, 64, 64), (32, 1, 64, 48)),  # broadcast batch axes
                   ((32, 64, 64), (64, 64)),  # a 2-D right operand
                   ((1, 1, 1024, 96), (96, 128))):  # a batch of one: the rows are cut
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        with blas_threads.one_thread():
            expected = np.matmul(a, b)
        for limit in (blas_threads.ONE_THREAD_MACS, 1 << 16):  # whole, and cut into blocks
            saved = blas_threads.ONE_THREAD_MACS
            blas_threads.ONE_THREAD_MACS = limit
            try:
                got = blas_threads.matmul(a, b)
            finally:
                blas_threads.ONE_THREAD_MACS = saved
            if sa[-2] == 1024 and limit != saved:
                expected_rows = _one_thread_blocks(a[0, 0], b, blas_threads.blocks(1024, 1024 * 96 * 128, 16))
                np.testing.assert_array_equal(got[0, 0], expected_rows)
            else:
                np.testing.assert_array_equal(got, expected)


def test_output_that_overlaps_an_operand(rng=np.random.default_rng(3)):
    a = rng.standard_normal((1024, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 1024)).astype(np.float32)
    expected = blas_threads.matmul(a, b)
    blas_threads.matmul(a, b, out=a)  # numpy's semantics: as if the operands were read first
    np.testing.assert_array_equal(a, expected)


def test_the_count_is_restored_once_no_block_runs(rng=np.random.default_rng(4)):
    """numpy's OpenBLAS keeps the count for the whole process: blocks on two threads
    must not restore it under each other (a block would then run on OpenBLAS's threads)."""
    setters = blas_threads._local_setters()
    if not setters or blas_threads.NUM_THREADS < 2:
        pytest.skip("no OpenBLAS with openblas_set_num_threads_local, or one thread")
    before = setters[0](2)
    try:
        a = rng.standard_normal((4096, 256)).astype(np.float32)
        b = rng.standard_normal((256, 256)).astype(np.float32)
        seen = []
        for _ in range(5):
            blas_threads.matmul(a, b)
            seen.append(setters[0](2))
        assert seen == [2] * 5
        with blas_threads.one_thread():
            inner = blas_threads.pool().submit(lambda: (blas_threads.matmul(a, b), setters[0](1))[1]).result()
            assert inner == 1 and setters[0](1) == 1  # still one thread: this section is open
        assert setters[0](2) == 2
    finally:
        setters[0](before)


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True)])
def test_eager_and_compiled_large_products_are_bit_identical(ta, tb, rng=np.random.default_rng(5)):
    import tfc

    def step(x, w, v):
        h = tfc.matmul(x, w, transpose_a=ta, transpose_b=tb)  # [2048, 256]
        s = tfc.matmul(tfc.reshape(h, (32, 64, 256)), v)  # batched by a 2-D weight: one GEMM
        return s, tfc.reduce_sum(s)

    sx, sw = ((64, 2048) if ta else (2048, 64)), ((256, 64) if tb else (64, 256))
    x, w = rng.standard_normal(sx).astype(np.float32), rng.standard_normal(sw).astype(np.float32)
    v = rng.standard_normal((256, 64)).astype(np.float32)
    with tfc.GradientTape() as tape:
        tx, tw, tv = tfc.Variable(x), tfc.Variable(w), tfc.Variable(v)
        eager = step(tx, tw, tv)[1]
    grads = tape.gradient(eager, [tx, tw, tv])

    def compiled_step(x, w, v):
        with tfc.GradientTape() as tape:
            tape.watch([x, w, v])
            s, total = step(x, w, v)
        return (s, *tape.gradient(total, [x, w, v]))

    got = tfc.function(compiled_step)(x, w, v)
    np.testing.assert_array_equal(got[0].numpy(), step(tfc.constant(x), tfc.constant(w), tfc.constant(v))[0].numpy())
    for g, e in zip(got[1:], grads):
        np.testing.assert_array_equal(g.numpy(), e.numpy())
