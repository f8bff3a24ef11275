"""The profiler: compiled.profile(*args, n=...) and tfc compile --profile."""
import io
import os
import textwrap

import numpy as np
import pytest

import tfc
from tfc.compile_cli import compile_main

HERE = os.path.abspath(__file__)


def _line_of(text: str) -> int:
    with open(HERE) as f:
        for i, line in enumerate(f, 1):
            if text in line and "_line_of" not in line:
                return i
    raise AssertionError(text)


@tfc.function
def dense_tanh(x, w):
    h = tfc.matmul(x, w)  # profiled: matmul
    return tfc.reduce_sum(tfc.tanh(h) * 2.0, axis=1)  # profiled: reduction


def _inputs():
    rng = np.random.default_rng(0)
    return (tfc.constant(rng.standard_normal((64, 32)).astype(np.float32)),
            tfc.constant(rng.standard_normal((32, 16)).astype(np.float32)))


def test_rows_name_the_kernels_their_sizes_and_lines(capsys):
    x, w = _inputs()
    prof = dense_tanh.profile(x, w, n=3)
    printed = capsys.readouterr().out
    assert "| # | op | calls | ms | share | elements | kB | GB/s | line |" in printed
    by_label = {r.label: r for r in prof.rows}
    mm = by_label["matmul"]
    assert mm.location == f"{HERE}:{_line_of('# profiled: matmul')}"
    assert mm.calls == 1
    assert mm.elements == 64 * 32  # the largest operand
    assert mm.nbytes == (64 * 32 + 32 * 16 + 64 * 16) * 4
    (red,) = [r for r in prof.rows if r.label.startswith("reduce sum")]
    assert "tanh" in red.label and red.location.endswith(f":{_line_of('# profiled: reduction')}")
    assert prof.n == 3 and prof.total > 0
    assert all(r.seconds > 0 for r in prof.rows)
    assert prof.kernels <= prof.total
    assert abs(sum(r.share for r in prof.rows) - prof.kernels / prof.total) < 1e-9
    assert [r.seconds for r in prof.rows] == sorted((r.seconds for r in prof.rows), reverse=True)
    assert str(prof) == prof.table()


def test_profiled_variant_is_separate_from_the_running_code():
    x, w = _inputs()
    conc = dense_tanh.get_concrete_function(x, w)
    before = dense_tanh(x, w).numpy()
    conc.profile(x, w, n=1, quiet=True)
    assert "PROFILE_SITES" not in conc.source and "_clock" not in conc.source
    assert np.array_equal(dense_tanh(x, w).numpy(), before)


def test_variables_are_left_as_they_were():
    v = tfc.Variable(np.ones((8, 4), np.float32))
    opt_steps = tfc.Variable(np.zeros((), np.float32))

    @tfc.function
    def step(x):
        y = tfc.matmul(x, v)
        v.assign_sub(0.5 * tfc.ones_like(v) * tfc.reduce_mean(y))
        opt_steps.assign_add(1.0)
        return tfc.reduce_sum(y)

    x = tfc.constant(np.ones((3, 8), np.float32))
    step(x)
    want_v, want_n = v.numpy().copy(), opt_steps.numpy().copy()
    prof = step.profile(x, n=4, quiet=True)
    assert np.array_equal(v.numpy(), want_v) and np.array_equal(opt_steps.numpy(), want_n)
    assert any(r.label == "matmul" for r in prof.rows)
    step(x)  # and the function still updates them
    assert opt_steps.numpy() == want_n + 1


def test_a_kernel_in_a_loop_counts_every_iteration():
    @tfc.function
    def loop(x):
        i = tfc.constant(0)
        while i < 5:
            x = tfc.matmul(x, x) * 0.5
            i += 1
        return x

    prof = loop.profile(tfc.constant(np.eye(4, dtype=np.float32)), n=2, quiet=True)
    (mm,) = [r for r in prof.rows if r.label == "matmul"]
    assert mm.calls == 5


def test_run_time_shapes_profile_the_callers_shapes():
    @tfc.function(input_signature=[tfc.TensorSpec((None, 16))])
    def f(x):
        return tfc.exp(x) + 1.0

    a = f.profile(tfc.zeros((10, 16)), n=1, quiet=True)
    b = f.profile(tfc.zeros((100, 16)), n=1, quiet=True)
    assert a.rows[0].elements == 160 and b.rows[0].elements == 1600
    assert b.rows[0].nbytes == 2 * 1600 * 4


def test_generic_form_counts_sizes_at_run_time(monkeypatch):
    from tfc.frontend import function as function_module

    monkeypatch.setattr(function_module, "SPECIALIZATIONS", 0)  # the generic form runs every shape

    @tfc.function(input_signature=[tfc.TensorSpec((None, 16)), tfc.TensorSpec((16, 4))])
    def f(x, w):
        return tfc.matmul(tfc.exp(x), w)

    w = tfc.ones((16, 4))
    conc = f.get_concrete_function(tfc.zeros((3, 16)), w)
    assert "PROFILE_SITES" not in conc.source
    for rows in (3, 50):
        prof = f.profile(tfc.zeros((rows, 16)), w, n=1, quiet=True)
        (mm,) = [r for r in prof.rows if r.label == "matmul"]
        assert mm.elements == max(rows * 16, 16 * 4)  # the largest operand
        assert mm.nbytes == (rows * 16 + 16 * 4 + rows * 4) * 4


def test_bad_n_and_other_targets():
    x, w = _inputs()
    for n in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="n must be a positive int"):
            dense_tanh.profile(x, w, n=n, quiet=True)
    with pytest.raises(ValueError, match="compiled for"):
        dense_tanh.get_concrete_function(x, w).profile(x, x, quiet=True)

    @tfc.function(target="cuda")
    def g(x):
        return x * 2.0

    with pytest.raises(NotImplementedError, match="no profiling variant"):
        g.profile(tfc.zeros((4,)), quiet=True)


def test_compile_cli_profile(tmp_path):
    model = tmp_path / "model.py"
    model.write_text(textwrap.dedent("""
        import tfc

        @tfc.function(input_signature=[tfc.TensorSpec((None, 8)), tfc.TensorSpec((8,), tfc.int32)])
        def f(x, idx):
            return tfc.reduce_sum(tfc.gather(x, idx, axis=1) ** 2)
    """))
    out = io.StringIO()
    assert compile_main([str(model), "--profile", "--shape", "x=5x8"], out=out) == 0
    text = out.getvalue()
    assert "profile of f:" in text and "(10 calls)" in text
    assert f"{model}:6 |" in text
