"""The compile report (tfc/frontend/report): what the page holds, measured against the
compile it reports; escaping of every user string; the driver's observer hook;
the clear error where Graphviz is missing; tfc compile --report."""
import importlib.util
import io
import json
import os
import re
import shutil
import textwrap

import pytest

import tfc
from tfc.compile_cli import compile_main
from tfc.core.errors import UnavailableError
from tfc.dialects.tensor import print_ir
from tfc.passes.pipeline import DEFAULT_L1, FUSED, LOOPS
from tfc.frontend.report import render, render_many, write_report
from tfc.frontend.report.collect import collect, eager_peak, record_passes

needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's dot is not installed (Debian package graphviz; make sysdeps)")

MODEL = '''
import tfc


@tfc.function(input_signature=[tfc.TensorSpec((4, 3)), tfc.TensorSpec((3, 5))])
def dense(x, w):
    h = tfc.matmul(x, w)  # <script>alert("line")</script>
    y = tfc.relu(h + 1.0) * 2.0
    return tfc.reduce_sum(tfc.exp(y), axis=1)


@tfc.function
def twice(x):
    return tfc.sin(x) * 2.0 + 1.0
'''


def load(tmp_path, source=MODEL, name="report_model"):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def model(tmp_path):
    return load(tmp_path)


def test_passes_recorded_in_pipeline_order_and_reproduce_the_compile(model):
    conc = tfc.compile(model.dense)
    steps, note = record_passes(conc)
    assert note is None
    assert [s.name for s in steps] == list(DEFAULT_L1 + FUSED + LOOPS)
    assert [s.stage for s in steps] == ["tensor"] * len(DEFAULT_L1) + ["fused"] * len(FUSED) + \
        ["loops"] * len(LOOPS)
    # each pass starts from where the previous one ended, within a stage
    for a, b in zip(steps, steps[1:]):
        if a.stage == b.stage and b.name != "tfc-lower-loops":
            assert b.before == a.after
    assert steps[0].before == print_ir(conc.raw_module)
    assert steps[len(DEFAULT_L1) - 1].after == print_ir(conc.module)
    assert steps[-1].after == print_ir(conc.loops_module)  # the rerun is the compile
    fuse = next(s for s in steps if s.name == "tfc-fuse")
    assert (fuse.ops_before, fuse.ops_after) == (9, 3)  # matmul + relu/add/mul/exp/sum into one kernel
    assert any(line.startswith("+") and "tfc.fused" in line for line in fuse.diff())
    assert all(s.seconds >= 0 for s in steps)
    assert next(s for s in steps if s.name == "tfc-simplify").diff() == []
    # renumbered values are not the pass's changes: only the ops fusion replaced are
    changed = [line for line in fuse.diff()[2:] if line[:1] in "+-"]
    assert [line for line in changed if line.startswith("-")] == [
        line for line in ("-" + x for x in fuse.before.splitlines()) if "tfc.constant" in line
        or any(f"tfc.{op} " in line for op in ("add", "relu", "multiply", "exp", "reduce_sum"))]
    assert not any("tfc.matmul" in line for line in changed)


def test_diff_shows_rewired_uses_and_swapped_operands():
    from tfc.frontend.report.collect import PassStep

    # CSE-like: a duplicate removed and its uses rewired; every rewired line is a change
    cse = PassStep("tensor", "cse", "%0 = tfc.add %a, %b\n%1 = tfc.add %a, %b\n%2 = tfc.multiply %0, %1\n"
                   "func.return %2", "%0 = tfc.add %a, %b\n%1 = tfc.multiply %0, %0\nfunc.return %1", 0, 3, 2)
    assert "+%1 = tfc.multiply %0, %0" in cse.diff()
    assert " func.return %1" in cse.diff()  # renumbered only: not a change
    swap = PassStep("tensor", "x", "%0 = f\n%1 = g\n%2 = tfc.subtract %0, %1",
                    "%0 = f\n%1 = g\n%2 = tfc.subtract %1, %0", 0, 3, 3)
    assert swap.diff()[3:] == [" %0 = f", " %1 = g", "-%2 = tfc.subtract %0, %1", "+%2 = tfc.subtract %1, %0"]
    renumbered = PassStep("tensor", "dce", "%0 = f\n%1 = g\n%2 = h %1", "%0 = g\n%1 = h %0", 0, 3, 2)
    assert [x for x in renumbered.diff() if x[:1] in "+-"][2:] == ["-%0 = f"]


def test_quantized_function_shows_the_passes_it_can_replay(tmp_path):
    m = load(tmp_path, '''
        import tfc

        w = tfc.Variable(tfc.random.normal((16, 8), seed=1))

        @tfc.function(input_signature=[tfc.TensorSpec((4, 16))])
        def layer(x):
            return tfc.relu(x @ w)
        ''', "quant_model")
    conc = tfc.compile(m.layer, quantize="int8-weights")
    steps, note = record_passes(conc)
    assert "not shown" in note and "quantization" in note
    assert [s.name for s in steps] == list(FUSED + LOOPS)  # from its own (quantized) L1 module
    assert steps[0].before == print_ir(conc.module)
    assert steps[-1].after == print_ir(conc.loops_module)


def test_observer_hook_changes_nothing_it_observes(model):
    from tfc.passes.driver import lower, observing, run_passes
    from tfc.passes.pipeline import run_pipeline

    conc = model.dense.get_concrete_function()
    plain = print_ir(run_pipeline(conc.raw_module.clone(), DEFAULT_L1))
    seen = []

    class Observer:
        def before(self, stage, name, module):
            seen.append(("before", stage, name))

        def after(self, stage, name, module, seconds):
            seen.append(("after", stage, name))

    timings = []
    with observing(Observer()):
        observed = run_passes(conc.raw_module.clone(), DEFAULT_L1, "tensor", timings=timings)
        low = lower(observed)
    assert print_ir(observed) == plain
    assert [n for n, _ in timings] == list(DEFAULT_L1)
    assert print_ir(low.loops) == print_ir(conc.loops_module)
    assert seen[:2] == [("before", "tensor", "tfc-simplify"), ("after", "tensor", "tfc-simplify")]
    assert seen[-1] == ("after", "loops", "tfc-lower-loops")
    seen.clear()
    run_passes(conc.raw_module.clone(), DEFAULT_L1, "tensor")  # no observer outside the block
    assert seen == []


def test_kernels_elements_bytes_and_code(model):
    d = collect(tfc.compile(model.dense))
    (mm, k0) = d.kernels
    assert (mm.kind, mm.label) == ("library call", "matmul")
    assert (mm.elements, mm.bytes) == (20, (12 + 15 + 20) * 4)
    assert mm.location.endswith("report_model.py:7")
    assert "into0(" in mm.code and "loops.library \"matmul\"" in mm.loop
    assert (k0.kind, k0.elements, k0.bytes) == ("fused kernel", 20, (20 + 4) * 4)
    assert "def kernel0(" in k0.code and "np.exp(" in k0.code and "loops.parallel" in k0.loop
    assert ("matmul", mm.location) in d.library_sites


def test_kernels_of_a_training_step_match_the_profiler(tmp_path):
    """Kernels at the same line, inline and function kernels, library calls: each
    gets its own generated lines, and the profiler's elements and bytes."""
    from tfc.backends.numpy.emitter import emit_function

    m = load(tmp_path, '''
        import tfc

        dense1, dense2 = tfc.layers.Dense(16, activation=tfc.nn.relu), tfc.layers.Dense(4)
        opt = tfc.optimizers.SGD(0.1)

        @tfc.function(input_signature=[tfc.TensorSpec((8, 5)), tfc.TensorSpec((8,), tfc.int32)])
        def step(x, y):
            with tfc.GradientTape() as tape:
                logits = dense2(dense1(x))
                loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            variables = dense1.trainable_variables + dense2.trainable_variables
            opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss
        ''', "step_model")
    conc = tfc.compile(m.step)
    d = collect(conc)
    (f3,) = list(conc.loops_module.ops)
    source, _, _ = emit_function(f3, profile=True)
    namespace = {}
    exec(source.split("def build")[0], namespace)  # PROFILE_SITES
    sites = namespace["PROFILE_SITES"]
    assert len(d.kernels) == len(sites) > 10
    for k, (label, where, elements, nbytes) in zip(d.kernels, sites):
        assert (k.location, k.elements, k.bytes) == (where, elements, nbytes)
        assert k.code is not None and k.code.splitlines()[-1].strip() in source  # its call
    called = [re.findall(r"^(kernel\d+)\(", k.code, re.M) for k in d.kernels if k.kind == "fused kernel"]
    names = [c[0] for c in called if c]
    assert len(names) == len(set(names)) > 3  # each kernel function shown once, with its own op
    for k in d.kernels:
        for name in re.findall(r"^(kernel\d+)\(", k.code, re.M):
            assert f"def {name}(" in k.code  # its definition comes with its call


def test_eager_peak_counts_results_until_their_last_use(tmp_path):
    m = load(tmp_path, '''
        import tfc

        @tfc.function(input_signature=[tfc.TensorSpec((100,))])
        def chain(x):
            a = tfc.exp(x)
            b = a + 1.0
            c = b * a
            return c
        ''', "eager_chain")
    conc = m.chain.get_concrete_function()
    # constant 1.0 (4 B, live to the add) ; a (400 B, to the multiply); b (400 B); c (400 B, returned)
    assert eager_peak(conc.raw_module) == 400 + 400 + 400
    dyn = load(tmp_path, '''
        import tfc

        @tfc.function(input_signature=[tfc.TensorSpec((None,))])
        def f(x):
            return tfc.exp(x) + 1.0
        ''', "eager_dyn")
    assert eager_peak(dyn.f.get_concrete_function().raw_module) is None


@needs_dot
def test_page_holds_every_section(model, tmp_path):
    conc = tfc.compile(model.dense)
    path = write_report(conc, tmp_path / "out.html")
    html = open(path).read()
    assert html.startswith("<!DOCTYPE html>")
    for section in ("summary", "graph", "passes", "memory", "kernels", "generated", "history", "source"):
        assert f'<section id="{section}">' in html
    graph = html[html.index('<section id="graph">'):html.index('<section id="passes">')]
    assert "<svg" in graph and "matmul" in graph and "[library call]" in graph
    assert "fused kernel (reduce sum)" in graph  # the cluster's title
    l1 = graph[graph.index('id="graph-l1"'):]
    assert "<svg" in l1 and "relu" in l1 and "fused kernel" not in l1  # before fusion: the L1 ops
    assert re.search(r'href="#src-0-7"', graph)  # the matmul node links to its source line
    assert 'id="src-0-7"' in html
    assert html.count('class="pass-btn') == len(DEFAULT_L1 + FUSED + LOOPS)
    memory = html[html.index('<section id="memory">'):html.index('<section id="kernels">')]
    plan = conc.memory_plan
    assert memory.count('<rect class="buffer') == len(plan.buffers)
    assert f"planned peak {plan.peak} B" in memory and "eager peak 168 B" in memory
    # no network: nothing fetched from anywhere
    assert not re.search(r'(src|href)="(https?:)?//', html)
    inline = conc._repr_html_()  # Jupyter: the page in a frame, its styles kept to itself
    assert inline.startswith("<iframe") and 'srcdoc="&lt;!DOCTYPE html&gt;' in inline
    assert "<section" not in inline


@needs_dot
def test_user_strings_are_escaped(tmp_path):
    m = load(tmp_path, '''
        import tfc

        @tfc.function(input_signature=[tfc.TensorSpec((3,))])
        def shout(x):
            tfc.print("</script><img src=x onerror=alert(1)>", x)  # <b>bold</b>
            return x * 2.0
        ''', "escape_model")
    html = render(tfc.compile(m.shout))
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert "<img" not in html
    assert html.count("</script>") == 2  # the two script elements' own ends
    snapshots = html[html.index('id="tfc-snapshots">') + len('id="tfc-snapshots">'):]
    snapshots = json.loads(snapshots[:snapshots.index("</script>")])
    assert any("</script><img" in text for text in snapshots["texts"])  # intact once parsed
    assert len(snapshots["steps"]) == len(DEFAULT_L1 + FUSED + LOOPS)
    assert len(snapshots["texts"]) < 2 * len(snapshots["steps"])  # each IR text once


@needs_dot
def test_file_names_and_argument_names_are_escaped(tmp_path):
    hostile = tmp_path / 'dir"<script>x'  # the file's path is shown, and in the graph's tooltips
    hostile.mkdir()
    m = load(hostile, '''
        import tfc

        @tfc.function(input_signature=[tfc.TensorSpec((3,), name='a"<script>alert(2)</script>')])
        def f(x):
            return tfc.matmul(tfc.reshape(x, (1, 3)), tfc.ones((3, 2))) * 2.0
        ''', "hostile")
    html = render_many([('<script>"f"', tfc.compile(m.f)), ("g", tfc.compile(m.f))])
    assert html.count("<script") == 0  # the outer page: the reports sit escaped in srcdoc
    page = render(tfc.compile(m.f))
    assert page.count("<script") == 2 and 'dir&quot;&lt;script&gt;x' in page


@needs_dot
def test_retrace_history_and_a_tfc_function(model):
    model.twice(tfc.ones((3,)))
    model.twice(tfc.ones((4,)))
    html = render(model.twice)  # the latest trace
    history = html[html.index('<section id="history">'):html.index('<section id="source">')]
    assert "argument x changed from float32[3] to float32[4]" in history
    assert "twice(float32[4])" in html
    with pytest.raises(ValueError, match="has not been traced and has no input_signature"):
        render(tfc.function(lambda x: x))
    with pytest.raises(TypeError, match="expected a compiled function"):
        render(42)


@needs_dot
def test_cuda_target_shows_ptx(model):
    html = render(tfc.compile(model.dense.python_function, tfc.TensorSpec((4, 3)), tfc.TensorSpec((3, 5)),
                              target="cuda"))
    assert "whole generated\nptx module" in html and ".entry" in html


@needs_dot
def test_several_functions_on_one_page(model):
    a = tfc.compile(model.dense)
    b = tfc.compile(model.twice, tfc.TensorSpec((3,)))
    html = render_many([("dense", a), ("twice", b)])
    assert html.count("<iframe") == 2 and 'href="#fn-1"' in html
    assert "&lt;!DOCTYPE html&gt;" in html  # each page escaped into its srcdoc


def test_missing_dot_names_the_package(model, tmp_path, monkeypatch):
    monkeypatch.setattr("tfc.frontend.report.graph.shutil.which", lambda name: None)
    out = tmp_path / "r.html"
    with pytest.raises(UnavailableError, match="package `graphviz`"):
        write_report(tfc.compile(model.dense), out)
    assert not out.exists()


@needs_dot
def test_cli_report(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent(MODEL))
    out = tmp_path / "report.html"
    assert compile_main([str(path), "--report", str(out), "--quiet"], out=io.StringIO()) == 0
    html = out.read_text()  # dense only (twice has no signature): its page itself
    assert html.startswith("<!DOCTYPE html>") and "dense(float32[4, 3], float32[3, 5])" in html


def test_cli_report_without_dot(tmp_path, monkeypatch, capsys):
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent(MODEL))
    monkeypatch.setattr("tfc.frontend.report.graph.shutil.which", lambda name: None)
    out = tmp_path / "report.html"
    assert compile_main([str(path), "--report", str(out)], out=io.StringIO()) == 1
    err = capsys.readouterr().err
    assert "tfc compile: error: --report:" in err and "graphviz" in err
    assert os.listdir(tmp_path) == ["m.py"]  # nothing written, not even a temporary file
