"""The GPU targets of issue 17, side by side in one run (docs/gpu-runtime.md).

Usage: ``PYTHONPATH=. python bench/gpu.py [--quick] [--repeats N] [--only GROUPS]`` on a
machine with an NVIDIA GPU (``make gpu-check`` runs it). Rows:

- device-to-device copy bandwidth (torch ``copy_``, else cupy; and tfc's
  driver, cuMemcpyDtoD): the reference of the bandwidth targets;
- fused GELU (tanh form) on 2^26 float32 (target: 80% of the copy bandwidth),
  sum of 2^26 float32 (70%), softmax over [8192, 1024] (60%): tfc compiled for
  cuda, PyTorch eager and torch.compile;
- float32 matmul 4096^3 against cuBLAS (torch, TF32 off; target: 50%), and
  float16 (tensor cores; the ratio is reported);
- one SGD step of an MLP 784-512-10 at batch 256 and 4096: tfc compiled for
  cuda against PyTorch eager and torch.compile;
- eager ``x + x`` on a [2, 2] GPU tensor, per op (target: within 2x of PyTorch
  eager); and the bare launch of a one-thread kernel through each of tfc's
  drivers (what an eager op costs at least).

Timing: warm-ups, then ``repeats`` batches of calls, each closed by a device
synchronization and timed with perf_counter; the median batch, per call. Each
tfc result is checked against PyTorch's (or numpy's) before it is timed; a row
that tfc cannot run prints the error's text in its cell (never a figure).
``--quick`` uses smaller sizes (and says so in the header): its ratios are not
the targets'.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import traceback
import warnings

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.dirname(_HERE))  # the checkout's tfc, unless PYTHONPATH names one

import tfc  # noqa: E402
from tfc.backends.cuda import driver as D  # noqa: E402
from tfc.core.errors import UnavailableError  # noqa: E402

GELU_C = 0.7978845608


class Row:
    def __init__(self, group, name, seconds=None, work=None, unit="", note="", error=None):
        self.group, self.name, self.seconds, self.work, self.unit = group, name, seconds, work, unit
        self.note, self.error = note, error

    @property
    def rate(self):
        return None if self.seconds is None or self.work is None else self.work / self.seconds


def fmt_time(s):
    if s is None:
        return "-"
    for unit, f in (("s", 1), ("ms", 1e3), ("us", 1e6)):
        if s * f >= 1:
            return f"{s * f:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def explain(e: BaseException) -> str:
    """The cell of a row that could not run: the error's own text."""
    text = " ".join(str(e).split())
    if len(text) > 320:
        text = text[:317] + "..."
    return f"{type(e).__name__}: {text}"


class Timer:
    def __init__(self, repeats, sync):
        self.repeats, self.sync = repeats, sync

    def __call__(self, fn, min_batch_s=0.05, warmup=3):
        """Median seconds per call of ``fn`` (synchronized at each batch's end)."""
        for _ in range(warmup):
            fn()
        self.sync()
        # calls per batch: enough for the batch to last min_batch_s
        t = time.perf_counter()
        fn()
        self.sync()
        one = max(time.perf_counter() - t, 1e-7)
        calls = max(1, min(10000, int(min_batch_s / one)))
        times = []
        for _ in range(self.repeats):
            t = time.perf_counter()
            for _ in range(calls):
                fn()
            self.sync()
            times.append((time.perf_counter() - t) / calls)
        return float(np.median(times))


def close(a, b, rtol, atol):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return False, f"shape {a.shape} != {b.shape}"
    err = np.max(np.abs(a - b) / (atol + rtol * np.abs(b))) if a.size else 0.0
    return bool(err <= 1), f"max err {np.max(np.abs(a - b)) if a.size else 0:.2g}"


# -- the tfc side -------------------------------------------------------------------------------

class TfcGPU:
    """tfc's public GPU API: tensors under tfc.device("gpu:0"), functions
    compiled with target="cuda". ``sync`` waits for the driver's one stream."""

    def __init__(self):
        self.driver = None
        self.error = None
        try:
            self.driver = D.get_driver()
        except UnavailableError as e:
            self.error = e

    def sync(self):
        if self.driver is not None:
            self.driver.synchronize()

    def put(self, a):
        with tfc.device("gpu:0"):
            return tfc.constant(a)

    def compile(self, fn):
        return tfc.function(fn, target="cuda")


def to_host(t):
    """A result as numpy: a GPU tensor is copied with .cpu() (tfc copies nothing implicitly)."""
    return np.asarray(t.cpu() if hasattr(t, "cpu") else t)


def compiled_rows(group, tg, timer, fn, inputs, reference, work, unit, rtol, atol):
    """``fn`` compiled for cuda, called on GPU tensors (the targets' row: data
    stays on the device) and on numpy arrays (each call uploads its arguments
    and downloads its results: the copies are in its time)."""
    f = [None]

    def compiled():
        if f[0] is None:
            f[0] = tg.compile(fn)
        return f[0]

    def on_device():
        c, args = compiled(), [tg.put(a) for a in inputs]
        return lambda: c(*args)

    def on_host():
        c = compiled()
        return lambda: c(*inputs)
    return [tfc_row(group, "tfc cuda (GPU tensors)", tg, timer, on_device, reference, work, unit, rtol, atol),
            tfc_row(group, "tfc cuda (host arrays)", tg, timer, on_host, reference, work, unit, rtol, atol,
                    note="copies in and out included")]


def tfc_row(group, name, tfc_gpu, timer, build, reference, work, unit, rtol=1e-5, atol=1e-6, note=""):
    """Build (compile, place inputs), check against ``reference``, time."""
    try:
        if tfc_gpu.error is not None:
            raise tfc_gpu.error
        run = build()
        out = run()
        ok, err = close(to_host(out), reference, rtol, atol)
        if not ok:
            return Row(group, name, note=f"WRONG RESULT ({err}): not timed")
        return Row(group, name, timer(run), work, unit, note=", ".join(filter(None, [note, f"checked ({err})"])))
    except (NotImplementedError, UnavailableError) as e:
        return Row(group, name, error=explain(e))
    except Exception as e:  # noqa: BLE001 - a failing row must not hide the others
        return Row(group, name, error=explain(e) + " [" + traceback.extract_tb(e.__traceback__)[-1].name + "]")


def peer_row(group, name, timer, fn, work, unit, note=""):
    try:
        return Row(group, name, timer(fn), work, unit, note=note)
    except Exception as e:  # noqa: BLE001
        return Row(group, name, error=explain(e))


# -- the rows ----------------------------------------------------------------------------------

def gelu_tfc(x):
    return 0.5 * x * (1 + tfc.tanh(GELU_C * (x + 0.044715 * x * x * x)))


def gelu_torch(torch, x):
    return 0.5 * x * (1 + torch.tanh(GELU_C * (x + 0.044715 * x * x * x)))


def bandwidth_rows(torch, tg, timer, n, rows):
    group = f"copy d2d, {n} float32"
    nbytes = 4 * n
    if torch is not None:
        a = torch.ones(n, device="cuda")
        b = torch.empty_like(a)
        rows.append(peer_row(group, "torch copy_", timer, lambda: b.copy_(a), 2 * nbytes, "GB/s",
                             "read + write"))
        del a, b
    if tg.driver is not None:
        d = tg.driver
        src, dst = d.alloc(nbytes), d.alloc(nbytes)
        d.memset(src, 0, nbytes)
        rows.append(peer_row(group, f"tfc driver ({d.name}) copy_dtod", timer,
                             lambda: d.copy_dtod(dst, src, nbytes), 2 * nbytes, "GB/s", "read + write"))
        d.free(src)
        d.free(dst)
    else:
        rows.append(Row(group, "tfc driver copy_dtod", error=explain(tg.error)))


def elementwise_rows(torch, tg, timer, n, rows):
    group = f"GELU, {n} float32"
    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    ref = None
    if torch is not None:
        tx = torch.from_numpy(x).cuda()
        ref = gelu_torch(torch, tx).cpu().numpy()
        rows.append(peer_row(group, "torch eager", timer, lambda: gelu_torch(torch, tx), 8 * n, "GB/s"))
        comp = torch.compile(lambda t: gelu_torch(torch, t))
        rows.append(peer_row(group, "torch.compile", timer, lambda: comp(tx), 8 * n, "GB/s"))
    if ref is None:
        ref = (0.5 * x * (1 + np.tanh(GELU_C * (x + 0.044715 * x * x * x)))).astype(np.float32)

    rows.extend(compiled_rows(group, tg, timer, gelu_tfc, [x], ref, 8 * n, "GB/s", 1e-5, 1e-6))

    group = f"sum, {n} float32"
    ref = float(np.sum(x, dtype=np.float64))
    if torch is not None:
        rows.append(peer_row(group, "torch eager", timer, lambda: tx.sum(), 4 * n, "GB/s"))

    rows.extend(compiled_rows(group, tg, timer, lambda t: tfc.reduce_sum(t), [x], np.float32(ref), 4 * n,
                              "GB/s", 1e-4, 1e-2))


def softmax_rows(torch, tg, timer, shape, rows):
    group = f"softmax, {shape[0]}x{shape[1]} float32"
    x = np.random.default_rng(1).standard_normal(shape, dtype=np.float32)
    n = x.size
    e = np.exp(x - x.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    if torch is not None:
        tx = torch.from_numpy(x).cuda()
        rows.append(peer_row(group, "torch eager", timer, lambda: torch.softmax(tx, dim=1), 8 * n, "GB/s"))

    rows.extend(compiled_rows(group, tg, timer, lambda t: tfc.nn.softmax(t, axis=1), [x], ref, 8 * n,
                              "GB/s", 1e-5, 1e-7))


def matmul_rows(torch, tg, timer, n, rows):
    flops = 2.0 * n ** 3
    for dtype in ("float32", "float16"):
        group = f"matmul {n}^3 {dtype}"
        rng = np.random.default_rng(2)
        a = rng.standard_normal((n, n)).astype(dtype)
        b = rng.standard_normal((n, n)).astype(dtype)
        ref = None
        if torch is not None:
            torch.backends.cuda.matmul.allow_tf32 = False
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            ref = (ta @ tb).float().cpu().numpy()
            rows.append(peer_row(group, "torch (cuBLAS)", timer, lambda: ta @ tb, flops, "TFLOP/s",
                                 "TF32 off" if dtype == "float32" else "tensor cores"))
            del ta, tb
        if ref is None:
            ref = a.astype(np.float64) @ b

        tol = (1e-4, 1e-3) if dtype == "float32" else (2e-2, 0.5)
        rows.extend(compiled_rows(group, tg, timer, lambda p, q: tfc.matmul(p, q), [a, b], ref, flops,
                                  "TFLOP/s", *tol))


def mlp_params(rng):
    sizes = (784, 512, 10)
    w1 = (rng.standard_normal((sizes[0], sizes[1])) * np.sqrt(2 / sizes[0])).astype(np.float32)
    w2 = (rng.standard_normal((sizes[1], sizes[2])) * np.sqrt(2 / sizes[1])).astype(np.float32)
    return [w1, np.zeros(sizes[1], np.float32), w2, np.zeros(sizes[2], np.float32)]


def mlp_rows(torch, tg, timer, batch, rows, lr=0.1):
    group = f"MLP step 784-512-10, batch {batch}"
    rng = np.random.default_rng(3)
    x = rng.standard_normal((batch, 784)).astype(np.float32)
    labels = rng.integers(0, 10, batch).astype(np.int32)
    params = mlp_params(rng)
    loss_ref = None
    if torch is not None:
        F = torch.nn.functional
        tx, tl = torch.from_numpy(x).cuda(), torch.from_numpy(labels.astype(np.int64)).cuda()

        def make(compiled):
            ps = [torch.tensor(p, device="cuda", requires_grad=True) for p in params]

            def loss_fn(w1, b1, w2, b2):
                return F.cross_entropy(torch.relu(tx @ w1 + b1) @ w2 + b2, tl)
            # compiled: the loss through torch.compile, whose AOTAutograd compiles the
            # backward too (autograd.grad inside a compiled function breaks the graph)
            lf = torch.compile(loss_fn) if compiled else loss_fn

            def step():
                loss = lf(*ps)
                grads = torch.autograd.grad(loss, ps)
                with torch.no_grad():
                    for p, g in zip(ps, grads):
                        p.sub_(lr * g)
                return loss
            return step
        eager = make(False)
        loss_ref = float(eager().detach())
        rows.append(peer_row(group, "torch eager", timer, make(False), batch, "steps*batch/s"))
        rows.append(peer_row(group, "torch.compile", timer, make(True), batch, "steps*batch/s"))

    def build(on_device):
        def make():
            if on_device:  # GPU data and GPU variables (made in a GPU scope): the step copies nothing
                tx, tl = tg.put(x), tg.put(labels)
                with tfc.device("gpu:0"):
                    variables = [tfc.Variable(p.copy()) for p in params]
            else:  # each call uploads the data and the variables and downloads the new values
                tx, tl = x, labels
                variables = [tfc.Variable(p.copy()) for p in params]

            # the data are arguments: a tensor the function captured would be traced as a constant
            def step(tx, tl):
                w1, b1, w2, b2 = variables
                with tfc.GradientTape() as tape:
                    h = tfc.relu(tfc.matmul(tx, w1) + b1)
                    logits = tfc.matmul(h, w2) + b2
                    loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(tl, logits))
                for v, g in zip(variables, tape.gradient(loss, variables)):
                    v.assign_sub(lr * g)
                return loss
            f = tg.compile(step)
            return lambda: f(tx, tl)
        return make
    if loss_ref is None:
        h = np.maximum(x @ params[0] + params[1], 0)
        z = h @ params[2] + params[3]
        z = z - z.max(axis=1, keepdims=True)
        loss_ref = float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(batch), labels]))
    rows.append(tfc_row(group, "tfc cuda (GPU data and variables)", tg, timer, build(True),
                        np.float32(loss_ref), batch, "steps*batch/s", rtol=1e-4, atol=1e-5))
    rows.append(tfc_row(group, "tfc cuda (host data and variables)", tg, timer, build(False),
                        np.float32(loss_ref), batch, "steps*batch/s", rtol=1e-4, atol=1e-5,
                        note="copies in and out included"))


def eager_rows(torch, tg, timer, rows):
    group = "eager x + x, [2, 2] float32"
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    if torch is not None:
        tx = torch.from_numpy(x).cuda()
        rows.append(peer_row(group, "torch eager", timer, lambda: tx + tx, 1, "ops/s"))

    def build():
        gx = tg.put(x)
        return lambda: gx + gx
    rows.append(tfc_row(group, "tfc eager (gpu:0)", tg, timer, build, x + x, 1, "ops/s"))
    # the floor of an eager op: one launch of a one-thread kernel through each driver
    for kind in ("pycuda", "cuda-bindings"):
        d, why = D.available(kind)
        if d is None:
            rows.append(Row(group, f"bare launch ({kind})", error=why))
            continue
        f = d.function(d.load_module(NOP_PTX), "nop")
        p = d.alloc(4)
        rows.append(peer_row(group, f"bare launch ({kind})", Timer(timer.repeats, d.synchronize),
                             lambda: d.launch(f, (1, 1, 1), (1, 1, 1), (np.uint64(p), np.float32(1))),
                             1, "ops/s", "one-thread kernel, 2 args"))
        d.free(p)


NOP_PTX = """.version 8.0
.target sm_80
.address_size 64
.visible .entry nop(.param .u64 p, .param .f32 v)
{
    .reg .b64 %rd<2>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [p];
    ld.param.f32 %f1, [v];
    cvta.to.global.u64 %rd1, %rd1;
    st.global.f32 [%rd1], %f1;
    ret;
}
"""


# -- the table -----------------------------------------------------------------------------------

TARGETS = {"GELU": (0.80, "copy"), "sum": (0.70, "copy"), "softmax": (0.60, "copy")}


def table(rows, copy_bw):
    """Groups in order; each row's time, rate, and its ratio to the group's first
    peer row (and, for the bandwidth rows, to the copy bandwidth)."""
    lines = []
    w = max(len(r.name) for r in rows) + 2
    scale = {"GB/s": 1e-9, "TFLOP/s": 1e-12, "steps*batch/s": 1, "ops/s": 1}
    groups = []
    for r in rows:
        if r.group not in groups:
            groups.append(r.group)
    for g in groups:
        rs = [r for r in rows if r.group == g]
        base = next((r for r in rs if r.rate is not None and not r.name.startswith("tfc")), None)
        kind = g.split(",")[0].split(" ")[0]
        target = TARGETS.get(kind)
        lines.append(f"\n{g}" + (f"   (target: tfc >= {target[0]:.0%} of the copy bandwidth)" if target else ""))
        for r in rs:
            if r.error is not None:
                lines.append(f"  {r.name:<{w}}{r.error}")
                continue
            if r.seconds is None:
                lines.append(f"  {r.name:<{w}}{r.note}")
                continue
            rate = f"{r.rate * scale.get(r.unit, 1):10.4g} {r.unit}"
            cells = [f"{fmt_time(r.seconds):>10}", rate]
            if base is not None and r is not base:
                cells.append(f"{r.rate / base.rate:6.2f}x {base.name}")
            if r.unit == "GB/s" and copy_bw and not g.startswith("copy"):
                cells.append(f"{r.rate / copy_bw:5.0%} of copy")
            if r.note:
                cells.append(r.note)
            lines.append(f"  {r.name:<{w}}" + "   ".join(cells))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (not the targets' sizes)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--only", help="comma-separated groups: copy, elementwise, softmax, matmul, mlp, eager "
                                   "(copy always runs: the bandwidth reference)")
    args = ap.parse_args(argv)
    q = args.quick
    n = 1 << (22 if q else 26)
    soft = (1024, 1024) if q else (8192, 1024)
    mm = 1024 if q else 4096
    batches = (256, 1024) if q else (256, 4096)

    warnings.filterwarnings("ignore", "TensorFloat32 tensor cores")  # TF32 stays off on purpose
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("torch sees no CUDA device")
    except ImportError as e:
        torch = None
        print(f"peers: torch unavailable ({e}); tfc rows only")
    tg = TfcGPU()
    sync = (torch.cuda.synchronize if torch is not None
            else tg.sync)

    def sync_all():
        sync()
        tg.sync()
    timer = Timer(args.repeats, sync_all)

    print("bench/gpu.py" + (" --quick (smaller sizes: not the targets' sizes)" if q else ""))
    print(f"- python {platform.python_version()}, numpy {np.__version__}, tfc {os.path.dirname(tfc.__file__)}")
    if torch is not None:
        print(f"- torch {torch.__version__}: {torch.cuda.get_device_name(0)}")
    print(f"- tfc driver: {tg.driver!r}" if tg.driver is not None else f"- tfc driver: {tg.error}")
    print(f"- timing: median of {args.repeats} batches, each closed by a device synchronization")

    rows = []
    steps = {
        "copy": [lambda: bandwidth_rows(torch, tg, timer, n, rows)],
        "elementwise": [lambda: elementwise_rows(torch, tg, timer, n, rows)],  # GELU and sum
        "softmax": [lambda: softmax_rows(torch, tg, timer, soft, rows)],
        "matmul": [lambda: matmul_rows(torch, tg, timer, mm, rows)],
        "mlp": [lambda b=b: mlp_rows(torch, tg, timer, b, rows) for b in batches],
        "eager": [lambda: eager_rows(torch, tg, timer, rows)],
    }
    only = args.only.split(",") if args.only else list(steps)
    unknown = [g for g in only if g not in steps]
    if unknown:
        ap.error(f"--only: {', '.join(unknown)} (groups: {', '.join(steps)})")
    if "copy" not in only:
        only.insert(0, "copy")  # the bandwidth rows' reference
    for step in [f for g in only for f in steps[g]]:
        try:
            step()
        except Exception as e:  # noqa: BLE001 - a broken peer must not stop the table
            rows.append(Row("errors", "a step failed", error=explain(e)))
        if torch is not None:
            torch.cuda.empty_cache()
    copy = next((r for r in rows if r.group.startswith("copy") and r.rate is not None), None)
    print(table(rows, copy.rate if copy else None))


if __name__ == "__main__":
    main()
