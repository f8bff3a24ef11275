"""The process group of data-parallel training: which rank this process is, and
MPI collectives on host arrays that never hang and check their operands.

A process started by an MPI launcher (``mpirun``, ``tfc run -n N``: Open MPI
and MPICH set ``OMPI_COMM_WORLD_SIZE`` / ``PMI_SIZE`` / ``PMIX_RANK``) joins
``MPI.COMM_WORLD``, importing mpi4py on first use; any other process is a
world of size 1 and never imports MPI (every collective is then the identity).

Every collective here

- first checks that all ranks call it with the same signature (collective,
  shape, dtype, attributes): one small all-reduce of a 64-bit digest (max of
  it and of its negation: all equal iff both maxima agree); on a mismatch every
  rank gathers the signatures and raises ``DistributedError`` naming each
  rank's, so no rank is left waiting;
- waits with a deadline: the transfer is started non-blocking and polled, and
  a rank that gets no answer within ``TFC_DIST_TIMEOUT`` seconds (default 300)
  raises ``DistributedError`` instead of hanging (a peer that died, exited or
  went down another path).

A rank whose Python code raises (anywhere, once ``install_fault_handler`` ran:
``tfc.distribute.init()`` does it) prints ``rank R of N failed`` with its
traceback, sends every other rank a notice (a point-to-point message on a tag
of its own), and after a second's grace aborts the whole job (``MPI_Abort``):
a rank waiting in a collective sees the notice and raises DistributedError
naming rank R and its error, and the launcher's message names the rank too.
A rank killed by a signal is reported by the launcher (Open MPI: "process
rank R ... exited on signal 9"), which ends the job.
"""
from __future__ import annotations

import os
import sys
import time
import zlib

import numpy as np


class DistributedError(RuntimeError):
    """A collective failed across ranks: operands that differ between ranks,
    another rank failed, or no answer from the other ranks within the
    timeout. The message names this rank and, where known, the others involved."""


FAULT_TAG = 0x7FF0  # point-to-point notices of a failed rank (collectives never use tags)
FAULT_GRACE = 1.0  # seconds a failed rank waits after its notices, before aborting the job
DEFAULT_TIMEOUT = 300.0  # seconds a rank waits in one collective (TFC_DIST_TIMEOUT)
_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS")
_LOCAL_RANK_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK")


def launched() -> bool:
    """Was this process started by an MPI launcher?"""
    return any(v in os.environ for v in _SIZE_VARS) or "PMIX_RANK" in os.environ


def timeout() -> float:
    raw = os.environ.get("TFC_DIST_TIMEOUT")
    if raw is None:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"TFC_DIST_TIMEOUT must be a number of seconds, got {raw!r}") from None
    if not value > 0:
        raise ValueError(f"TFC_DIST_TIMEOUT must be positive, got {raw!r}")
    return value


class World:
    """This process's view of the job: ``rank``, ``size``, ``local_rank`` (the
    rank among the processes on this machine) and ``comm`` (mpi4py's
    COMM_WORLD, None in a world of size 1)."""

    def __init__(self):
        self.comm = None
        self.rank, self.size, self.local_rank = 0, 1, 0
        if not launched():
            return
        try:
            from mpi4py import MPI
        except ImportError as e:  # launched by mpirun, but mpi4py is missing
            raise ImportError("this process was started by an MPI launcher but mpi4py cannot be imported "
                              f"({e}); install it (pip install mpi4py) in the environment every rank runs") from e
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        local = next((os.environ[v] for v in _LOCAL_RANK_VARS if v in os.environ), None)
        if local is None:  # ranks sharing this machine's shared-memory domain
            local = self.comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()
        self.local_rank = int(local)

    # -- waiting with a deadline ------------------------------------------------------

    def wait(self, request, what: str) -> None:
        """Complete ``request`` (an mpi4py request), polling: raise
        DistributedError when the other ranks do not answer within the timeout."""
        if request.Test():
            return
        limit = timeout()
        start = time.perf_counter()
        pause = 0.0
        while not request.Test():
            waited = time.perf_counter() - start
            if waited > limit:
                raise DistributedError(
                    f"rank {self.rank} of {self.size}: {what} got no answer from the other ranks in "
                    f"{limit:g} s (TFC_DIST_TIMEOUT): a rank died, exited or is running other collectives")
            # Open MPI moves a non-blocking collective on only inside MPI calls
            # (each Test runs the next round of its schedule): poll busily, as
            # a blocking MPI call does; sleep only once the wait is long (a
            # slow or dead peer), so a long wait leaves the core to others
            if waited > 0.01:
                self._check_fault_notice(what)
                pause = min(1e-3, pause * 2 or 1e-5)
                time.sleep(pause)

    def _check_fault_notice(self, what: str) -> None:
        """Raise DistributedError naming the rank if a failing rank's notice
        (``notify_failure``) has arrived."""
        status = self.MPI.Status()
        if not self.comm.Iprobe(source=self.MPI.ANY_SOURCE, tag=FAULT_TAG, status=status):
            return
        notice = bytearray(status.Get_count(self.MPI.BYTE))
        self.comm.Recv([notice, self.MPI.BYTE], source=status.Get_source(), tag=FAULT_TAG)
        raise DistributedError(f"rank {self.rank} of {self.size}: {what} stopped: rank {status.Get_source()} "
                               f"failed with {notice.decode(errors='replace')}")

    def notify_failure(self, message: str) -> None:
        """Tell every other rank that this one failed (point-to-point, on a
        tag no collective uses): those waiting in a collective raise
        DistributedError naming this rank instead of waiting for the abort."""
        data = message.encode()[:4096]
        self._notices = [self.comm.Issend(data, dest=r, tag=FAULT_TAG)  # (kept alive until the abort)
                         for r in range(self.size) if r != self.rank]

    def wait_all(self, requests, what: str) -> None:
        for r in requests:
            self.wait(r, what)

    # -- signatures ---------------------------------------------------------------------

    def agree(self, what: str, signature: str) -> bool:
        """Do all ranks pass the same ``signature``? The same answer on every
        rank (one small all-reduce, inside collective ``what``). Where it is
        False, every rank's next collective must be ``signatures`` (the
        others, in check_same or elsewhere, make that one)."""
        if self.comm is None:
            return True
        digest = zlib.crc32(signature.encode()) | (len(signature) << 32)
        both = np.array([digest, -digest], np.int64)
        top = np.empty(2, np.int64)
        self.wait(self.comm.Iallreduce(both, top, op=self.MPI.MAX), what)
        return bool(top[0] == digest and top[1] == -digest)

    def check_same(self, what: str, signature: str) -> None:
        """Raise DistributedError on every rank unless all ranks pass the same
        ``signature`` (a string describing the call) for collective ``what``."""
        if not self.agree(what, signature):
            raise self.mismatch(what, self.signatures(signature))

    def signatures(self, signature: str) -> list:
        """Every rank's ``signature``, in rank order: after ``agree`` said no."""
        return self.comm.allgather(signature)  # (small: after a mismatch only)

    def mismatch(self, what: str, seen) -> DistributedError:
        """The error of collective ``what`` whose ranks passed the signatures ``seen``."""
        detail = "; ".join(f"rank {r}: {s}" for r, s in enumerate(seen))
        return DistributedError(f"rank {self.rank} of {self.size}: {what} called with different operands "
                                f"across ranks ({detail})")

    # -- collectives on host arrays -------------------------------------------------------

    def _checked(self, array, what: str, detail: str = "") -> np.ndarray:
        """``array`` contiguous, once every rank has called collective ``what``
        with the same ``detail`` (its attributes), dtype and shape."""
        array = np.asarray(array, order="C")
        self.check_same(what, f"{what}{detail} {array.dtype}{list(array.shape)}")
        return array

    def allreduce(self, array: np.ndarray, op: str, what: str = "all_reduce") -> np.ndarray:
        """The element-wise ``op`` (sum, max, min) of ``array`` over ranks, a new array."""
        array = self._checked(array, what, f"(op={op})")
        out = np.empty_like(array)
        if self.comm is None:
            np.copyto(out, array)
            return out
        if array.dtype == np.bool_:  # (MPI's MAX and MIN take no booleans: their or and and)
            mpi_op = {"max": self.MPI.LOR, "min": self.MPI.LAND}[op]
        else:
            mpi_op = {"sum": self.MPI.SUM, "max": self.MPI.MAX, "min": self.MPI.MIN}[op]
        self.wait(self.comm.Iallreduce(array, out, op=mpi_op), what)
        return out

    def iallreduce_sum(self, send: np.ndarray, recv: np.ndarray):
        """Start a sum all-reduce of ``send`` into ``recv`` (contiguous, same
        shape and dtype); returns the request (None in a world of size 1,
        where ``recv`` is filled at once). Signatures are the caller's to check."""
        if self.comm is None:
            np.copyto(recv, send)
            return None
        return self.comm.Iallreduce(send, recv, op=self.MPI.SUM)

    def test(self, requests) -> None:
        """Let MPI progress outstanding non-blocking collectives (Open MPI moves
        them forward only inside MPI calls)."""
        for r in requests:
            if r is not None:
                r.Test()

    def broadcast(self, array: np.ndarray, root: int, what: str = "broadcast") -> np.ndarray:
        """``array`` of rank ``root``, on every rank (a new array)."""
        self._check_root(root, what)
        array = self._checked(array, what, f"(root={root})")
        out = array.copy()
        if self.comm is not None:
            self.wait(self.comm.Ibcast(out, root=root), what)
        return out

    def reduce_to_root(self, array: np.ndarray, root: int, what: str = "reduce_to_root") -> np.ndarray:
        """The sum over ranks at ``root``, zeros elsewhere."""
        self._check_root(root, what)
        array = self._checked(array, what, f"(root={root})")
        out = array.copy() if self.comm is None else np.zeros_like(array)
        if self.comm is not None:
            self.wait(self.comm.Ireduce(array, out, op=self.MPI.SUM, root=root), what)
        return out

    def all_gather(self, array: np.ndarray, what: str = "all_gather") -> np.ndarray:
        """Every rank's ``array`` concatenated along axis 0, in rank order."""
        array = self._checked(array, what)
        out = np.empty((self.size * array.shape[0],) + array.shape[1:], array.dtype)
        if self.comm is None:
            np.copyto(out, array)
        else:
            self.wait(self.comm.Iallgather(array, out), what)
        return out

    def reduce_scatter(self, array: np.ndarray, what: str = "reduce_scatter") -> np.ndarray:
        """The sum over ranks of ``array``, split along axis 0 into ``size``
        equal blocks: rank r gets block r."""
        if np.shape(array)[0] % self.size:
            raise ValueError(f"{what}: the first dimension ({np.shape(array)[0]}) must divide among "
                             f"{self.size} ranks")
        array = self._checked(array, what)
        n = array.shape[0] // self.size
        out = np.empty((n,) + array.shape[1:], array.dtype)
        if self.comm is None:
            np.copyto(out, array)
        else:
            self.wait(self.comm.Ireduce_scatter_block(array, out, op=self.MPI.SUM), what)
        return out

    def barrier(self, what: str = "barrier") -> None:
        if self.comm is not None:
            self.wait(self.comm.Ibarrier(), what)

    def _check_root(self, root, what):
        if not 0 <= root < self.size:
            raise ValueError(f"{what}: root {root} is not a rank of this world of size {self.size}")

    def abort(self, code: int = 1) -> None:
        """End the whole job (every rank) now."""
        sys.stderr.flush()
        if self.comm is not None:
            self.comm.Abort(code)
        os._exit(code)


_WORLD: list = []


def world() -> World:
    """The world of this process, made on first use."""
    if not _WORLD:
        _WORLD.append(World())
    return _WORLD[0]


_HOOKED = []


def install_fault_handler() -> None:
    """Make an uncaught exception on any rank end the whole job, naming the
    rank, rather than leave the other ranks waiting in their next collective.
    In a world of size 1 nothing changes."""
    w = world()
    if w.comm is None or _HOOKED:
        return
    previous = sys.excepthook

    def abort_job(kind, value, tb):
        sys.stderr.write(f"tfc.distribute: rank {w.rank} of {w.size} failed with {kind.__name__}: {value}; "
                         "aborting the job\n")
        previous(kind, value, tb)
        if not isinstance(value, DistributedError):  # (a peer's failure: its notice went out already)
            try:
                w.notify_failure(f"{kind.__name__}: {value}")
                time.sleep(FAULT_GRACE)  # the others report it, then the abort ends them all
            except Exception:  # noqa: BLE001 - failing already: the abort below still ends the job
                pass
        w.abort(1)

    sys.excepthook = abort_job
    _HOOKED.append(previous)
