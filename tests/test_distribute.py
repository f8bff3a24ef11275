"""tfc.distribute: the collective ops and the gradient averaging in a world of
size 1 (in this process), and 2 ranks under ``tfc run -n 2`` (mpirun in a
subprocess with a timeout): values, gradients, compiled code, N ranks on
shards == one process on the global batch, identical start, checkpoints,
per-rank random streams, faults (a rank that raises, dies, leaves or stalls)
and mismatched operands.

The stated bound of "N ranks == one process" (tests/distribute_worker.py
``train``): the averaged gradients and the parameters after 5 SGD steps agree
to rtol 1e-12 in float64 and 2e-5 in float32: the two sum the batch in a
different order (two shard means averaged against one mean), a few ulps a step.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import tfc
import tfc.distribute as dist
from tfc.core.world import DistributedError, World
from tfc.distribute import launch

from helpers import check_grad

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "tests" / "distribute_worker.py"
LAUNCH_TIMEOUT = 120  # seconds for one 2-rank job on a loaded 2-core machine


def _rng(seed=0):
    return np.random.default_rng(seed)


# -- a world of size 1 ------------------------------------------------------------------------

def test_no_launcher_is_a_world_of_one_without_mpi():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI", "PMIX_", "MPI_"))}
    code = ("import sys, numpy as np, tfc, tfc.distribute as d; d.init(); "
            "x = tfc.constant(np.arange(3.0)); assert np.array_equal(d.all_reduce(x).numpy(), x.numpy()); "
            "print(d.rank(), d.size(), d.local_rank(), 'mpi4py' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "1", "0", "False"]


@pytest.mark.parametrize("call", [
    lambda x: dist.all_reduce(x), lambda x: dist.all_reduce(x, "mean"), lambda x: dist.all_reduce(x, "max"),
    lambda x: dist.all_reduce(x, "min"), lambda x: dist.broadcast(x, 0), lambda x: dist.all_gather(x),
    lambda x: dist.reduce_scatter(x), lambda x: dist.reduce_to_root(x, 0)])
def test_collectives_of_one_rank_are_the_identity(call):
    x = _rng().normal(size=(4, 3))
    out = call(tfc.constant(x))
    assert out.dtype == tfc.float64 and np.array_equal(out.numpy(), x)
    check_grad(call, x)  # finite differences in float64
    assert np.array_equal(dist.all_reduce(tfc.constant(2.5)).numpy(), np.float64(2.5))  # 0-d


def test_collective_errors():
    x = tfc.constant(np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match="all_reduce: op must be one of sum, mean, max, min, got 'prod'"):
        dist.all_reduce(x, "prod")
    with pytest.raises(TypeError, match="op='mean' needs a floating-point tensor, got int32"):
        dist.all_reduce(tfc.constant([1, 2]), "mean")
    with pytest.raises(ValueError, match="broadcast: root 1 is not a rank of a world of size 1"):
        dist.broadcast(x, root=1)
    with pytest.raises(ValueError, match="all_gather: needs a tensor of rank >= 1"):
        dist.all_gather(tfc.constant(1.0))
    from tfc.core.registry import REGISTRY

    with pytest.raises(ValueError, match="made for a world of 2 ranks, running in one of 1"):
        REGISTRY["all_reduce"].kernel(np.ones(2), reduction="sum", ranks=2)


def test_bad_arguments(monkeypatch):
    from tfc.core import world

    for raw, message in (("soon", "must be a number of seconds"), ("-1", "must be positive")):
        monkeypatch.setenv("TFC_DIST_TIMEOUT", raw)
        with pytest.raises(ValueError, match=f"TFC_DIST_TIMEOUT {message}"):
            world.timeout()
    monkeypatch.setenv("TFC_DIST_TIMEOUT", "2.5")
    assert world.timeout() == 2.5
    with pytest.raises(TypeError, match="broadcast_variables: item 1 is a Tensor, not a tfc.Variable"):
        dist.broadcast_variables([tfc.Variable(1.0), tfc.constant(1.0)])
    with pytest.raises(TypeError, match="wraps a tfc.GradientTape"):
        dist.DistributedGradientTape(object())
    with pytest.raises(ValueError, match="bucket_bytes must be a positive int"):
        dist.DistributedGradientTape(tfc.GradientTape(), bucket_bytes=0)


def test_gpu_tensors_name_nccl(cuda_driver):
    x = tfc.constant(np.ones(4, np.float32)).gpu()
    with pytest.raises(NotImplementedError, match="NCCL"):
        dist.all_reduce(x)
    with tfc.GradientTape() as tape:
        tape.watch(x)
        loss = tfc.reduce_sum(x * x)
    with pytest.raises(NotImplementedError, match="NCCL"):
        dist.DistributedGradientTape(tape).gradient(loss, [x])


def test_compiling_a_collective_for_cuda_names_it():
    f = tfc.function(lambda x: dist.all_reduce(x * 2.0, "mean"), input_signature=[tfc.TensorSpec((4,))],
                     autograph=False)
    with pytest.raises(NotImplementedError, match="target cuda: .*all_reduce"):
        tfc.compile(f, target="cuda").ir("gpu")


def test_compiled_step_holds_the_collectives_and_matches_eager():
    def step(x):
        return dist.all_reduce(x * 2.0, "mean") + dist.all_gather(tfc.exp(x)) - dist.broadcast(x, 0)

    f = tfc.function(step)
    x = tfc.constant(_rng().normal(size=(5, 3)).astype(np.float32))
    assert np.array_equal(f(x).numpy(), step(x).numpy())
    conc = f.get_concrete_function(x)
    for stage in ("tensor", "fused", "loops"):
        text = conc.ir(stage)
        assert "all_reduce" in text and "all_gather" in text and "broadcast" in text, stage
    assert 'reduction = "mean"' in conc.ir("tensor") and "ranks = 1" in conc.ir("tensor")
    assert "rt.kernel('all_reduce')" in conc.ir("numpy")  # the generated module's host call


def test_compiled_distributed_tape_reduces_each_gradient_as_soon_as_it_is_final():
    """Traced, the tape's hooks emit each gradient's all_reduce right where
    the sweep finishes it: before the backward pass of the layers below."""
    rng = _rng(3)
    ws = [tfc.Variable(rng.normal(size=(6, 8))), tfc.Variable(rng.normal(size=(8, 8))),
          tfc.Variable(rng.normal(size=(8, 2)))]

    def step(x):
        with tfc.GradientTape() as tape:
            h = x
            for w in ws:
                h = tfc.tanh(tfc.matmul(h, w))
            loss = tfc.reduce_sum(h * h)
        return dist.DistributedGradientTape(tape).gradient(loss, ws)

    f = tfc.function(step)
    x = tfc.constant(rng.normal(size=(4, 6)))
    for got, want in zip(f(x), step(x)):
        assert np.array_equal(got.numpy(), want.numpy())
    for stage in ("tensor-raw", "tensor"):
        ops = [line.split("=", 1)[1].split()[0] for line in f.get_concrete_function(x).ir(stage).splitlines()
               if "= tfc." in line and ("tfc.matmul" in line or "tfc.all_reduce" in line)]
        # forward: 3 matmuls; backward per layer (last first): its matmuls, then its all_reduce
        assert ops.count("tfc.all_reduce") == 3, ops
        first = ops.index("tfc.all_reduce")
        assert first < len(ops) - 3 and ops[-1] == "tfc.all_reduce", (stage, ops)


def test_compiled_collectives_move_up_to_their_inputs():
    """tfc-schedule-collectives (in the default pipeline): a loss averaged at
    the end of a step is all-reduced as soon as it exists; same values."""
    def step(x, w):
        loss = tfc.reduce_sum(tfc.exp(x))
        rest = tfc.tanh(tfc.matmul(x, w))
        return dist.all_reduce(loss, "mean"), rest

    f = tfc.function(step)
    x, w = tfc.constant(_rng(4).normal(size=(3, 4))), tfc.constant(_rng(5).normal(size=(4, 2)))
    for got, want in zip(f(x, w), step(x, w)):
        assert np.array_equal(got.numpy(), want.numpy())
    conc = f.get_concrete_function(x, w)
    for stage, after in (("tensor-raw", "tfc.tanh"), ("tensor", "tfc.reduce_sum")):
        ops = [line.split("=", 1)[1].split()[0] for line in conc.ir(stage).splitlines() if "= tfc." in line]
        assert ops[ops.index("tfc.all_reduce") - 1] == after, (stage, ops)


def _mlp(dtype=np.float64, seed=0):
    rng = _rng(seed)
    return [tfc.Variable(rng.normal(size=(6, 8)).astype(dtype)), tfc.Variable(np.zeros(8, dtype)),
            tfc.Variable(rng.normal(size=(8, 2)).astype(dtype)), tfc.Variable(np.zeros(2, dtype))]


def _loss(params, x):
    w1, b1, w2, b2 = params
    h = tfc.tanh(tfc.matmul(x, w1) + b1)
    return tfc.reduce_mean(tfc.square(tfc.matmul(h, w2) + b2))


@pytest.mark.parametrize("bucket_bytes", [dist.DEFAULT_BUCKET_BYTES, 64, 1])
def test_distributed_tape_of_one_rank_equals_the_tape(bucket_bytes):
    params = _mlp()
    x = tfc.constant(_rng(1).normal(size=(10, 6)))
    extra = tfc.constant(np.ones(3))
    unused = tfc.Variable(np.ones(2))
    with tfc.GradientTape(persistent=True) as tape:
        tape.watch(extra)
        loss = _loss(params, x) + tfc.reduce_sum(extra * extra)
    want = tape.gradient(loss, params + [extra, unused])
    dtape = dist.DistributedGradientTape(tape, bucket_bytes=bucket_bytes)
    for _ in range(2):  # a persistent tape answers again (its entries untouched)
        got = dtape.gradient(loss, params + [extra, unused])
        assert got[-1] is None
        for g, w in zip(got[:-1], want[:-1]):
            assert np.array_equal(g.numpy(), w.numpy())
    zero = dtape.gradient(loss, {"u": unused}, unconnected_gradients="zero")
    assert np.array_equal(zero["u"].numpy(), np.zeros(2))


def test_buckets_start_during_the_backward_pass(monkeypatch):
    """With one variable a bucket, the last layer's bucket is all-reduced
    before the backward pass reaches the layers below it."""
    events = []
    started = World.iallreduce_sum
    monkeypatch.setattr(World, "iallreduce_sum", lambda self, s, r: (events.append("start"), started(self, s, r))[1])

    @tfc.custom_gradient
    def middle(h):
        def grad(g):
            events.append("middle backward")
            return g * 3.0
        return h * 3.0, grad

    w1, w2 = tfc.Variable(np.ones((3, 4))), tfc.Variable(np.ones((4, 2)))
    with tfc.GradientTape() as tape:
        loss = tfc.reduce_sum(tfc.matmul(middle(tfc.tanh(tfc.matmul(tfc.constant(np.ones((2, 3))), w1))), w2))
    dist.DistributedGradientTape(tape, bucket_bytes=1).gradient(loss, [w1, w2])
    assert events == ["start", "middle backward", "start"]  # w2's bucket, the layer below, then w1's


def test_distributed_optimizer_of_one_rank_equals_the_optimizer():
    x = tfc.constant(_rng(2).normal(size=(10, 6)))
    a, b = _mlp(), _mlp()
    plain, wrapped = tfc.optimizers.Adam(0.01), dist.DistributedOptimizer(tfc.optimizers.Adam(0.01))
    for _ in range(3):
        plain.minimize(lambda: _loss(a, x), a)
        wrapped.minimize(lambda: _loss(b, x), b)
    with tfc.GradientTape() as tape:
        loss = _loss(b, x)
    wrapped.apply_gradients(zip(tape.gradient(loss, b), b))
    with tfc.GradientTape() as tape:
        loss = _loss(a, x)
    plain.apply_gradients(zip(tape.gradient(loss, a), a))
    for p, q in zip(a, b):
        assert np.array_equal(p.numpy(), q.numpy())
    assert int(wrapped.iterations.numpy()) == 4


def test_one_rank_seed_is_the_plain_seed():
    dist.set_seed(11)
    u = tfc.random.uniform((5,)).numpy()
    tfc.random.set_seed(11)
    assert np.array_equal(tfc.random.uniform((5,)).numpy(), u)
    assert dist.rank_seed(11) == 11


def test_run_command_line(tmp_path, capsys):
    script = tmp_path / "s.py"
    script.write_text("print('hi')\n")
    cmd, env = launch.command(4, str(script), ["--x", "1"])
    assert cmd[:3][1:] == ["-n", "4"] and cmd[-3:] == [str(script), "--x", "1"]
    assert ("--allow-run-as-root" in cmd) == (os.geteuid() == 0)
    assert ("--oversubscribe" in cmd) == (4 > os.cpu_count())
    assert env["OMP_NUM_THREADS"] == os.environ.get("OMP_NUM_THREADS", "1")
    assert "--hostfile" in launch.command(2, str(script), [], hostfile="hosts")[0]
    from tfc.cli import main

    for argv, message in ((["run", str(script)], "-n N is required"), (["run", "-n", "0", str(script)], "positive"),
                          (["run", "-n", "2"], "no script given"), (["run", "--bad"], "unknown option")):
        assert main(argv) == 2
        assert message in capsys.readouterr().err
    assert main(["run", "-n", "2", str(tmp_path / "missing.py")]) == 1
    assert "no such script" in capsys.readouterr().err


# -- 2 ranks ------------------------------------------------------------------------------------

def _run(*args, timeout_s=None, budget=LAUNCH_TIMEOUT):
    """``tfc run -n 2`` of the worker (or a script): (exit status, output, seconds)."""
    env = dict(os.environ)
    if timeout_s is not None:
        env["TFC_DIST_TIMEOUT"] = str(timeout_s)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "tfc.cli", "run", "-n", "2", *map(str, args)], env=env, cwd=ROOT,
                         capture_output=True, text=True, errors="replace", timeout=budget)
    return out.returncode, out.stdout + out.stderr, time.perf_counter() - start


def test_two_ranks_collectives_gradients_compiled_and_mismatches():
    rc, out, _ = _run(WORKER, "collectives")
    assert rc == 0, out
    assert "OK collectives rank 0" in out and "OK collectives rank 1" in out


def test_two_ranks_on_shards_equal_one_process(tmp_path):
    rc, out, _ = _run(WORKER, "train", tmp_path)
    assert rc == 0, out
    assert "OK train rank 0" in out and "OK train rank 1" in out


@pytest.mark.parametrize("kind,says", [
    ("raise", ["tfc.distribute: rank 1 of 2 failed with ValueError: boom on purpose",
               "DistributedError: rank 0 of 2: all_reduce stopped: rank 1 failed with ValueError: boom on purpose"]),
    ("die", ["process rank 1", "signal 9"]),
    ("exit", ["process rank 1", "exiting"]),
    ("stall", ["rank 0 of 2: all_reduce got no answer from the other ranks in 3 s"]),
])
def test_a_failing_rank_ends_the_job_naming_it(kind, says):
    rc, out, seconds = _run(WORKER, kind, timeout_s=3)
    assert rc != 0
    assert "passed the collective" not in out
    for s in says:
        assert s in out, out
    assert seconds < 3 + 30  # the timeout, plus starting and ending the job


def test_example_trains_on_two_ranks_like_one_process():
    rc, out, _ = _run(ROOT / "examples" / "mlp_digits_distributed.py", "--epochs", "2", "--verify")
    assert rc == 0, out
    assert "(2 ranks)" in out and "restored on every rank" in out and "max |distributed - one process|" in out
