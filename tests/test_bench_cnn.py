"""bench/cnn.py runs (tfc rows; needs scikit-learn's digits), and --only times one row alone."""
import pathlib
import sys

import pytest

pytest.importorskip("sklearn")

_BENCH = str(pathlib.Path(__file__).resolve().parents[1] / "bench")
if _BENCH not in sys.path:
    sys.path.insert(0, _BENCH)

import cnn  # noqa: E402


def test_only_times_that_row_after_the_loss_check(capsys):
    cnn.main(["--no-peers", "--only", "tfc compiled", "--repeats", "1", "--single-steps", "3"])
    out = capsys.readouterr().out
    assert "| tfc compiled |" in out and "| tfc eager |" not in out
    assert "- tfc compiled, 3 single steps: min " in out and "- tfc eager," not in out
    assert "first-step loss, every implementation within 1e-4 of tfc eager's: 2.317229" in out


def test_only_an_unknown_row_names_the_rows(capsys):
    with pytest.raises(SystemExit):
        cnn.main(["--no-peers", "--only", "jax.jit"])
    err = capsys.readouterr().err
    assert "--only 'jax.jit': not a row here; the rows are 'tfc eager', 'tfc compiled'" in err
