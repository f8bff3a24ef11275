"""examples/digits_mlp.py: a short training run, and the full one."""
import importlib.util
import pathlib

import pytest

pytest.importorskip("sklearn", reason="scikit-learn (the 'examples' extra) is not installed")

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "digits_mlp.py"


def _example():
    spec = importlib.util.spec_from_file_location("digits_mlp", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_digits_short_run_and_exact_restore():
    acc, restored, same = _example().train(epochs=3, verbose=False)
    assert acc >= 0.9
    assert restored == acc and same


@pytest.mark.slow
def test_digits_full_run_reaches_95_percent(capsys):
    _example().main([])  # raises SystemExit if the restored model differs
    out = capsys.readouterr().out
    acc = float(out.strip().splitlines()[-1].split()[2].rstrip(";"))
    assert acc >= 0.95
