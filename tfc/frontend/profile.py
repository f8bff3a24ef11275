"""The profiler of compiled functions: ``ConcreteFunction.profile`` and
``Function.profile`` (and ``tfc compile --profile``).

The backend emits a profiling variant of the function's generated module
(``compile_profiled``: the clock read around each kernel, library call and
copy, the site reported after it), which runs the calls; the table lists
every site with its time per call of the function, its share of the whole
call, the elements of its largest operand, the bytes it reads and writes and
the user's source line it comes from.

Profiled calls leave the function's Variables as they were: the profiled
module updates copies of their values (a training step profiled ten times
does not take ten steps).
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from tfc.core.cell import Cell


@dataclasses.dataclass
class ProfileRow:
    """One site of the compiled function: ``seconds`` and ``calls`` per call of the function."""

    label: str
    location: str
    seconds: float
    calls: float
    elements: int | None
    nbytes: int | None
    share: float = 0.0  # of the whole call's time

    @property
    def gbytes_per_s(self) -> float | None:
        if not self.nbytes or not self.seconds:
            return None
        return self.nbytes * self.calls / self.seconds / 1e9


@dataclasses.dataclass
class Profile:
    """The profile of ``n`` calls of a compiled function (times per call):
    ``rows`` sorted by time, ``total`` the whole call, ``kernels`` their sum
    (the rest is Python between them: scalar code, views, allocation)."""

    name: str
    n: int
    total: float
    rows: list

    @property
    def kernels(self) -> float:
        return sum(r.seconds for r in self.rows)

    def table(self, top: int | None = None) -> str:
        """The table as text (a Markdown table: pastes into docs); ``top``: the slowest only."""
        rows = self.rows if top is None else self.rows[:top]
        out = [f"profile of {self.name}: {self.total * 1e3:.3f} ms per call ({self.n} calls), "
               f"kernels and library calls {self.kernels * 1e3:.3f} ms, "
               f"between them {(self.total - self.kernels) * 1e3:.3f} ms",
               "",
               "| # | op | calls | ms | share | elements | kB | GB/s | line |",
               "|---:|---|---:|---:|---:|---:|---:|---:|---|"]
        for i, r in enumerate(rows):
            calls = f"{r.calls:g}"
            elems = "?" if r.elements is None else str(r.elements)
            kb = "?" if r.nbytes is None else f"{r.nbytes / 1e3:.1f}"
            rate = r.gbytes_per_s
            out.append(f"| {i + 1} | {r.label} | {calls} | {r.seconds * 1e3:.3f} | {r.share * 100:.1f}% | "
                       f"{elems} | {kb} | {'-' if rate is None else f'{rate:.1f}'} | {r.location} |")
        if top is not None and len(self.rows) > top:
            rest = self.rows[top:]
            out.append(f"| | ({len(rest)} more) | | {sum(r.seconds for r in rest) * 1e3:.3f} | "
                       f"{sum(r.share for r in rest) * 100:.1f}% | | | | |")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()


class _Recorder:
    """The profiled module's ``_hook``: time and count per site (``sites``: the
    module's, known once it is compiled)."""

    def __init__(self):
        self.clock = time.perf_counter

    def bind(self, sites):
        self.seconds = np.zeros(len(sites))
        self.calls = np.zeros(len(sites), np.int64)
        self.elements = [s[2] for s in sites]  # run-time sized sites: their last call's
        self.nbytes = [s[3] for s in sites]

    def __call__(self, site, start, arrays=None):
        self.seconds[site] += self.clock() - start
        self.calls[site] += 1
        if arrays is not None:
            arrays = [a for a in arrays if isinstance(a, np.ndarray)]
            self.elements[site] = max((a.size for a in arrays), default=0)
            self.nbytes[site] = sum(a.nbytes for a in arrays)

    def reset(self):
        self.seconds[:] = 0
        self.calls[:] = 0


def profile_form(form, arrays, n: int) -> Profile:
    """Profile ``n`` calls of a compiled form (a ``_Form`` of tfc.frontend.function)
    on checked input arrays, after one call that is not counted."""
    conc = form.conc
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"profile: n must be a positive int, not {n!r}")
    be = conc.backend
    if not hasattr(be, "compile_profiled"):
        raise NotImplementedError(f"profile: the {conc.target!r} backend has no profiling variant "
                                  "(only target='cpu', the numpy backend, is profiled)")
    from tfc.frontend.function import GpuVariable, _gpu_variable_error

    if any(type(v) is GpuVariable for v in conc.variables):
        raise _gpu_variable_error(conc)  # as a call raises: a cpu function cannot run on GPU variables
    low = form.lowered
    recorder = _Recorder()
    exe = be.compile_profiled(low.loops, low.plan, conc.name, recorder)
    recorder.bind(exe.profile_sites)
    # copies: the profiled calls leave the Variables (and donated buffers) as they were
    values = [np.array(v._value) for v in conc.variables]
    exe.call(list(arrays) + [Cell(np.array(v)) for v in values])  # warm-up: first-touch pages, caches
    recorder.reset()
    total = 0.0
    for _ in range(n):
        cells = [Cell(np.array(v)) for v in values]
        start = time.perf_counter()
        exe.call(list(arrays) + cells)
        total += time.perf_counter() - start
    rows = []
    for i, (label, location, _, _) in enumerate(exe.profile_sites):
        if recorder.calls[i] == 0:
            continue
        rows.append(ProfileRow(label, location, float(recorder.seconds[i]) / n, float(recorder.calls[i]) / n,
                               recorder.elements[i], recorder.nbytes[i]))
    per_call = total / n
    for r in rows:
        r.share = r.seconds / per_call if per_call else 0.0
    rows.sort(key=lambda r: -r.seconds)
    return Profile(conc.name, n, per_call, rows)


__all__ = ["Profile", "ProfileRow", "profile_form"]
