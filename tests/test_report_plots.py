"""Benchmarks as pictures (bench/plots.py, fed by bench/harness.py's record) and
the progress display of `tfc compile` over several functions."""
import importlib.util
import io
import json
import os
import sys
import textwrap

import numpy as np
import pytest

from tfc.compile_cli import compile_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(name):
    """A bench/ script as a module (bench/ is not a package, nor put on sys.path)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", os.path.join(ROOT, "bench", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


harness = _load("harness")
plots = _load("plots")


def table(title, rows, baseline=None, skipped=()):
    b = harness.Benchmark(title, baseline=baseline)
    for name, median, low in rows:
        b.rows.append(harness.Row(name, lambda: None, "", median, low, 1))
    b.skipped = list(skipped)
    return b


def test_harness_records_what_plots_draws(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install tfc[report])")
    results = tmp_path / "results.jsonl"
    monkeypatch.setenv(harness.RESULTS_ENV, str(results))
    out = io.StringIO()
    table("GELU, 2^20 float32", [("numpy", 2e-3, 1.9e-3), ("tfc compiled", 1e-3, 0.9e-3),
                                 ("torch eager", 4e-3, 3e-3)], skipped=["jax: not installed"]).print(out)
    assert out.getvalue().startswith("### GELU, 2^20 float32")  # the table as before
    table("x + x", [("numpy", 1e-6, 1e-6), ("tfc", 3e-6, 2e-6)]).print(io.StringIO())
    table("GELU, 2^20 float32", [("numpy", 2e-3, 1.9e-3), ("tfc compiled", 5e-4, 4e-4)]).print(io.StringIO())
    tables = plots.load(str(results))
    assert [t["title"] for t in tables] == ["GELU, 2^20 float32", "x + x"]
    assert [r["name"] for r in tables[0]["rows"]] == ["numpy", "tfc compiled"]  # the latest run of a title
    images = tmp_path / "images"
    assert plots.main([str(results), "--out", str(images)]) == 0
    assert sorted(os.listdir(images)) == ["bench-gelu-2-20-float32.png", "bench-x-x.png"]
    import matplotlib.image

    img = matplotlib.image.imread(images / "bench-x-x.png")[..., :3]
    blue = np.array([0x1f, 0x5f, 0xa6]) / 255  # tfc's bar is drawn
    assert np.any(np.all(np.abs(img - blue) < 0.02, axis=-1))


def test_titles_with_one_slug_get_a_plot_each(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install tfc[report])")
    results = tmp_path / "results.jsonl"
    monkeypatch.setenv(harness.RESULTS_ENV, str(results))
    for title in ("x + x", "x * x"):
        table(title, [("numpy", 1e-6, 1e-6), ("tfc", 3e-6, 2e-6)]).print(io.StringIO())
    with open(results, "a") as f:  # (harness.record refuses such a table; a file written otherwise)
        f.write(json.dumps({"title": "nothing ran", "rows": []}) + "\n")
    assert plots.main([str(results), "--out", str(tmp_path / "images")]) == 0
    assert sorted(os.listdir(tmp_path / "images")) == ["bench-x-x-1.png", "bench-x-x.png"]


def test_markdown_lines_point_into_docs(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install tfc[report])")
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps({"title": "x + x", "baseline": "numpy", "rows": [
        {"name": "numpy", "median_s": 1.0, "min_s": 1.0}, {"name": "tfc", "median_s": 2.0, "min_s": 1.5}]}) + "\n")
    assert plots.main([str(results), "--out", str(tmp_path / "images"), "--markdown"]) == 2
    assert "outside" in capsys.readouterr().err and not (tmp_path / "images").exists()
    out = os.path.join(ROOT, "docs", "images", f"test-plots-{os.getpid()}")  # (removed below)
    try:
        assert plots.main([str(results), "--out", out, "--markdown"]) == 0
        assert capsys.readouterr().out == f"![x + x](images/test-plots-{os.getpid()}/bench-x-x.png)\n"
    finally:
        import shutil

        shutil.rmtree(out, ignore_errors=True)


def test_no_results_file_no_record(tmp_path, monkeypatch):
    monkeypatch.delenv(harness.RESULTS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    table("t", [("numpy", 1.0, 1.0)]).print(io.StringIO())
    assert os.listdir(tmp_path) == []


def test_groups_and_slugs():
    assert plots.group("numpy (by hand)")[0] == "numpy / Python"
    assert plots.group("np.copyto (copy bandwidth)")[0] == "numpy / Python"
    assert plots.group("plain Python ints")[0] == "numpy / Python"
    assert plots.group("torch.compile")[0] == "torch"
    assert plots.group("tf.function(jit_compile=True)")[0] == "TensorFlow"
    assert plots.group("jax.jit")[0] == "JAX"
    assert plots.group("tfc compiled")[0] == plots.group("None batch")[0] == "tfc"
    assert plots.slug("softmax over the last axis, [8192, 1024] float32") == \
        "softmax-over-the-last-axis-8192-1024-float32"


def test_bad_results_file(tmp_path, capsys):
    bad = tmp_path / "r.jsonl"
    bad.write_text(json.dumps({"title": "t", "rows": []}) + "\n{not json\n")
    assert plots.main([str(bad), "--out", str(tmp_path / "o")]) == 1
    assert f"{bad}:2: not a table written by bench/harness.py" in capsys.readouterr().err
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    assert plots.main([str(empty)]) == 1
    assert plots.main([str(tmp_path / "missing.jsonl")]) == 1
    assert not (tmp_path / "o").exists()


MODEL = '''
import tfc


@tfc.function(input_signature=[tfc.TensorSpec((4,))])
def one(x):
    return x * 2.0


@tfc.function(input_signature=[tfc.TensorSpec((4,))])
def two(x):
    return tfc.exp(x)
'''


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("quiet", [False, True])
def test_compile_progress_over_several_functions(tmp_path, monkeypatch, quiet):
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent(MODEL))
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.delenv("TFC_QUIET", raising=False)
    argv = [str(path)] + (["--quiet"] if quiet else [])
    assert compile_main(argv, out=io.StringIO()) == 0
    drawn = "compiling" in err.getvalue() and "2/2" in err.getvalue()
    assert drawn != quiet
