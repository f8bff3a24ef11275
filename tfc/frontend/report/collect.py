"""What the compile report shows, gathered from a compiled function: every pass
(the pipeline run again under the driver's observer hook), the kernels of L3 with
their generated code, the memory plan, the eager peak, the retrace history and
the user's source lines the ops come from. Plain data; tfc/frontend/report/page.py draws it."""
from __future__ import annotations

import ast
import difflib
import linecache
import re
import textwrap
from dataclasses import dataclass, field


@dataclass
class PassStep:
    """One pass as it ran: the IR before and after it, its time, its op counts."""

    stage: str
    name: str
    before: str
    after: str
    seconds: float
    ops_before: int
    ops_after: int

    def diff(self) -> list[str]:
        """The unified diff of the IR, before to after (empty: the pass changed
        nothing). Lines are matched with their SSA numbers left out (``%12``, ``^bb3``):
        a pass that removes one op renumbers every later value, and those lines
        are not its changes; an unchanged line is shown as it reads after. A
        matched line whose values are not the same ones (a use rewired to
        another value, operands swapped) is a change: the numbers of matched
        lines must be one consistent renaming of before's values into after's."""
        a, b = self.before.splitlines(), self.after.splitlines()
        if a == b:
            return []
        matcher = _RenamingMatcher(a, b)
        out = ["--- before", "+++ after"]
        for group in matcher.get_grouped_opcodes(3):
            (_, i1, _, j1, _), (_, _, i2, _, j2) = group[0], group[-1]
            out.append(f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@")
            for tag, i1, i2, j1, j2 in group:
                if tag == "equal":
                    out += [" " + x for x in b[j1:j2]]
                    continue
                out += ["-" + x for x in a[i1:i2]]
                out += ["+" + x for x in b[j1:j2]]
        return out if len(out) > 2 else []


_SSA_NUMBER = re.compile(r"(?<=[%^])(bb)?\d+\b")
_SSA_VALUE = re.compile(r"[%^](?:bb)?\d+\b")


def _unnumbered(line: str) -> str:
    """``line`` with its SSA value and block numbers left out (names kept)."""
    return _SSA_NUMBER.sub("#", line)


class _RenamingMatcher(difflib.SequenceMatcher):
    """Lines matched by their text without SSA numbers, then each matched pair
    kept only where its numbers agree with one renaming (a bijection) of
    before's values into after's, built in text order from the matched lines
    themselves; a pair that contradicts it is a one-line replacement."""

    def __init__(self, before, after):
        super().__init__(None, [_unnumbered(x) for x in before], [_unnumbered(x) for x in after],
                         autojunk=False)
        self.lines = before, after

    def get_opcodes(self):
        a, b = self.lines
        forward, backward = {}, {}
        codes = []

        def add(tag, i1, i2, j1, j2):
            if codes and codes[-1][0] != "equal" and tag != "equal":  # one change, not several
                _, p1, _, q1, _ = codes.pop()
                tag = "replace" if (i2 > p1 and j2 > q1) else ("delete" if j2 == q1 else "insert")
                i1, j1 = p1, q1
            elif codes and codes[-1][0] == tag == "equal":
                _, i1, _, j1, _ = codes.pop()
            codes.append((tag, i1, i2, j1, j2))

        for tag, i1, i2, j1, j2 in super().get_opcodes():
            if tag != "equal":
                add(tag, i1, i2, j1, j2)
                continue
            for i, j in zip(range(i1, i2), range(j1, j2)):
                same = True
                for old, new in zip(_SSA_VALUE.findall(a[i]), _SSA_VALUE.findall(b[j])):
                    if forward.setdefault(old, new) != new or backward.setdefault(new, old) != old:
                        same = False
                add("equal" if same else "replace", i, i + 1, j, j + 1)
        return codes


class PassRecorder:
    """The driver's observer (``tfc.passes.driver.observing``): snapshots each pass."""

    def __init__(self):
        self.steps: list[PassStep] = []
        self._before = None

    def before(self, stage, name, module) -> None:
        self._before = _snapshot(module)

    def after(self, stage, name, module, seconds) -> None:
        (before, ops_before), (after, ops_after) = self._before, _snapshot(module)
        self.steps.append(PassStep(stage, name, before, after, seconds, ops_before, ops_after))


def _snapshot(module) -> tuple:
    from tfc.dialects.fused import count_ops
    from tfc.dialects.tensor import print_ir

    return print_ir(module), count_ops(module)


@dataclass
class Kernel:
    """A kernel, library call or copy of L3, and what the backend made of it."""

    index: int
    kind: str             # "fused kernel", "library call", "copy"
    label: str            # what it is: "fused kernel", "matmul" (the library call), "copy"
    location: str         # the user's file:line, or "<unknown location>"
    elements: int | None  # the largest array it reads or writes (None: known at run time)
    bytes: int | None     # bytes it reads and writes, each array once
    loop: str             # its L3 text
    code: str | None      # the generated numpy lines that run it (None: not matched, or no numpy code)


@dataclass
class ReportData:
    name: str
    signature: str
    target: str
    steps: list
    steps_note: str | None        # why some passes are not shown, or None
    graph_module: object          # L2 (the fused module): what the graph draws
    l1_module: object             # the L1 module it was fused from: the graph before fusion
    library_sites: set            # (callee, location) of L3's library calls
    kernels: list
    plan: object                  # tfc.passes.plan_memory.MemoryPlan
    eager_peak: int | None        # bytes eager execution holds at once at most (None: shapes known at run time)
    program_points: int
    generated: str                # the generated numpy module, or the PTX for target cuda
    generated_kind: str           # "numpy" or "ptx"
    history: list                 # explain() of the tfc.function, oldest first
    trace_count: int
    sources: dict = field(default_factory=dict)  # file -> {line: text} of the lines ops come from


def resolve(obj):
    """(ConcreteFunction, its tfc.function or None) of a compiled function, a
    tfc.function (its latest trace; its input_signature's if never called) or a
    ConcreteFunction."""
    from tfc.frontend.function import ConcreteFunction, Function

    if isinstance(obj, ConcreteFunction):
        fn = obj.traced_by() if obj.traced_by is not None else None
        return obj, fn
    if isinstance(obj, Function):
        if obj.trace_count:
            latest = obj._traces[-1].key
            conc = obj._cache.get(latest)
            if conc is not None:
                return conc, obj
        if obj.input_signature is not None:
            return obj.get_concrete_function(), obj
        raise ValueError(f"tfc report: {obj.__name__} has not been traced and has no input_signature: "
                         "call it once, or pass tfc.compile(f, *example_args) instead")
    raise TypeError(f"tfc report: expected a compiled function (tfc.compile, tfc.function or a "
                    f"ConcreteFunction), got {type(obj).__name__}")


def shown_form(conc):
    """The compiled form whose stages ``conc`` shows (``conc.stages``): the generic
    one, or the specialization to ``default_shapes()`` where it has run-time dimensions."""
    form = conc._shown()
    return conc.generic if form.note else form


def record_passes(conc) -> tuple:
    """(steps, note): every pass of ``conc``'s compile, in order, run again under
    the driver's observer: its L1 pass list from the traced module, then from
    ``conc``'s own L1 module the specialization to the shapes its stages show
    (run-time dimensions) and the fused and loops stages. Where the L1 passes
    run again do not give ``conc``'s L1 module (something changed it after
    them, as quantization does), their steps are left out and ``note`` says so."""
    from tfc.dialects.tensor import print_ir
    from tfc.passes.driver import lower, observing, run_passes, specialize
    from tfc.passes.pipeline import DEFAULT_L1

    passes = getattr(conc, "passes", None)
    passes = DEFAULT_L1 if passes is None else tuple(passes)
    form = shown_form(conc)
    recorder = PassRecorder()
    note = None
    with observing(recorder):
        l1 = run_passes(conc.raw_module.clone(), passes, "tensor")
    quantized = getattr(conc, "quantization", None) is not None  # its traced module is the quantized one
    if quantized or print_ir(l1) != print_ir(conc.module):
        recorder.steps.clear()
        note = ("The L1 passes are not shown: this function's L1 module was changed after them (by "
                + ("quantization" if quantized else "a later step")
                + "), so they cannot be run again from its traced module.")
    with observing(recorder):
        if form.shapes is not None:
            specialize(conc.module, form.shapes, passes)
        lower(form.module)
    return recorder.steps, note


def kernels(f3, with_code: bool) -> list:
    """The kernels, library calls and copies of the L3 function ``f3`` in program
    order, each with the profiler's measure of it (the sites of the numpy
    backend's profiling variant, as ``tfc compile --profile`` counts them: the
    largest array, every array's bytes once); ``with_code``: each with the lines
    of its generated numpy code."""
    import tfc.dialects.loops as L
    from tfc.backends import backend
    from tfc.dialects.tensor import loc_str

    kinds = {L.ParallelOp: "fused kernel", L.LibraryOp: "library call", L.CopyOp: "copy"}
    ops = [op for op in f3.walk() if type(op) in kinds]
    sites = _profiled_code(f3)
    # the profiling variant times exactly these ops, in this order (each site's label and location
    # as the emitter writes them for its op)
    numpy_backend = backend("cpu")
    if [site[:2] for site in sites] != [(numpy_backend.site_label(op), loc_str(op)) for op in ops]:
        raise RuntimeError("tfc report: the profiling variant's sites are not the kernels, library calls and "
                           "copies of L3 in program order")
    out = []
    for op, (_, where, elements, nbytes, code) in zip(ops, sites):
        kind = kinds[type(op)]
        label = op.callee.data if kind == "library call" else kind
        out.append(Kernel(len(out), kind, label, where, elements, nbytes, str(op), code if with_code else None))
    return out


def _profiled_code(f3) -> list:
    """[(label, location, elements, bytes, code)] of each site of the numpy
    backend's profiling variant of ``f3`` (every kernel, library call and copy,
    in program order; elements and bytes None where counted at run time): the
    lines that run it, after the definitions (kernel functions, constants,
    library entry points) they use. The profiling variant is the module itself
    with each site timed (``_t0 = _clock()`` before, ``_hook(i, ...)`` after)."""
    from tfc.backends import backend

    source = backend("cpu").profiling_source(f3)
    lines = source.splitlines()
    tree = ast.parse(source)
    sites = next(ast.literal_eval(n.value) for n in tree.body
                 if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "PROFILE_SITES")
    build = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "build")
    defined = {}  # name -> (first line, its lines) of build()'s definitions
    for stmt in build.body:
        names = [stmt.name] if isinstance(stmt, ast.FunctionDef) else \
            [t.id for t in getattr(stmt, "targets", ()) if isinstance(t, ast.Name)]
        for name in names:
            defined[name] = (stmt.lineno, lines[stmt.lineno - 1:stmt.end_lineno])
    for name in ("views", "f"):  # the module's entry points, not a site's
        defined.pop(name, None)
    word = re.compile(r"[A-Za-z_]\w*")
    out = []
    for number, line in enumerate(lines):
        m = re.match(r"(\s*)_hook\((\d+), _t0", line)
        if not m:
            continue
        first = number - 1
        while lines[first] != m.group(1) + "_t0 = _clock()":
            first -= 1
        body = lines[first + 1:number]
        used, todo = {}, [w for text in body for w in word.findall(text)]
        while todo:  # the definitions the site's lines use, and those they use
            w = todo.pop()
            if w in defined and w not in used:
                used[w] = defined[w]
                todo += [x for text in defined[w][1] for x in word.findall(text)]
        head = [text for _, block in sorted(used.values()) for text in block]
        out.append(sites[int(m.group(2))] + (textwrap.dedent("\n".join(head)) + ("\n\n" if head else "")
                    + textwrap.dedent("\n".join(body)),))
    return out


def eager_peak(module) -> int | None:
    """The most bytes of op results eager execution holds at once running the
    traced ``module``: each result made by its op and freed after its last use
    (results returned live to the end; arguments not counted, as in the plan).
    None where a shape is known only at run time."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import TensorType

    import numpy as np

    from tfc.dialects.tensor import dtype_of

    def nbytes(v):
        t = v.type
        if not isinstance(t, TensorType):
            return 0
        shape = t.get_shape()
        if any(d < 0 for d in shape):
            raise _RunTimeShape
        return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype_of(t.element_type).name).itemsize

    def block_peak(block) -> int:
        ops = list(block.ops)
        index = {op: i for i, op in enumerate(ops)}

        def last_use(v) -> int:
            last = index[v.owner]
            for use in v.uses:
                user = use.operation
                while user is not None and user not in index:  # a use inside a nested region
                    user = user.parent_op()
                if user is not None:
                    last = max(last, index[user] if not isinstance(user, func.ReturnOp) else len(ops))
            return last

        frees: dict = {}
        live = peak = 0
        for i, op in enumerate(ops):
            inner = max((block_peak(b) for r in op.regions for b in r.blocks), default=0)
            made = 0
            for r in op.results:
                n = nbytes(r)
                made += n
                frees.setdefault(last_use(r), []).append(n)
            peak = max(peak, live + made + inner)
            live += made - sum(frees.pop(i, []))
        return peak

    (f,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    try:
        return block_peak(f.body.block)
    except _RunTimeShape:
        return None


class _RunTimeShape(Exception):
    pass


def source_lines(modules, context: int = 2) -> dict:
    """file -> {line number: text} of the lines the ops of ``modules`` come from,
    with ``context`` lines around each (files that cannot be read are left out)."""
    from xdsl.dialects.builtin import FileLineColLoc

    wanted: dict = {}
    for m in modules:
        for op in m.walk():
            loc = op.location
            if isinstance(loc, FileLineColLoc):
                wanted.setdefault(loc.filename.data, set()).add(loc.line.data)
    out = {}
    for path, numbers in sorted(wanted.items()):
        lines = linecache.getlines(path)
        if not lines:
            continue
        shown = sorted({n + d for n in numbers for d in range(-context, context + 1) if 1 <= n + d <= len(lines)})
        out[path] = {n: lines[n - 1].rstrip("\n") for n in shown}
    return out


def collect(obj) -> ReportData:
    """Everything the report of ``obj`` (see ``resolve``) shows."""
    from xdsl.dialects import func

    conc, fn = resolve(obj)
    steps, steps_note = record_passes(conc)
    form = shown_form(conc)
    low = form.lowered
    (f3,) = [op for op in low.loops.ops if isinstance(op, func.FuncOp)]
    if conc.target == "cuda":
        generated, kind = conc.ir("ptx"), "ptx"
    else:
        generated, kind = conc.source, "numpy"
    found = kernels(f3, kind == "numpy")
    plan = conc.memory_plan if conc.target != "cuda" else low.plan
    points = max((b.live[1] for b in plan.buffers), default=0) + 1
    history = fn.explain() if fn is not None else []
    return ReportData(
        name=conc.name, signature=", ".join(str(s) for s in conc.input_specs), target=conc.target,
        steps=steps, steps_note=steps_note, graph_module=low.fused, l1_module=form.module,
        library_sites={(k.label, k.location) for k in found if k.kind == "library call"}, kernels=found,
        plan=plan, eager_peak=eager_peak(conc.raw_module), program_points=points,
        generated=generated, generated_kind=kind, history=history,
        trace_count=fn.trace_count if fn is not None else 1,
        sources=source_lines([conc.raw_module, low.fused]))
