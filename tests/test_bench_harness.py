"""The benchmark harness prints a table with ratios against its baseline row.
No timing assertions: only the structure of what it reports."""
import importlib.util
import pathlib
import sys

import pytest

_PATH = pathlib.Path(__file__).resolve().parents[1] / "bench" / "harness.py"
_spec = importlib.util.spec_from_file_location("bench_harness", _PATH)
harness = importlib.util.module_from_spec(_spec)
sys.modules["bench_harness"] = harness  # dataclasses look their module up
_spec.loader.exec_module(harness)


def _tiny(baseline=None):
    b = harness.Benchmark("trivial", baseline=baseline, repeats=3, warmup=1, batch_s=0.001)
    b.add("noop", lambda: None)
    b.add("sum", lambda: sum(range(50)), "a note")
    b.skip("absent", "not installed")
    return b.run()


def test_table_prints_rows_and_ratios(capsys):
    b = _tiny()
    b.print()
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "### trivial"
    assert "| case | median" in out and "ratio vs noop" in out
    rows = [ln for ln in lines if ln.startswith("| noop") or ln.startswith("| sum")]
    assert len(rows) == 2
    assert rows[0].split("|")[4].strip() == "1.00x"
    assert "a note" in rows[1]
    assert "- skipped absent: not installed" in out


def test_ratios_are_median_over_baseline_median():
    b = _tiny(baseline="sum")
    r = b.ratios()
    assert r["sum"] == 1.0
    noop, s = b.rows
    assert r["noop"] == pytest.approx(noop.median_s / s.median_s)
    for row in b.rows:
        assert row.number >= 1 and 0 < row.min_s <= row.median_s


def test_unknown_baseline_and_unrun_benchmark_fail_clearly():
    b = harness.Benchmark("t", baseline="missing")
    b.add("a", lambda: None)
    with pytest.raises(ValueError, match="not been run|missing"):
        b.ratios()
    with pytest.raises(ValueError, match="no rows"):
        harness.Benchmark("empty").ratios()


def test_header_names_machine_and_missing_frameworks():
    found, missing = harness.detect_frameworks(("numpy", "no_such_framework_xyz"))
    assert "numpy" in found and missing == {"no_such_framework_xyz": "not installed"}
    text = harness.header(found, missing, argv=["bench/x.py"])
    assert "command: `" in text and "bench/x.py" in text
    assert "cores" in text and "numpy" in text
    assert "no_such_framework_xyz: not installed, skipped" in text


def test_time_fn_reports_median_min_and_calls():
    calls = []
    med, mn, number = harness.time_fn(lambda: calls.append(1), repeats=3, warmup=2, number=5)
    assert number == 5 and len(calls) == 2 + 3 * 5
    assert 0 < mn <= med
