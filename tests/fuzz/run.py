"""The differential fuzzer: random programs run eagerly (the reference) and in each
compiled variant, compared bitwise (the numpy backend's numerics contract,
``tfc.backends.backend("cpu").numerics``).

    .venv/bin/python -m tests.fuzz.run --programs 2000 --seed 7 [--grad] [--jobs 1] [--out findings.jsonl]

Variants: ``static`` (tfc.function with a static input_signature), ``none`` (the
signature's dimensions None), ``nosig`` (no signature), ``compile`` (tfc.compile)
and ``saveload`` (tfc.save of the compiled form, tfc.load, call; for odd program
indices the compiled form has the None signature). Values, dtypes and
shapes must be equal bit for bit (NaN equal to NaN), gradients too, and a gradient
is None exactly where eager's is. When eager raises, every variant must raise; when
a variant raises and eager does not, that is a finding unless the error names a
documented limit (``DOCUMENTED_LIMITS``).
Each finding is minimized (statements dropped while it persists) and printed.

``--target cuda`` runs the same programs compiled with ``target="cuda"`` (static
and None signatures: ``cuda-static``, ``cuda-none``) on the PTX simulator
(``TFC_CUDA_DRIVER=simulator`` unless set) against eager, within the CUDA
backend's numerics contract (``tfc.backends.backend("cuda").numerics``). A
program the CUDA backend raises NotImplementedError for is counted (by message)
and skipped, not compared. A difference beyond the contract in a program with a
discontinuous op (floor, round, sign, a comparison, a branch, an arg-reduction, a
cast to integers), which can turn a rounding difference into any other value, is
its own class, ``cuda-discontinuous``, reported only.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import importlib.util
import itertools
import json
import os
import re
import shutil
import signal
import sys
import tempfile

import numpy as np

from tests.fuzz.programs import Program, generate

VARIANTS = ("static", "none", "nosig", "compile", "saveload")
CUDA_VARIANTS = ("cuda-static", "cuda-none")

# Errors that name a limit the docs state (docs/user-guide.md): a variant failing
# with one of these (a NotImplementedError, or the verifier's ValueError for the
# same limit) is not a finding.
DOCUMENTED_LIMITS = (
    r"a for loop over tfc\.range with float values and a tensor bound is not supported",
    r"squeeze: axis=None on shape .* depends on sizes known only at run time",
    r"returns and also uses to compute its other results is not implemented in compiled code",
    r"may return unchanged from before it through a nested branch or loop, or from another loop variable",
    r"the gradient of compiled code containing the stateful op \w+ is not implemented",
    r"einsum .*: merging or splitting dimensions where more than one is known only at run time",  # docs/ops.md
    # TensorFlow's rule: a known dimension (1, broadcast against a None one) turns unknown
    r"a loop variable keeps its shape unless it is declared varying",
)

_CONTROL_FLOW = re.compile(r"^\s*(if|while|for) |tfc\.cond\(|tfc\.while_loop\(", re.M)
TIME_LIMIT_S = 60  # for one program in one variant: far more than any takes

_counter = itertools.count()


class Hang(Exception):
    """A variant ran past TIME_LIMIT_S."""


@contextlib.contextmanager
def _time_limit(seconds):
    def expire(signum, frame):
        raise Hang(f"ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _import(source: str, workdir: str, name: str):
    """The program's module, from a real file (so inspect.getsource works)."""
    path = os.path.join(workdir, f"{name}_{os.getpid()}_{next(_counter)}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _specs(tfc, p: Program, none: bool):
    return [tfc.TensorSpec(tuple(None if (none and nd) else d for d, nd in zip(s, dims)), getattr(tfc, str(v.dtype)))
            for s, dims, v in zip(p.shapes, p.none_dims, p.values)]


def _flatten(result):
    """The result as a list of numpy arrays or None (anything else is kept as is)."""
    items = result if isinstance(result, (tuple, list)) else (result,)
    out = []
    for r in items:
        if r is None:
            out.append(None)
        elif hasattr(r, "numpy"):
            out.append(np.asarray(r.numpy()))
        else:
            out.append(r)
    return out


def run_variant(tfc, prog_fn, p: Program, variant: str, workdir: str):
    """``prog_fn``'s result in ``variant`` (eager: the function itself)."""
    args = [tfc.constant(v) for v in p.values]
    if variant == "eager":
        return _flatten(prog_fn(*args))
    if variant == "static":
        return _flatten(tfc.function(prog_fn, input_signature=_specs(tfc, p, False))(*args))
    if variant == "none":
        return _flatten(tfc.function(prog_fn, input_signature=_specs(tfc, p, True))(*args))
    if variant == "nosig":
        return _flatten(tfc.function(prog_fn)(*args))
    if variant == "compile":
        return _flatten(tfc.compile(tfc.function(prog_fn), *_specs(tfc, p, False))(*args))
    if variant in ("cuda-static", "cuda-none"):
        specs = _specs(tfc, p, variant == "cuda-none")
        return _flatten(tfc.function(prog_fn, input_signature=specs, target="cuda")(*args))
    if variant == "saveload":  # exported with None dimensions for every other program
        c = tfc.compile(tfc.function(prog_fn), *_specs(tfc, p, p.index % 2 == 1))
        path = tfc.save(c, os.path.join(workdir, f"artifact_{os.getpid()}_{next(_counter)}"))
        try:
            return _flatten(tfc.load(path)(*args))
        finally:
            shutil.rmtree(path, ignore_errors=True)
    raise ValueError(f"unknown variant {variant!r}")


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


def _user_lines(e: BaseException) -> set:
    """The lines of the program's file that an error's message and notes name."""
    text = "\n".join([str(e), *getattr(e, "__notes__", [])])
    return {int(n) for n in re.findall(r"prog_\d+_\d+_\d+_\d+\.py:(\d+)", text)}


def _rounding(w, g, second_order=False) -> bool:
    """Whether ``g`` differs from ``w`` only as sums added in another order do: the
    documented exception for gradients (docs/user-guide.md), its own class. The
    tolerance is 16 ulps of the largest element; for a second order 256 ulps of it or
    of 1 (its rounding grows through chains such as exp(exp(x)), and terms of size 1
    can cancel to about 0)."""
    if w.dtype.kind != "f" or not np.array_equal(np.isfinite(w), np.isfinite(g)):
        return False
    fin = np.isfinite(w)
    if not np.array_equal(w[~fin], g[~fin], equal_nan=True):
        return False
    scale = float(np.max(np.abs(w[fin]), initial=0.0))
    if second_order:
        return bool(np.all(np.abs(w[fin] - g[fin]) <= 256 * np.finfo(w.dtype).eps * max(scale, 1.0)))
    return bool(np.all(np.abs(w[fin] - g[fin]) <= 16 * np.finfo(w.dtype).eps * max(scale, 1e-30)))


TARGET = "cpu"  # the backend whose numerics contract the comparison applies by default

# ops whose result jumps: a difference within the contract before them can become any
# difference after them (the cuda mode's "cuda-discontinuous" class)
_DISCONTINUOUS = re.compile(r"\b(floor|ceil|round|sign|argmax|argmin|one_hot|where|cond|cast|floordiv|mod|"
                            r"argsort|top_k|categorical|quantize)\(|"
                            r"^\s*(if|while) | [<>] | // | % ", re.M)


def target_of(variant: str) -> str:
    """The target a variant compiles for."""
    return "cuda" if variant.startswith("cuda") else "cpu"


def numerics(target: str | None = None):
    """The numerics contract of ``target``'s backend (default ``TARGET``;
    tfc.backends): the one place that says how far a compiled result may be from
    eager's."""
    from tfc.backends import backend

    return backend(target or TARGET).numerics


def documented_limit(got) -> bool:
    """Is ``got`` an error naming a documented limit (DOCUMENTED_LIMITS)?"""
    return isinstance(got, (NotImplementedError, ValueError)) and any(re.search(r, str(got)) for r in DOCUMENTED_LIMITS)


def compare(p: Program, want, got, target: str | None = None) -> tuple | None:
    """(class, detail) for the first difference of ``got`` from eager's ``want``
    under ``target``'s numerics contract."""
    if documented_limit(got):
        return None
    if isinstance(want, BaseException):
        if not isinstance(got, BaseException):
            return "no-error", f"eager raised {_error(want)}; the variant returned a value"
        # the error names the user's line as eager's does (the op is in the message)
        lines, got_lines = _user_lines(want), _user_lines(got)
        if lines and not lines & got_lines:
            return "error-line", (f"eager's error names line {min(lines)}, the variant's "
                                  f"{sorted(got_lines) or 'none'}: {_error(got)}")
        return None
    if isinstance(got, BaseException):
        if isinstance(got, Hang):
            return "hang", _error(got)
        tfc_error = isinstance(got, (ValueError, NotImplementedError)) or type(got).__module__.startswith("tfc")
        return ("compile-fails" if tfc_error else "crash"), _error(got)
    if len(want) != len(got):
        return "wrong-structure", f"eager returned {len(want)} results, the variant {len(got)}"
    nf = p.n_forward
    for k, (w, g) in enumerate(zip(want, got)):
        what = "output" if k < nf else "gradient"
        where = f"{what} {k}"
        if w is None or g is None:
            if w is None and g is None:
                continue
            if w is None:
                zeros = isinstance(g, np.ndarray) and not np.any(g)
                body = "\n".join(line for b in p.blocks for line in b)
                src = f"x{p.grad['sources'][(k - nf) % len(p.grad['sources'])]}" if p.grad else ""
                if zeros and _CONTROL_FLOW.search(body) and re.search(rf"\b{src}\b", body):
                    # eager None perhaps only through the branch taken or a loop that did
                    # not run: compiled code gives zeros there (documented, as TensorFlow)
                    return "none-vs-zeros-cf", f"{where}: eager None, variant {g!r}"
                return ("none-vs-zeros" if zeros else "none-vs-value"), f"{where}: eager None, variant {g!r}"
            return "value-vs-none", f"{where}: eager {w!r}, variant None"
        if not isinstance(w, np.ndarray) or not isinstance(g, np.ndarray):
            if type(w) is not type(g) or w != g:
                return "wrong-value", f"{where}: eager {w!r}, variant {g!r}"
            continue
        if w.dtype != g.dtype or w.shape != g.shape:
            return ("wrong-grad" if what == "gradient" else "wrong-value"), \
                f"{where}: eager {w.dtype}{list(w.shape)}, variant {g.dtype}{list(g.shape)}"
        if numerics(target).difference(w, g) is not None:  # the backend's contract (numpy: bit-identical)
            if (target or TARGET) == "cuda" and _DISCONTINUOUS.search("\n".join(x for b in p.blocks for x in b)):
                cls = "cuda-discontinuous"
            elif w.dtype.kind == "f" and np.any(np.isnan(g) & ~np.isnan(w)):
                cls = "nan-vs-value"
            elif what == "gradient" and _rounding(w, g, bool(p.grad and p.grad["second_order"])):
                cls = "last-bit"
            else:
                cls = "wrong-grad" if what == "gradient" else "wrong-value"
            return cls, f"{where}: eager {w.tolist()}, variant {g.tolist()}"
    return None


def check(tfc, p: Program, variants, workdir: str, skipped: list | None = None):
    """([(variant, class, detail)], whether eager raised) for program ``p``. A
    cuda variant's NotImplementedError is not compared: (variant, message) goes
    to ``skipped``."""
    try:
        mod = _import(p.source(), workdir, p.name)
    except Exception as e:  # a generator bug, not a tfc finding
        return [("import", "generator", _error(e))], True

    def attempt(variant):
        try:
            with _time_limit(TIME_LIMIT_S):
                return run_variant(tfc, mod.prog, p, variant, workdir)
        except Exception as e:  # noqa: BLE001 (every error is compared)
            return e

    want = attempt("eager")
    found = []
    for v in variants:
        got = attempt(v)
        if target_of(v) == "cuda" and isinstance(got, NotImplementedError) and not documented_limit(got):
            if skipped is not None:
                skipped.append((v, str(got).splitlines()[0] if str(got) else ""))
            continue
        d = compare(p, want, got, target_of(v))
        if d is not None:
            found.append((v, *d))
    return found, isinstance(want, BaseException)


def minimize(tfc, p: Program, variant: str, cls: str, workdir: str) -> Program:
    """A smaller program that still shows ``cls`` in ``variant``: statements, results
    and gradient sources dropped, tape options turned off, while the finding persists."""
    def shows(q):
        return any(v == variant and c == cls for v, c, _ in check(tfc, q, [variant], workdir)[0])

    def candidates(q):
        for i in range(len(q.blocks) - 1, -1, -1):
            yield dataclasses.replace(q, blocks=q.blocks[:i] + q.blocks[i + 1:])
        for i in range(len(q.outputs) if len(q.outputs) > 1 else 0):
            yield dataclasses.replace(q, outputs=q.outputs[:i] + q.outputs[i + 1:])
        if q.grad:
            srcs = q.grad["sources"]
            for i in range(len(srcs) if len(srcs) > 1 else 0):
                yield dataclasses.replace(q, grad={**q.grad, "sources": srcs[:i] + srcs[i + 1:]})
            for flag in ("persistent", "second_order", "unconnected"):
                if q.grad[flag]:
                    yield dataclasses.replace(q, grad={**q.grad, flag: False})

    changed = True
    while changed:
        changed = False
        for q in candidates(p):
            if shows(q):
                p, changed = q, True
                break
    return p


def _inputs_repr(p: Program) -> str:
    return "; ".join(f"x{i} = {v.tolist()!r} ({v.dtype})" for i, v in enumerate(p.values))


def _worker(job):
    seed, indices, grad, variants, max_min = job
    import tfc

    np.seterr(all="ignore")
    workdir = tempfile.mkdtemp(prefix="tfc-fuzz-")
    minimized = collections.Counter()
    records = []
    eager_errors = 0
    skipped = []
    try:
        for i in indices:
            p = generate(seed, i, grad)
            found, eager_failed = check(tfc, p, variants, workdir, skipped)
            eager_errors += eager_failed
            for v, cls, detail in found:
                rec = {"seed": seed, "index": i, "grad": grad, "variant": v, "class": cls,
                       "detail": detail, "inputs": _inputs_repr(p)}
                if minimized[cls] < max_min and cls != "generator":
                    minimized[cls] += 1
                    rec["source"] = minimize(tfc, p, v, cls, workdir).source()
                else:
                    rec["source"] = p.source()
                records.append(rec)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return len(indices), eager_errors, records, skipped


def campaign(programs: int, seed: int, grad: bool, jobs: int = 1, variants=VARIANTS, max_min: int = 3,
             skipped: list | None = None):
    """Run ``programs`` programs; returns (number run, how many raised eagerly, finding
    records). ``skipped`` gets (variant, message) for each cuda variant run not
    compared (the CUDA backend's NotImplementedError)."""
    if any(target_of(v) == "cuda" for v in variants):
        os.environ.setdefault("TFC_CUDA_DRIVER", "simulator")  # spawned workers inherit it
    chunks = [list(range(k, programs, jobs)) for k in range(jobs)]
    work = [(seed, c, grad, tuple(variants), max_min) for c in chunks if c]
    if jobs == 1:
        results = [_worker(w) for w in work]
    else:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            results = pool.map(_worker, work)
    if skipped is not None:
        skipped += [s for *_, ss in results for s in ss]
    return (sum(r[0] for r in results), sum(r[1] for r in results), [x for r in results for x in r[2]])


def _skip_reason(message: str) -> str:
    """A NotImplementedError's message without what varies per program (file, line,
    kernel names, shapes), so that skips count by reason."""
    m = re.sub(r"[^\s(]*\.py:\d+:?\s*", "", message)
    m = re.sub(r"@\w+|%\w+|\b\d+\b", "#", m)
    return m[:160]


def summary(n: int, eager_errors: int, records, variants, grad: bool, skipped=()) -> str:
    """The table of programs, variants and findings by class and variant, one (the
    shortest) reproducer per class, and the cuda variants' skips by reason."""
    lines = [f"programs run: {n} ({'with' if grad else 'without'} gradients); variants: "
             f"{', '.join(variants)} ({n * len(variants)} program-variant runs); "
             f"{eager_errors} programs raised eagerly (every variant must raise too)"]
    if any(target_of(v) == "cuda" for v in variants):
        lines.append(f"cuda: {len(skipped)} program-variant runs skipped (NotImplementedError), "
                     f"{n * sum(target_of(v) == 'cuda' for v in variants) - len(skipped)} compared")
        for reason, k in collections.Counter(_skip_reason(m) for _, m in skipped).most_common():
            lines.append(f"  {k:5d}  {reason}")
    by = collections.Counter((r["class"], r["variant"]) for r in records)
    classes = sorted({c for c, _ in by})
    programs_with = len({(r["seed"], r["index"], r["grad"]) for r in records})
    lines.append(f"mismatches: {len(records)} in {programs_with} programs")
    if classes:
        w = max(len(c) for c in classes) + 2
        lines.append("class".ljust(w) + "".join(v.rjust(10) for v in variants) + "total".rjust(8))
        for c in classes:
            row = [by[(c, v)] for v in variants]
            lines.append(c.ljust(w) + "".join(str(x).rjust(10) for x in row) + str(sum(row)).rjust(8))
    for c in classes:
        best = min((r for r in records if r["class"] == c), key=lambda r: len(r["source"]))
        lines += ["", f"== {c}: program {best['seed']}/{best['index']} ({best['variant']}): {best['detail']}",
                  f"   inputs: {best['inputs']}", best["source"]]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--grad", action="store_true", help="programs compute gradients")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--target", choices=("cpu", "cuda"), default="cpu",
                    help="cuda: the cuda variants on the PTX simulator (default variants: "
                         + ", ".join(CUDA_VARIANTS) + ")")
    ap.add_argument("--variants", default=None)
    ap.add_argument("--minimize", type=int, default=3, help="findings minimized per class and job")
    ap.add_argument("--out", help="append one JSON line per finding to this file")
    a = ap.parse_args(argv)
    default = CUDA_VARIANTS if a.target == "cuda" else VARIANTS
    variants = tuple(v for v in (a.variants or ",".join(default)).split(",") if v)
    bad = set(variants) - set(VARIANTS + CUDA_VARIANTS)
    if bad:
        ap.error(f"unknown variants {sorted(bad)}; known: {', '.join(VARIANTS + CUDA_VARIANTS)}")
    os.environ.setdefault("TFC_VERIFY_IR", "1")  # verify the IR after every pass, as the tests do
    cache = None if "TFC_CACHE_DIR" in os.environ else tempfile.mkdtemp(prefix="tfc-fuzz-cache-")
    if cache:  # a fresh compile cache, removed after
        os.environ["TFC_CACHE_DIR"] = cache
    try:
        skipped = []
        n, eager_errors, records = campaign(a.programs, a.seed, a.grad, a.jobs, variants, a.minimize, skipped)
    finally:
        if cache:
            shutil.rmtree(cache, ignore_errors=True)
    if a.out:
        with open(a.out, "a") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    print(summary(n, eager_errors, records, variants, a.grad, skipped))
    return 1 if records else 0


if __name__ == "__main__":
    sys.exit(main())
