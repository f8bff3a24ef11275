"""Disk cache of generated modules, keyed by a hash of the optimized L1 IR
(with locations) and of the compiler's own source, so a second process running
the same program loads the module instead of compiling it. Directory:
``$TFC_CACHE_DIR``, default ``~/.cache/tfc``; ``TFC_CACHE_DIR=""`` disables it.
Each entry: ``<key>.py`` (the module), ``<key>.npz`` (its constants) and
``<key>.json`` (the memory plan)."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import pathlib
import tempfile

import numpy as np

from tfc.passes.plan_memory import MemoryPlan


def cache_dir():
    d = os.environ.get("TFC_CACHE_DIR")
    if d is None:
        return pathlib.Path.home() / ".cache" / "tfc"
    return pathlib.Path(d) if d else None


@functools.lru_cache(maxsize=1)
def compiler_hash() -> str:
    """Hash of the sources that shape generated code: a new compiler never
    loads an old module."""
    root = pathlib.Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    # ops/: the scalar bodies fusion inlines; vectorized.py: constants the emitter folds
    for sub in ("backends/numpy", "backends/vectorized.py", "passes", "dialects", "ops"):
        p = root / sub
        files = sorted(p.glob("*.py")) if p.is_dir() else [p]
        for f in files:
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def key(l1_module) -> str | None:
    if cache_dir() is None:
        return None
    from tfc.dialects.tensor import print_ir

    text = print_ir(l1_module, debuginfo=True)
    return hashlib.sha256((compiler_hash() + "\n" + text).encode()).hexdigest()[:32]


def _write(path: pathlib.Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)  # atomic: concurrent processes see whole files only


def store(key: str, source: str, consts, plan: MemoryPlan, scratch: int) -> str | None:
    d = cache_dir()
    try:
        d.mkdir(parents=True, exist_ok=True)
        if consts:
            import io

            buf = io.BytesIO()
            np.savez(buf, *consts)
            _write(d / f"{key}.npz", buf.getvalue())
        meta = {"plan": plan.to_json(), "scratch": scratch, "n_consts": len(consts)}
        _write(d / f"{key}.json", json.dumps(meta).encode())
        _write(d / f"{key}.py", source.encode())  # last: its presence marks a complete entry
    except OSError:
        return None  # a read-only or full disk only costs the next process a compile
    return str(d / f"{key}.py")


def load(key: str):
    """(source, constants, plan, scratch, path) or None."""
    d = cache_dir()
    py = d / f"{key}.py"
    try:
        source = py.read_text()
        meta = json.loads((d / f"{key}.json").read_text())
        consts = []
        if meta["n_consts"]:
            with np.load(d / f"{key}.npz") as z:
                consts = [z[f"arr_{i}"] for i in range(meta["n_consts"])]
    except (OSError, ValueError, KeyError):
        return None
    return source, consts, MemoryPlan.from_json(meta["plan"]), meta["scratch"], str(py)
