"""A small benchmark harness: time a few functions, print one markdown table.

Each ``Benchmark`` holds rows (a name and a zero-argument function). ``run``
warms every function up, then times ``repeats`` batches of ``number`` calls each
(``number`` is calibrated so a batch takes about ``batch_s``), interleaving the
rows' batches, and reports the per-call median and minimum. The ratio column is each row's median over the
baseline row's median, measured in the same run, so it compares like with like
on whatever machine runs it; "min ratio" divides the minima, the steadier figure
on a machine shared with other work. Tables never assert anything about time.

Where the environment variable ``TFC_BENCH_RESULTS`` names a file, each printed
table is also appended to it as one JSON line (``Benchmark.record``), which
``bench/plots.py`` draws (``make bench`` does both).
"""
from __future__ import annotations

import contextlib
import datetime
import gc
import importlib
import json
import os
import platform
import shlex
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass
class Row:
    name: str
    fn: Callable[[], object]
    note: str = ""
    median_s: float | None = None
    min_s: float | None = None
    number: int = 0


@dataclass
class Benchmark:
    """One table: rows timed one after another; ``baseline`` names the row the
    ratio column divides by (the first row by default)."""

    title: str
    baseline: str | None = None
    repeats: int = 7
    warmup: int = 3
    batch_s: float = 0.02
    rows: list[Row] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def add(self, name: str, fn: Callable[[], object], note: str = "") -> None:
        self.rows.append(Row(name, fn, note))

    def skip(self, name: str, why: str) -> None:
        """A row that cannot run here (e.g. framework not installed); listed under the table."""
        self.skipped.append(f"{name}: {why}")

    def run(self) -> "Benchmark":
        """Time every row. Batches are interleaved (row 1, row 2, ..., row 1, ...)
        so a change in machine load affects all rows alike, not just one."""
        for row in self.rows:
            for _ in range(self.warmup):
                row.fn()
            row.number = _calibrate(row.fn, self.batch_s)
        times = {id(row): [] for row in self.rows}
        with _gc_paused():
            for _ in range(self.repeats):
                for row in self.rows:
                    times[id(row)].append(_batch(row.fn, row.number))
        for row in self.rows:
            row.median_s, row.min_s = statistics.median(times[id(row)]), min(times[id(row)])
        return self

    def baseline_row(self) -> Row:
        if not self.rows:
            raise ValueError(f"benchmark {self.title!r} has no rows")
        if self.baseline is None:
            return self.rows[0]
        for row in self.rows:
            if row.name == self.baseline:
                return row
        raise ValueError(
            f"benchmark {self.title!r}: baseline row {self.baseline!r} not among "
            + ", ".join(r.name for r in self.rows)
        )

    def ratios(self) -> dict[str, float]:
        """Each row's median over the baseline's median (1.0 for the baseline)."""
        base = self.baseline_row().median_s
        if base is None:
            raise ValueError(f"benchmark {self.title!r} has not been run")
        return {r.name: r.median_s / base for r in self.rows}

    def table(self) -> str:
        """The results as a markdown table (a heading, the table, skipped rows)."""
        ratios = self.ratios()
        base_row = self.baseline_row()
        base = base_row.name
        unit, scale = _unit(min(r.median_s for r in self.rows))
        lines = [
            f"### {self.title}",
            "",
            f"| case | median ({unit}) | min ({unit}) | ratio vs {base} | min ratio | calls/batch | note |",
            "|---|---:|---:|---:|---:|---:|---|",
        ]
        for r in self.rows:
            lines.append(
                f"| {r.name} | {r.median_s * scale:.3g} | {r.min_s * scale:.3g} "
                f"| {ratios[r.name]:.2f}x | {r.min_s / base_row.min_s:.2f}x | {r.number} | {r.note} |"
            )
        if self.skipped:
            lines.append("")
            lines.extend(f"- skipped {s}" for s in self.skipped)
        return "\n".join(lines)

    def print(self, file=None) -> None:
        print(self.table(), file=file or sys.stdout, flush=True)
        print(file=file or sys.stdout)
        self.record()

    def record(self, path: str | None = None) -> None:
        """Append the table's results as one JSON line to ``path`` (default: the
        file ``$TFC_BENCH_RESULTS`` names; neither: nothing), for bench/plots.py."""
        path = path or os.environ.get(RESULTS_ENV)
        if not path:
            return
        base = self.baseline_row()
        entry = {"title": self.title, "baseline": base.name, "skipped": self.skipped,
                 "script": os.path.basename(sys.argv[0]),
                 "rows": [{"name": r.name, "median_s": r.median_s, "min_s": r.min_s, "note": r.note}
                          for r in self.rows]}
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")


RESULTS_ENV = "TFC_BENCH_RESULTS"


def _unit(seconds: float) -> tuple[str, float]:
    if seconds < 1e-3:
        return "us", 1e6
    if seconds < 1:
        return "ms", 1e3
    return "s", 1.0


def time_fn(fn, repeats: int = 7, warmup: int = 3, batch_s: float = 0.02, number: int | None = None):
    """(median, min, number): seconds per call over ``repeats`` batches of ``number`` calls."""
    for _ in range(warmup):
        fn()
    if number is None:
        number = _calibrate(fn, batch_s)
    with _gc_paused():
        times = [_batch(fn, number) for _ in range(repeats)]
    return statistics.median(times), min(times), number


def _batch(fn, number: int) -> float:
    """Seconds per call of ``number`` calls in a row."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


@contextlib.contextmanager
def _gc_paused():
    """The garbage collector is paused while timing, as ``timeit`` does."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _calibrate(fn, batch_s: float) -> int:
    """Calls per batch so one batch lasts about ``batch_s`` (at least 1)."""
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t0
        if dt >= batch_s / 10 or number >= 1 << 20:
            return max(1, int(number * batch_s / max(dt, 1e-9)))
        number *= 10


@contextlib.contextmanager
def no_disk_cache():
    """tfc's disk cache of generated modules off (TFC_CACHE_DIR=""), so a
    first call pays for code generation as a first process would."""
    saved = os.environ.get("TFC_CACHE_DIR")
    os.environ["TFC_CACHE_DIR"] = ""
    try:
        yield
    finally:
        if saved is None:
            del os.environ["TFC_CACHE_DIR"]
        else:
            os.environ["TFC_CACHE_DIR"] = saved


# -- environment ------------------------------------------------------------------

FRAMEWORKS = ("torch", "tensorflow", "jax")


def check_losses_agree(losses: dict, ref: str, rtol: float = 1e-4, what: str = "first-step losses") -> dict:
    """``losses`` ({implementation: its loss from the same start}) unchanged; raises
    if one is not within ``rtol`` of ``losses[ref]`` (the benchmarks time the same
    computation in every row, so the rows must agree before they are compared)."""
    want = losses[ref]
    bad = {k: v for k, v in losses.items() if abs(v - want) > rtol * abs(want)}
    if bad:
        raise AssertionError(f"{what} differ from {ref}'s {want:.7g}: {bad}")
    return losses


def detect_frameworks(names=FRAMEWORKS) -> tuple[dict, dict]:
    """(installed modules by name, reason by name for those that are not)."""
    found, missing = {}, {}
    for name in names:
        try:
            found[name] = importlib.import_module(name)
        except ImportError as e:
            missing[name] = "not installed" if getattr(e, "name", None) == name else f"import failed: {e}"
        except Exception as e:  # a broken install should not stop the other benchmarks
            missing[name] = f"import failed: {type(e).__name__}: {e}"
    return found, missing


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(frameworks: dict | None = None) -> dict:
    info = {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": platform.platform(),
    }
    for name, mod in (frameworks or {}).items():
        info[name] = getattr(mod, "__version__", "?")
    return info


def header(frameworks: dict | None = None, missing: dict | None = None, argv=None) -> str:
    """Markdown lines: date, command, machine, versions, frameworks skipped."""
    argv = sys.argv if argv is None else argv
    info = machine_info(frameworks)
    cmd = " ".join(shlex.quote(a) for a in [os.path.basename(sys.executable), *argv])
    lines = [
        f"- date: {datetime.date.today().isoformat()}",
        f"- command: `{cmd}`",
        f"- machine: {info['cpu']}, {info['cores']} cores, {info['platform']}",
        "- versions: " + ", ".join(f"{k} {info[k]}" for k in ("python", "numpy", *(frameworks or {}))),
    ]
    for name, why in (missing or {}).items():
        lines.append(f"- {name}: {why}, skipped")
    return "\n".join(lines)
