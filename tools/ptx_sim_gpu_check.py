"""Checks the PTX simulator (tfc/backends/cuda/simulator.py) against a real GPU.

Run on a machine with a GPU and CuPy (it needs neither xDSL nor tfc's
package: the simulator and tests/ptx_sim_kernels.py are loaded by path):

    python3 tools/ptx_sim_gpu_check.py [--out DIR] [--ptx-dir DIR]

For each probe (one instruction over arrays of special and random values) and
each hand-written kernel of tests/ptx_sim_kernels.py, the same PTX runs on the
GPU and in the simulator; exact instructions must agree bit for bit (NaN
payloads aside, reported separately), approximate ones are reported as the
largest distance in ulps. ``--ptx-dir`` adds every ``*.ptx`` file there whose
first line is ``// run: <json>`` (kernel, grid, block, inputs spec), for the
printer's kernels generated on a machine with xDSL. ``--sanitize NAME`` runs
one broken kernel (for compute-sanitizer).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


S = _load("ptx_simulator", os.path.join(ROOT, "tfc/backends/cuda/simulator.py"))
K = _load("ptx_sim_kernels", os.path.join(ROOT, "tests/ptx_sim_kernels.py"))

NP = {"f32": np.float32, "f64": np.float64, "s32": np.int32, "u32": np.uint32, "s64": np.int64,
      "u64": np.uint64, "b32": np.uint32, "b64": np.uint64, "b16": np.uint16, "pred": np.uint8}


def probes():
    """(name, body, srcs, dst, kind) with kind 'exact' or 'approx'."""
    P = []
    for t in ("f32", "f64"):
        for op in ("add.rn", "sub.rn", "mul.rn", "div.rn"):
            P.append((f"{op}.{t}", f"{op}.{t} %d, %a0, %a1;", [t, t], t, "exact"))
        P.append((f"fma.rn.{t}", f"fma.rn.{t} %d, %a0, %a1, %a2;", [t, t, t], t, "exact"))
        for op in ("min", "max", "copysign"):
            P.append((f"{op}.{t}", f"{op}.{t} %d, %a0, %a1;", [t, t], t, "exact"))
        for op in ("neg", "abs", "sqrt.rn", "rcp.rn"):
            P.append((f"{op}.{t}", f"{op}.{t} %d, %a0;", [t], t, "exact"))
        for op in ("infinite", "finite", "normal", "subnormal", "number", "notanumber"):
            P.append((f"testp.{op}.{t}", f"testp.{op}.{t} %d, %a0;", [t], "pred", "exact"))
        for c in ("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"):
            P.append((f"setp.{c}.{t}", f"setp.{c}.{t} %d, %a0, %a1;", [t, t], "pred", "exact"))
        for r in ("rni", "rzi", "rmi", "rpi"):
            P.append((f"cvt.{r}.{t}.{t}", f"cvt.{r}.{t}.{t} %d, %a0;", [t], t, "exact"))
        P.append((f"selp.{t}", f"setp.lt.{t} %q, %a0, %a1;\nselp.{t} %d, %a0, %a1, %q;", [t, t], t, "exact"))
    for m in ("min.NaN.f32", "max.NaN.f32"):
        P.append((m, f"{m} %d, %a0, %a1;", ["f32", "f32"], "f32", "exact"))
    for r in ("rni", "rzi", "rmi", "rpi"):
        for it in ("s32", "u32", "s64", "u64"):
            P.append((f"cvt.{r}.{it}.f32", f"cvt.{r}.{it}.f32 %d, %a0;", ["f32"], it, "exact"))
            P.append((f"cvt.{r}.{it}.f64", f"cvt.{r}.{it}.f64 %d, %a0;", ["f64"], it, "exact"))
    for it in ("s32", "u32", "s64", "u64"):
        for ft in ("f32", "f64"):
            P.append((f"cvt.rn.{ft}.{it}", f"cvt.rn.{ft}.{it} %d, %a0;", [it], ft, "exact"))
    P.append(("cvt.rn.f32.f64", "cvt.rn.f32.f64 %d, %a0;", ["f64"], "f32", "exact"))
    P.append(("cvt.f64.f32", "cvt.f64.f32 %d, %a0;", ["f32"], "f64", "exact"))
    P.append(("cvt.rn.f16.f32", "cvt.rn.f16.f32 %d, %a0;", ["f32"], "b16", "exact"))
    P.append(("cvt.rn.f16.f64", "cvt.rn.f16.f64 %d, %a0;", ["f64"], "b16", "exact"))
    P.append(("cvt.f32.f16", "cvt.f32.f16 %d, %a0;", ["b16"], "f32", "exact"))
    P.append(("cvt.u32.u64", "cvt.u32.u64 %d, %a0;", ["u64"], "u32", "exact"))
    P.append(("cvt.s64.s32", "cvt.s64.s32 %d, %a0;", ["s32"], "s64", "exact"))
    for t in ("s32", "u32", "s64", "u64"):
        for op in ("add", "sub", "mul.lo", "mul.hi", "div", "rem", "min", "max"):
            P.append((f"{op}.{t}", f"{op}.{t} %d, %a0, %a1;", [t, t], t, "exact"))
        for c in ("eq", "ne", "lt", "le", "gt", "ge"):
            P.append((f"setp.{c}.{t}", f"setp.{c}.{t} %d, %a0, %a1;", [t, t], "pred", "exact"))
    for t in ("s32", "s64"):
        P.append((f"neg.{t}", f"neg.{t} %d, %a0;", [t], t, "exact"))
        P.append((f"abs.{t}", f"abs.{t} %d, %a0;", [t], t, "exact"))
    P.append(("mad.lo.s32", "mad.lo.s32 %d, %a0, %a1, %a2;", ["s32"] * 3, "s32", "exact"))
    P.append(("mad.lo.s64", "mad.lo.s64 %d, %a0, %a1, %a2;", ["s64"] * 3, "s64", "exact"))
    P.append(("mul.wide.s32", "mul.wide.s32 %d, %a0, %a1;", ["s32", "s32"], "s64", "exact"))
    P.append(("mul.wide.u32", "mul.wide.u32 %d, %a0, %a1;", ["u32", "u32"], "u64", "exact"))
    for t in ("b32", "b64"):
        P.append((f"shl.{t}", f"shl.{t} %d, %a0, %a1;", [t, "u32"], t, "exact"))
        P.append((f"popc.{t}", f"popc.{t} %d, %a0;", [t], "u32", "exact"))
        P.append((f"clz.{t}", f"clz.{t} %d, %a0;", [t], "u32", "exact"))
        P.append((f"brev.{t}", f"brev.{t} %d, %a0;", [t], t, "exact"))
    for t in ("s32", "u32", "s64", "u64"):
        P.append((f"shr.{t}", f"shr.{t} %d, %a0, %a1;", [t, "u32"], t, "exact"))
    for mode in ("up", "down", "bfly", "idx"):
        P.append((f"shfl.sync.{mode}.b32", f"shfl.sync.{mode}.b32 %d, %a0, %a1, %a2, 0xffffffff;",
                  ["b32", "u32", "u32"], "b32", "shfl"))
    for op in ("ex2.approx", "lg2.approx", "sin.approx", "cos.approx", "rsqrt.approx", "rcp.approx",
               "sqrt.approx", "tanh.approx", "div.approx", "div.full"):
        srcs = ["f32", "f32"] if op.startswith("div") else ["f32"]
        ops = "%a0, %a1" if op.startswith("div") else "%a0"
        P.append((f"{op}.f32", f"{op}.f32 %d, {ops};", srcs, "f32", "approx"))
    P.append(("rsqrt.approx.f64", "rsqrt.approx.f64 %d, %a0;", ["f64"], "f64", "approx"))
    return P


def inputs(srcs, kind, name, rng):
    n_min = 4096
    if kind == "shfl":
        n = 32 * 64
        a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        b = rng.integers(0, 40, n).astype(np.uint32)
        c = rng.choice(np.array([0x1F, 0x0, 0x101F, 0x181F, 0x1C1F, 0x1E1F, 0x1F1F, 0x7, 0x1807, 0x31F],
                                np.uint32), n)
        # one value of b and c per warp for half the warps (the usual uniform case)
        b[: n // 2] = np.repeat(b[: n // 2 : 32], 32)
        c[: n // 2] = np.repeat(c[: n // 2 : 32], 32)
        return [a, b, c]
    t0 = srcs[0]
    if kind == "approx":
        if name.startswith(("sin", "cos")):
            x = rng.uniform(-100, 100, n_min).astype(np.float32)
            x[:2000] = rng.uniform(-np.pi, np.pi, 2000)
        elif name.startswith("ex2"):
            x = rng.uniform(-150, 130, n_min).astype(np.float32)
        elif name.startswith("tanh"):
            x = rng.uniform(-10, 10, n_min).astype(np.float32)
        else:
            x = (rng.uniform(0.5, 2, n_min) * 2.0 ** rng.integers(-126, 127, n_min)).astype(np.float32)
        x = x.astype(NP[t0])
        x[:10] = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 1.0, 1e-40, -1e-40, 2.0], NP[t0])
        out = [x]
        if len(srcs) > 1:
            out.append((rng.uniform(0.5, 2, n_min) * 2.0 ** rng.integers(-60, 60, n_min)).astype(np.float32))
        return out
    if t0 in ("f32", "f64"):
        a, b = K.float_inputs(NP[t0], 3000)
        c = np.roll(a, 7)
        arrs = [a, b, c]
    elif t0 == "b16":
        a = rng.integers(0, 2**16, n_min, dtype=np.uint64).astype(np.uint16)
        arrs = [a]
    else:
        dt = NP[t0]
        a, b = K.int_inputs(dt, 3000)
        c = np.roll(a, 5)
        arrs = [a, b, c]
    out = []
    for j, t in enumerate(srcs):
        x = arrs[j] if j < len(arrs) else arrs[0]
        if t != t0:
            x = (np.asarray(x).view(np.uint64 if x.dtype.itemsize == 8 else np.uint32).astype(np.uint64)
                 % 80).astype(NP[t])
        out.append(np.ascontiguousarray(x.astype(NP[t]) if x.dtype != NP[t] else x))
    return out


def run_sim(ptx, name, grid, block, args, shared_bytes=0):
    prog = S.parse(ptx)
    mem = S.Memory()
    arrs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    S.run(prog, name, grid, block, arrs, mem, shared_bytes)
    return arrs


def run_gpu(ptx, name, grid, block, args, shared_bytes=0):
    import cupy as cp
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    mod = cp.RawModule(path=f.name)
    fn = mod.get_function(name)
    dev = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    fn(tuple(grid), tuple(block), tuple(dev), shared_mem=shared_bytes)
    cp.cuda.runtime.deviceSynchronize()
    return [cp.asnumpy(d) if isinstance(a, np.ndarray) else a for a, d in zip(args, dev)]


def _bits(x):
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize])


def _ordered(x):
    """Float bits as integers in the floats' order (sign-magnitude to two's complement)."""
    if x.dtype.itemsize == 4:
        i = _bits(x).astype(np.int64)
        return np.where(i >= 1 << 31, (1 << 31) - i, i)
    i = _bits(x).view(np.int64)
    return np.where(i < 0, -(i & np.int64(2**63 - 1)), i)


def _ulps(a, b):
    ia, ib = _ordered(a), _ordered(b)
    both_nan = np.isnan(a) & np.isnan(b)
    d = np.abs(ia - ib).astype(np.float64)
    d[both_nan] = 0
    d[np.isnan(a) != np.isnan(b)] = np.inf
    return d


def compare(name, kind, sim, gpu, inp):
    if kind == "approx":
        d = _ulps(sim, gpu)
        fin = np.isfinite(d)
        worst = int(np.argmax(np.where(fin, d, -1))) if fin.any() else 0
        sb, gb = _bits(sim[:10]), _bits(gpu[:10])
        specials = [f"{inp[0][i]!r}: sim {int(sb[i]):#x} gpu {int(gb[i]):#x}" for i in range(10) if sb[i] != gb[i]]
        return {"name": name, "kind": kind, "max_ulp": float(d[fin].max()) if fin.any() else None,
                "special_diffs": specials,
                "mean_ulp": float(d[fin].mean()) if fin.any() else None,
                "nan_mismatch": int((~fin).sum()), "n": len(d),
                "worst": [repr(x[worst]) for x in inp] + [repr(sim[worst]), repr(gpu[worst])]}
    eq_bits = _bits(sim) == _bits(gpu)
    if sim.dtype.kind == "f":
        eq_val = eq_bits | (np.isnan(sim) & np.isnan(gpu))
    else:
        eq_val = eq_bits
    bad = np.flatnonzero(~eq_val)
    res = {"name": name, "kind": kind, "n": len(sim), "mismatches": int(len(bad)),
           "nan_payload_diffs": int((~eq_bits & eq_val).sum())}
    if len(bad):
        res["examples"] = [[repr(x[i]) for x in inp] + [repr(sim[i]), repr(gpu[i])] for i in bad[:6]]
    if res["nan_payload_diffs"]:
        i = int(np.flatnonzero(~eq_bits & eq_val)[0])
        res["nan_bits"] = [hex(int(_bits(sim)[i])), hex(int(_bits(gpu)[i]))]
    return res


def check_probes(results, rng):
    for name, body, srcs, dst, kind in probes():
        ptx = K.probe(body, srcs, dst)
        inp = inputs(srcs, kind, name, rng)
        n = len(inp[0])
        out = np.zeros(n, NP[dst])
        grid, block = ((n + 127) // 128, 1, 1), (128, 1, 1)
        args = inp + [out, np.uint32(n)]
        try:
            sim = run_sim(ptx, "probe", grid, block, args)[len(inp)]
        except Exception as e:
            results.append({"name": name, "sim_error": f"{type(e).__name__}: {e}"})
            continue
        try:
            gpu = run_gpu(ptx, "probe", grid, block, args)[len(inp)]
        except Exception as e:
            results.append({"name": name, "gpu_error": f"{type(e).__name__}: {e}"})
            continue
        results.append(compare(name, kind, sim, gpu, inp))


def check_kernels(results, rng):
    cases = []
    for n in (1, 1001, 100_003):
        a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
        cases.append(("fma_f32", K.FMA_F32, ((n + 255) // 256, 1, 1), (256, 1, 1),
                      [a, b, c, np.zeros(n, np.float32), np.uint64(n)], 3))
        cases.append(("fma_f32_v4", K.FMA_F32_V4, ((n + 1023) // 1024, 1, 1), (256, 1, 1),
                      [a, b, c, np.zeros(n, np.float32), np.uint64(n)], 3))
        cases.append(("block_sum_f32", K.BLOCK_SUM_F32, (7, 1, 1), (224, 1, 1),
                      [a, np.zeros(7, np.float32), np.uint64(n)], 1))
    for M, N, KK in ((37, 45, 29), (64, 64, 64), (16, 16, 0)):
        A = rng.standard_normal((M, KK)).astype(np.float32)
        B = rng.standard_normal((KK, N)).astype(np.float32)
        cases.append(("sgemm_tiled16", K.SGEMM_TILED16, ((N + 15) // 16, (M + 15) // 16, 1), (16, 16, 1),
                      [A, B, np.zeros((M, N), np.float32), np.uint32(M), np.uint32(N), np.uint32(KK)], 2))
    for grid, block in (((2, 3, 2), (8, 4, 2)), ((3, 1, 1), (16, 16, 1)), ((1, 2, 3), (5, 3, 7))):
        n = int(np.prod(grid)) * int(np.prod(block))
        cases.append(("specials", K.SPECIALS, grid, block, [np.zeros((n, 8), np.uint32), np.zeros(6, np.uint32)], 0))
    x = rng.standard_normal(3 * 96).astype(np.float32)
    cases.append(("reverse_dynamic", K.REVERSE_DYNAMIC, (3, 1, 1), (96, 1, 1), [x, np.zeros_like(x)], 1, 4 * 96))
    for name, ptx, grid, block, args, oi, *smem in cases:
        sim = run_sim(ptx, name, grid, block, args, *smem)[oi]
        gpu = run_gpu(ptx, name, grid, block, args, *smem)[oi]
        res = compare(f"kernel {name} {grid} {block} {args[oi].shape}", "exact", sim.ravel(), gpu.ravel(),
                      [sim.ravel()])
        results.append(res)


def check_ptx_dir(results, d, rng):
    for fname in sorted(os.listdir(d)):
        if not fname.endswith(".ptx"):
            continue
        ptx = open(os.path.join(d, fname)).read()
        spec = json.loads(ptx.splitlines()[0][len("// run:"):])
        args = []
        for a in spec["args"]:
            if isinstance(a, dict):
                args.append(np.load(os.path.join(d, a["npy"])))
            else:
                args.append(getattr(np, a[0])(a[1]))
        try:
            sim = run_sim(ptx, spec["kernel"], spec["grid"], spec["block"], args)
        except Exception as e:
            results.append({"name": fname, "sim_error": f"{type(e).__name__}: {e}"})
            continue
        gpu = run_gpu(ptx, spec["kernel"], spec["grid"], spec["block"], args)
        for i in spec["outputs"]:
            kind = spec.get("kind", "exact")
            results.append(compare(f"{fname} out{i}", kind, sim[i].ravel(), gpu[i].ravel(), [sim[i].ravel()]))


def sanitize(name):
    """Run one broken kernel once on the GPU (under compute-sanitizer)."""
    rng = np.random.default_rng(1)
    if name == "race":
        M = N = KK = 32
        A = rng.standard_normal((M, KK)).astype(np.float32)
        B = rng.standard_normal((KK, N)).astype(np.float32)
        run_gpu(K.SGEMM_NO_BARRIER, "sgemm_tiled16", (2, 2, 1), (16, 16, 1),
                [A, B, np.zeros((M, N), np.float32), np.uint32(M), np.uint32(N), np.uint32(KK)])
    elif name == "barrier":
        x = rng.standard_normal(100).astype(np.float32)
        run_gpu(K.BLOCK_SUM_BARRIER_IN_BOUNDS, "block_sum_f32", (1, 1, 1), (128, 1, 1),
                [x, np.zeros(1, np.float32), np.uint64(100)])
    elif name == "oob":
        n = 100
        a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
        run_gpu(K.FMA_F32_NO_BOUNDS, "fma_f32", (1, 1, 1), (128, 1, 1),
                [a, b, c, np.zeros(n, np.float32), np.uint64(n)])
    elif name == "misaligned":
        import cupy as cp
        n = 64
        buf = cp.zeros(n + 4, cp.float32)
        mod_path = tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False)
        mod_path.write(K.FMA_F32_V4)
        mod_path.close()
        fn = cp.RawModule(path=mod_path.name).get_function("fma_f32_v4")
        p = buf.data.ptr + 4
        fn((1, 1, 1), (32, 1, 1), (np.uint64(p), np.uint64(p), np.uint64(p), np.uint64(p), np.uint64(n)))
        cp.cuda.runtime.deviceSynchronize()
    print("ran", name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--ptx-dir")
    ap.add_argument("--sanitize")
    args = ap.parse_args()
    if args.sanitize:
        sanitize(args.sanitize)
        return
    rng = np.random.default_rng(0)
    results = []
    check_probes(results, rng)
    check_kernels(results, rng)
    if args.ptx_dir:
        check_ptx_dir(results, args.ptx_dir, rng)
    with open(os.path.join(args.out, "ptx_sim_gpu_check.json"), "w") as f:
        json.dump(results, f, indent=1)
    for r in results:
        if "sim_error" in r or "gpu_error" in r or r.get("mismatches") or r.get("kind") == "approx" \
                or r.get("nan_payload_diffs"):
            print(json.dumps(r)[:600])
    print("checked", len(results), "exact ok:", sum(1 for r in results if r.get("mismatches") == 0))


if __name__ == "__main__":
    main()
