"""The numpy backend (target "cpu"): an L3 module and its memory plan -> a
generated Python module (``emitter.py``), loaded and run with the arena and
scratch of ``runtime.py``; modules are cached on disk (``cache.py``), keyed by
the L1 text they came from (``tfc.passes.driver.source_key``), so a hit skips
the lowering too. ``NumpyBackend`` is its ``tfc.backends`` interface."""
from __future__ import annotations

import dataclasses
import linecache

import numpy as np

from tfc.backends.numpy import cache as _cache
from tfc.backends.numpy.runtime import Runtime
from tfc.passes.plan_memory import MemoryPlan


def _filename(name: str, what: str = "") -> str:
    """The pseudo file name of a generated module, for tracebacks: the
    function's name with what cannot be in a file name (NUL, newlines) replaced."""
    return "<tfc " + "".join(c if c.isprintable() else "?" for c in name) + what + ">"


class Compiled:
    """A loaded generated module: call with (arrays..., Cells...)."""

    def __init__(self, name: str, source: str, consts, plan: MemoryPlan, scratch: int, filename: str,
                 hook=None):
        self.name = name
        self.source = source
        self.plan = dataclasses.replace(plan, scratch=scratch)
        if filename.startswith("<"):
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        ns: dict = {"__name__": f"tfc_generated_{name}"}
        exec(compile(source, filename, "exec"), ns)
        self.runtime = Runtime(plan.arena_size, scratch)
        self._views, self._fn = ns["build"](list(consts), self.runtime, hook)
        self.needs_errstate = ns.get("NEEDS_ERRSTATE", True)
        self.has_views = ns.get("HAS_VIEWS", True)
        self.profile_sites = ns.get("PROFILE_SITES")  # the profiling variant's sites (compile_profiled)

    def __call__(self, args):
        return list(self.call(args))

    def direct(self):
        """Where a call needs nothing around it (no arena views, no
        np.errstate): the generated function, called as ``f(*arrays, ())``
        (its last argument, the arena views, empty); else None."""
        if self.has_views or self.needs_errstate:
            return None
        return self._fn

    def call(self, args):
        """The generated function's result tuple; scalar code on Python numbers
        needs neither an arena nor np.errstate (a microsecond per call)."""
        if not self.has_views and not self.needs_errstate:
            return self._fn(*args, ())
        rt = self.runtime
        views = rt.acquire(self._views) if self.has_views else ()
        try:
            if self.needs_errstate:
                with np.errstate(all="ignore"):
                    return self._fn(*args, views)
            return self._fn(*args, views)
        finally:
            if self.has_views:
                rt.release(views)


def compile_module(loops, plan: MemoryPlan, name: str, source_key: str | None = None) -> Compiled:
    """The generated module of an L3 module (one function) and its plan; stored
    in the disk cache under ``source_key`` when given."""
    from tfc.backends.numpy.emitter import emit_function

    (f3,) = list(loops.ops)
    key = _cache.key(source_key) if source_key is not None else None
    source, consts, scratch = emit_function(f3)
    path = _cache.store(key, source, consts, plan, scratch) if key is not None else None
    return Compiled(name, source, consts, plan, scratch, path or _filename(name))


def load_cached(source_key: str, name: str) -> Compiled | None:
    """The module compiled before from the L1 text ``source_key``, from the disk
    cache (no lowering, no emission), or None."""
    key = _cache.key(source_key)
    if key is None:
        return None
    hit = _cache.load(key)
    if hit is None:
        return None
    source, consts, plan, scratch, path = hit
    return Compiled(name, source, consts, plan, scratch, path)


def compile_hooked(loops, plan: MemoryPlan, name: str, hooks: dict, hook) -> Compiled:
    """The module of ``loops`` calling ``hook(i, value)`` after each L3 value
    ``v`` with ``hooks[v] == i`` (``verify=True``); never cached."""
    from tfc.backends.numpy.emitter import emit_function

    (f3,) = list(loops.ops)
    source, consts, scratch = emit_function(f3, hooks=hooks)
    return Compiled(name, source, consts, plan, scratch, _filename(name, " (verify)"), hook)


def compile_profiled(loops, plan: MemoryPlan, name: str, record) -> Compiled:
    """The profiling variant of ``loops``'s module: each kernel, library call
    and copy timed, ``record(site, start[, arrays])`` after it (sites in
    ``Compiled.profile_sites``); never cached."""
    from tfc.backends.numpy.emitter import emit_function

    (f3,) = list(loops.ops)
    source, consts, scratch = emit_function(f3, profile=True)
    return Compiled(name, source, consts, plan, scratch, _filename(name, " (profile)"), record)


def run_loops(module, args, name: str | None = None):
    """Run an L3 module's function (``name``, or the only one) with the numpy
    backend on arrays (and Cells for ``!tfc.ref`` arguments): the executor of the
    loops level, for differential tests of the lowering."""
    from xdsl.dialects import func

    from tfc.backends.numpy.emitter import emit_function

    funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    f3 = funcs[name] if name is not None else next(iter(funcs.values()))
    (arena,) = f3.body.block.args[-1].type.get_shape()
    source, consts, scratch = emit_function(f3)
    return Compiled(f3.sym_name.data, source, consts, MemoryPlan(arena_size=arena), scratch,
                    _filename(f3.sym_name.data))(list(args))


class NumpyBackend:
    """Target "cpu": the ``tfc.backends`` interface of the numpy backend."""

    target = "cpu"
    stages = ("numpy",)  # --emit numpy: the generated module

    def __init__(self):
        from tfc.backends import Numerics

        # eager runs the same numpy kernels in the same order: every family exact
        self.numerics = Numerics("bit-identical to eager for every op family (the generated code calls the "
                                 "kernels eager calls, with the same summation order)")

    def prepare(self) -> None:
        """Import what compiling needs (the emitter): a process's one-time cost."""
        import tfc.backends.numpy.emitter  # noqa: F401

    def caching(self) -> bool:
        """Whether compiles are cached now (TFC_CACHE_DIR; cache.py)."""
        return _cache.cache_dir() is not None

    def load(self, source_key: str, name: str):
        return load_cached(source_key, name)

    def compile(self, loops, plan, name: str, source_key: str | None = None):
        return compile_module(loops, plan, name, source_key)

    def compile_hooked(self, loops, plan, name: str, hooks: dict, hook):
        return compile_hooked(loops, plan, name, hooks, hook)

    def compile_profiled(self, loops, plan, name: str, record):
        return compile_profiled(loops, plan, name, record)

    def profiling_source(self, f3) -> str:
        """The source of the profiling variant of the L3 function ``f3`` (what
        compile_profiled loads), for the compile report's per-kernel code."""
        from tfc.backends.numpy.emitter import emit_function

        return emit_function(f3, profile=True)[0]

    def site_label(self, op) -> str:
        """The label the profiling variant gives the kernel, library call or copy
        ``op`` (PROFILE_SITES), so a reader can pair sites with L3 ops."""
        from tfc.backends.numpy.emitter import _profile_label

        return _profile_label(op)

    def run_loops(self, module, args, name: str | None = None):
        return run_loops(module, args, name)

    def text(self, executable, stage: str) -> str:
        if stage != "numpy":
            raise ValueError(f"the numpy backend emits {', '.join(self.stages)}, not {stage!r}")
        return executable.source
