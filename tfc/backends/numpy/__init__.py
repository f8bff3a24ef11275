"""The numpy backend: L1 module -> (fuse) L2 -> (bufferize, plan, lower) L3 ->
a generated Python module (``emitter.py``), loaded and run with the arena and
scratch of ``runtime.py``; modules are cached on disk (``cache.py``)."""
from __future__ import annotations

import dataclasses
import linecache

import numpy as np

from tfc.backends.numpy import cache as _cache
from tfc.backends.numpy.runtime import Runtime
from tfc.passes.plan_memory import MemoryPlan


class Stages:
    """The L2 and L3 modules of a compile, the L2 -> L3 value map and the plan."""

    def __init__(self, l1_module):
        from xdsl.dialects.builtin import ModuleOp

        from tfc.passes.lower_loops import lower_function
        from tfc.passes.pipeline import FUSED, run_pipeline

        self.fused = run_pipeline(l1_module.clone(), FUSED)
        (f2,) = [op for op in self.fused.ops]
        f3, self.plan, self.value_map = lower_function(f2)
        self.loops = ModuleOp([f3])
        from tfc.passes.pipeline import VERIFY_EACH_PASS

        if VERIFY_EACH_PASS:
            self.loops.verify()

    @property
    def function(self):
        (f,) = list(self.loops.ops)
        return f


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

    def __call__(self, args):
        return list(self.call(args))

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


def compile_module(l1_module, name: str, use_cache: bool = True):
    """(Compiled, Stages or None): from the disk cache when present (no
    compilation), else compiled and stored."""
    key = _cache.key(l1_module) if use_cache else None
    if key is not None:
        hit = _cache.load(key)
        if hit is not None:
            source, consts, plan, scratch, path = hit
            return Compiled(name, source, consts, plan, scratch, path), None
    from tfc.backends.numpy.emitter import emit_function

    st = Stages(l1_module)
    source, consts, scratch = emit_function(st.function)
    path = _cache.store(key, source, consts, st.plan, scratch) if key is not None else None
    return Compiled(name, source, consts, st.plan, scratch, path or _filename(name)), st


def compile_verifying(stages: "Stages", name: str, hook):
    """The module of ``stages`` with a hook after every value that maps back to an
    L2 value (``verify=True``); returns (Compiled, [L2 values by hook index])."""
    from tfc.backends.numpy.emitter import emit_function

    # A buffer reused in place holds several L2 values in turn, and its hook
    # would see only the last: only buffers holding one value are compared
    # (the values written in place are checked through what they feed).
    holders = {}
    for v2, v3 in stages.value_map.items():
        holders.setdefault(v3, []).append(v2)
    inv = {}
    order = []
    for v3, v2s in holders.items():
        if len(v2s) == 1:
            inv[v3] = len(order)
            order.append(v2s[0])
    source, consts, scratch = emit_function(stages.function, hooks=inv)
    return Compiled(name, source, consts, stages.plan, scratch, _filename(name, " (verify)"), hook), order


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
