"""ptxas as a checker: assemble PTX text for a real architecture and read the
resources it reports (docs/gpu.md's budgets: registers, spills, shared
memory).

``assemble(ptx, "sm_80")`` runs ``ptxas -arch=sm_80 -v -Werror
--warn-on-spills - -o /dev/null`` (the PTX on stdin, no output file) and
returns one ``Resources`` per entry; an error (rc != 0) raises
``PtxasError`` with ptxas's message. ptxas is looked for on PATH, then in
/usr/local/cuda/bin, then through ``cuda.pathfinder`` when importable;
``available()`` says whether one was found (tests skip without it).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from tfc.core.errors import CompileError


class PtxasError(CompileError):
    """ptxas refused the PTX (its message is the error's text)."""


@dataclass(frozen=True)
class Resources:
    """What ptxas -v reports for one entry function."""

    name: str
    registers: int
    shared_bytes: int
    spills: int  # spill stores + spill loads, in bytes
    barriers: int
    stack_bytes: int


def find_ptxas() -> str | None:
    """The ptxas executable: PATH, /usr/local/cuda/bin, cuda.pathfinder."""
    p = shutil.which("ptxas")
    if p:
        return p
    p = "/usr/local/cuda/bin/ptxas"
    if os.access(p, os.X_OK):
        return p
    try:
        from cuda import pathfinder
    except ImportError:
        return None
    try:
        return pathfinder.find_nvidia_binary_utility("ptxas")
    except Exception:  # a pathfinder that finds nothing or fails: no ptxas
        return None


def available() -> bool:
    return find_ptxas() is not None


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_report(text: str) -> dict[str, Resources]:
    """The per-entry resources of ``ptxas -v`` output."""
    out, cur, props = {}, None, (0, 0, 0)
    for line in text.splitlines():
        m = _ENTRY.search(line)
        if m:
            cur, props = m.group(1), (0, 0, 0)
            continue
        m = _PROPS.search(line)
        if m and cur is not None:
            props = tuple(int(x) for x in m.groups())
            continue
        m = _USED.search(line)
        if m and cur is not None:
            b = _BARS.search(line)
            s = _SMEM.search(line)
            out[cur] = Resources(cur, int(m.group(1)), int(s.group(1)) if s else 0, props[1] + props[2],
                                 int(b.group(1)) if b else 0, props[0])
            cur = None
    return out


def assemble(ptx: str, arch: str = "sm_80", timeout: float = 120.0) -> dict[str, Resources]:
    """Assemble ``ptx`` for ``arch`` (``sm_80``, ``sm_90``, ...) with warnings
    (spills included) as errors; the resources of each entry, by name."""
    exe = find_ptxas()
    if exe is None:
        raise PtxasError("ptxas not found (PATH, /usr/local/cuda/bin, cuda.pathfinder)")
    cmd = [exe, f"-arch={arch}", "-v", "-Werror", "--warn-on-spills", "-", "-o", os.devnull]
    proc = subprocess.run(cmd, input=ptx, capture_output=True, text=True, timeout=timeout)
    log = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        lines = ptx.splitlines()

        def context(m):  # ptxas names lines of its input: show them
            k = int(m.group(1))
            return m.group(0) + (f" [{lines[k - 1].strip()}]" if 0 < k <= len(lines) else "")

        raise PtxasError(f"ptxas -arch={arch} failed (rc {proc.returncode}):\n"
                         + re.sub(r"line (\d+)", context, log))
    res = parse_report(log)
    if not res and ".entry" in ptx:
        raise PtxasError(f"ptxas -arch={arch}: no resource report in its output:\n{log}")
    return res
