"""Disk cache of generated modules, keyed by a hash of the optimized L1 IR
(with locations; given by the driver as an opaque text) and of the compiler's own source, so a second process running
the same program loads the module instead of compiling it. Directory:
``$TFC_CACHE_DIR``, default ``~/.cache/tfc``; ``TFC_CACHE_DIR=""`` disables it.
Each entry: ``<key>.py`` (the module), ``<key>.npz`` (its constants) and
``<key>.json`` (the memory plan, and a SHA-256 of the whole entry: a damaged
entry is dropped and recompiled, never run). An entry is Python that a hit
runs, so, as ssh and pip do, the directory is used only if this user owns it
and no one else can write it (tfc creates it 0700); else tfc warns once and
compiles without the cache."""
from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import pathlib
import stat
import tempfile
import warnings

import numpy as np

from tfc.passes.plan_memory import MemoryPlan


def cache_dir():
    """The cache directory, created if missing; None when disabled, when it
    cannot be created (a read-only disk only costs compiles) or when it is
    not private to this user (with a warning, once)."""
    d = os.environ.get("TFC_CACHE_DIR")
    if d == "":
        return None
    path = pathlib.Path.home() / ".cache" / "tfc" if d is None else pathlib.Path(d)
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
    except OSError:
        return None
    why = None
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        why = f"it is owned by uid {st.st_uid}, not by this user (uid {os.getuid()})"
    elif hasattr(os, "getuid") and st.st_mode & 0o022:
        why = f"others can write it (mode {stat.S_IMODE(st.st_mode):04o})"
    if why is None:
        return path
    if str(path) not in _REFUSED:
        _REFUSED.add(str(path))
        warnings.warn(f"tfc: not using the compile cache {path}: {why}; anyone who can write it could run code "
                      "in this process. Compiling without it (make it yours, mode 0700, to use it)",
                      RuntimeWarning, stacklevel=2)
    return None


_REFUSED: set = set()  # directories warned about


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


def key(source_key: str) -> str | None:
    """The entry name of a compile identified by ``source_key`` (the L1 text it
    came from, with locations: ``tfc.passes.driver.source_key``); None when the
    cache is off."""
    if cache_dir() is None:
        return None
    text = source_key
    return hashlib.sha256((compiler_hash() + "\n" + text).encode()).hexdigest()[:32]


def _write(path: pathlib.Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)  # atomic: concurrent processes see whole files only


def _digest(source: bytes, npz: bytes, meta: dict) -> str:
    h = hashlib.sha256(source)
    h.update(hashlib.sha256(npz).digest())
    h.update(json.dumps(meta, sort_keys=True).encode())
    return h.hexdigest()


def store(key: str, source: str, consts, plan: MemoryPlan, scratch: int) -> str | None:
    d = cache_dir()
    if d is None:
        return None
    try:
        npz = b""
        if consts:
            buf = io.BytesIO()
            np.savez(buf, *consts)
            npz = buf.getvalue()
            _write(d / f"{key}.npz", npz)
        meta = {"plan": plan.to_json(), "scratch": scratch, "n_consts": len(consts)}
        meta["sha256"] = _digest(source.encode(), npz, meta)
        _write(d / f"{key}.json", json.dumps(meta).encode())
        _write(d / f"{key}.py", source.encode())  # last: its presence marks a complete entry
    except OSError:
        return None  # a read-only or full disk only costs the next process a compile
    return str(d / f"{key}.py")


def load(key: str):
    """(source, constants, plan, scratch, path) or None. A damaged entry
    (truncated, overwritten, half deleted) is dropped, with a warning, so this
    process recompiles and rewrites it."""
    d = cache_dir()
    if d is None:
        return None
    py = d / f"{key}.py"
    if not py.is_file():
        return None
    try:
        source = py.read_bytes()
        meta = json.loads((d / f"{key}.json").read_bytes())
        digest = meta.pop("sha256")
        npz = (d / f"{key}.npz").read_bytes() if meta["n_consts"] else b""
        if digest != _digest(source, npz, meta):
            raise ValueError("its files do not match their SHA-256")
        consts = []
        if npz:
            with np.load(io.BytesIO(npz), allow_pickle=False) as z:
                consts = [z[f"arr_{i}"] for i in range(meta["n_consts"])]
        plan = MemoryPlan.from_json(meta["plan"])
        return source.decode(), consts, plan, meta["scratch"], str(py)
    except Exception as e:  # whatever is wrong with the entry only costs a compile
        _drop(d, key, e)
        return None


def _drop(d: pathlib.Path, key: str, why: Exception) -> None:
    from tfc.backends.plain_arrays import refusal

    why = refusal(why) or why
    warnings.warn(f"tfc: dropped the damaged compile cache entry {d / key}.py ({why}); recompiling",
                  RuntimeWarning, stacklevel=3)
    for ext in ("py", "json", "npz"):  # .py first: its presence marks an entry
        try:
            (d / f"{key}.{ext}").unlink(missing_ok=True)
        except OSError:
            pass
