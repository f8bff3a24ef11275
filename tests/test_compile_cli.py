"""`tfc compile MODEL.py`: summary, stages, export, and a clear error (never a
traceback) for every way the input can be wrong."""
import io
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tfc
from tfc.compile_cli import Progress, compile_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODEL = '''
import tfc

w = tfc.Variable([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]], name="w")


@tfc.function(input_signature=[tfc.TensorSpec((4, 3))])
def dense(x):
    return tfc.relu(x @ w) * 2.0 + 1.0


@tfc.function(input_signature=[tfc.TensorSpec((None,))])
def total(x):
    return tfc.reduce_sum(x * x)


@tfc.function
def no_signature(x):
    return x


def plain(x):
    return x
'''


def write(tmp_path, text, name="model.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def run(argv):
    """(exit code, stdout, stderr) of an in-process `tfc compile`."""
    out, err = io.StringIO(), io.StringIO()
    old = sys.stderr
    sys.stderr = err
    try:
        code = compile_main(argv, out=out)
    finally:
        sys.stderr = old
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def model(tmp_path):
    return write(tmp_path, MODEL)


def test_summary_of_every_signed_function(model):
    code, out, err = run([model])
    assert code == 0, err
    assert "function dense(float32[4, 3])" in out and "function total(float32[?])" in out
    assert "no_signature" not in out and "plain" not in out
    for row in ("ops, tensor-raw", "ops, tensor (L1 after passes)", "ops, fused (L2)", "fused kernels",
                "planned peak memory", "time: tfc-cse", "time: trace", "time: total"):
        assert row in out
    # dense's elementwise tail fuses into one kernel
    line = [ln for ln in out.splitlines() if "fused kernels" in ln][0]
    assert int(line.split()[-1]) >= 1


@pytest.mark.parametrize("stage,needle", [("tensor", "tfc.matmul"), ("tensor-raw", "tfc.read_variable"),
                                          ("fused", "tfc.fused")])
def test_emit_stage(model, stage, needle):
    code, out, err = run([model, "--function", "dense", "--emit", stage])
    assert code == 0, err
    assert needle in out and "func.func @dense" in out


def test_passes_and_print_ir_after_all(model):
    code, out, err = run([model, "--function", "total", "--passes", "tfc-cse,tfc-dce", "--print-ir-after-all",
                          "--emit", "tensor"])
    assert code == 0, err
    assert "IR Dump After trace" in err and "IR Dump After tfc-cse" in err and "IR Dump After tfc-dce" in err
    assert "tfc-simplify" not in err


def test_export_and_run_without_source(model, tmp_path):
    dest = str(tmp_path / "out")
    code, out, err = run([model, "--function", "dense", "-o", dest])
    assert code == 0, err
    assert sorted(os.listdir(dest)) == ["function.mlir", "manifest.json", "weights.npz"]
    os.remove(model)  # the artifact needs no source
    loaded = tfc.load(dest)
    x = np.arange(12, dtype=np.float32).reshape(4, 3) - 5
    w = np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 1.0]], np.float32)
    np.testing.assert_allclose(loaded(x).numpy(), np.maximum(x @ w, 0) * 2 + 1, rtol=1e-6)


def test_export_several_functions_into_subdirectories(model, tmp_path):
    dest = str(tmp_path / "out")
    assert run([model, "-o", dest])[0] == 0
    assert sorted(os.listdir(dest)) == ["dense", "total"]


def test_progress_line_on_a_terminal_only():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    with Progress("compiling f", stream=tty, delay=0.0) as p:
        while not p._shown:
            pass
    assert "compiling f" in tty.getvalue() and tty.getvalue().endswith("\r\033[K")
    plain = io.StringIO()
    with Progress("compiling f", stream=plain, delay=0.0):
        pass
    assert plain.getvalue() == ""


# -- errors: a clear message and a non-zero exit, never a traceback ------------------------


def check_error(argv, code, *needles):
    got, out, err = run(argv)
    assert got == code, (got, err)
    assert err.startswith("tfc compile: error:") and "Traceback" not in err
    for n in needles:
        assert n in err, err
    return err


def test_missing_model(tmp_path):
    check_error([str(tmp_path / "nope.py")], 1, "nope.py: no such file")


def test_directory_is_not_a_model(tmp_path):
    check_error([str(tmp_path)], 1, "is a directory")


def test_unreadable_model(tmp_path):
    p = write(tmp_path, "x = 1\n")
    os.chmod(p, 0)
    try:
        if os.access(p, os.R_OK):
            pytest.skip("running as a user who can read any file")
        check_error([p], 1, "cannot read the file")
    finally:
        os.chmod(p, 0o644)


def test_syntax_error_shows_file_and_line(tmp_path):
    p = write(tmp_path, "import tfc\n\ndef f(x:\n    return x\n")
    check_error([p], 1, f"{p}:3: syntax error", "def f(x:")


def test_exception_at_import_shows_it_and_the_line(tmp_path):
    p = write(tmp_path, "import tfc\n\nscale = 1 / 0\n")
    check_error([p], 1, "ZeroDivisionError: division by zero", f"{p}:3: scale = 1 / 0")


def test_sys_exit_at_import_is_reported(tmp_path):
    p = write(tmp_path, "import sys\nsys.exit(3)\n")
    check_error([p], 1, "SystemExit")


def test_no_compilable_function(tmp_path):
    p = write(tmp_path, "import tfc\n\n@tfc.function\ndef f(x):\n    return x\n")
    check_error([p], 1, "no function to compile", "input_signature")


def test_function_naming_nothing(model):
    check_error([model, "--function", "nothing"], 2, "no function named 'nothing'", "dense, total")


def test_function_without_signature(model):
    check_error([model, "--function", "plain"], 2, "plain has no input signature")
    check_error([model, "--function", "no_signature"], 2, "no_signature has no input signature")


def test_op_that_cannot_be_compiled_names_op_and_line(tmp_path):
    p = write(tmp_path, """\
        import tfc

        @tfc.function(input_signature=[tfc.TensorSpec((4,))])
        def positives(x):
            return x[x > 0]
        """)
    check_error([p], 1, "cannot compile positives", "getitem", f"{p}:5: return x[x > 0]")


def test_shape_error_while_tracing_names_the_line(tmp_path):
    p = write(tmp_path, """\
        import tfc

        @tfc.function(input_signature=[tfc.TensorSpec((4, 3)), tfc.TensorSpec((4, 3))])
        def bad(x, y):
            return x @ y
        """)
    check_error([p], 1, "cannot compile bad", "matmul", f"{p}:5: return x @ y")


def test_unknown_pass(model):
    check_error([model, "--passes", "tfc-cse,nope"], 2, "unknown pass 'nope'", "tfc-fold")


def test_unknown_stage(model):
    check_error([model, "--emit", "assembly"], 2, "unknown stage 'assembly'", "fused")


def test_ptx_stage_is_the_cuda_targets(model):
    check_error([model, "--emit", "ptx"], 2, "stage 'ptx' is the cuda backend's: add --target cuda")


def test_unknown_target(model):
    check_error([model, "--target", "tpu"], 2, "unknown target 'tpu'")


def test_quantize_needs_calibration(model):
    check_error([model, "--quantize", "int8"], 2, "--quantize int8 needs calibration data")


def test_subprocess_entry_point(model):
    r = subprocess.run([sys.executable, "-m", "tfc.cli", "compile", model, "--function", "total"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT}, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "function total" in r.stdout and r.stderr == ""  # not a terminal: no progress line
    r = subprocess.run([sys.executable, "-m", "tfc.cli", "compile", model + "x"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT}, cwd=ROOT)
    assert r.returncode == 1 and "Traceback" not in r.stderr and "no such file" in r.stderr


# -- what tfc compile finds ------------------------------------------------------------------

MODULE_MODEL = '''
import tfc


class Scale(tfc.Module):
    def __init__(self):
        super().__init__()
        self.w = tfc.Variable([1.0, 2.0, 3.0], name="w")

    @tfc.function(input_signature=[tfc.TensorSpec((None, 3))])
    def __call__(self, x):
        return x * self.w

    @tfc.function(input_signature=[tfc.TensorSpec((3,))])
    def shift(self, x):
        return x + self.w

    def plain(self, x):
        return x


model = Scale()


def g(x):
    return tfc.exp(x) + 1.0


compiled_g = tfc.compile(g, tfc.TensorSpec((2,)))

if __name__ == "__main__":
    raise SystemExit("the model file's __main__ block ran")
'''


def test_module_methods_and_compile_results_are_found(tmp_path):
    p = write(tmp_path, MODULE_MODEL)
    code, out, err = run([p])
    assert code == 0, err
    heads = [ln for ln in out.splitlines() if ln.startswith("function ")]
    assert heads == ["function model(float32[?, 3])", "function model.shift(float32[3])",
                     "function compiled_g(float32[2])"]


def test_exported_module_method_runs_as_the_method(tmp_path):
    p = write(tmp_path, MODULE_MODEL)
    dest = str(tmp_path / "out")
    code, _, err = run([p, "-o", dest])
    assert code == 0, err
    assert sorted(os.listdir(dest)) == ["compiled_g", "model", "model.shift"]
    x = np.array([0.5, -1.0, 4.0], np.float32)
    w = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(tfc.load(os.path.join(dest, "model.shift"))(x).numpy(), x + w)
    np.testing.assert_array_equal(tfc.load(os.path.join(dest, "model"))(np.stack([x, x])).numpy(),
                                  np.stack([x * w, x * w]))
    np.testing.assert_allclose(tfc.load(os.path.join(dest, "compiled_g"))(x[:2]).numpy(), np.exp(x[:2]) + 1,
                               rtol=1e-6)


def test_compile_result_is_compiled_with_the_commands_passes(tmp_path):
    p = write(tmp_path, MODULE_MODEL)
    code, out, err = run([p, "--function", "compiled_g", "--passes", "tfc-cse"])
    assert code == 0, err
    assert "time: tfc-cse" in out and "time: tfc-simplify" not in out
    code, out, err = run([p, "--function", "model.shift", "--emit", "tensor"])
    assert code == 0, err
    assert "func.func @shift" in out


def test_function_naming_nothing_lists_methods_too(tmp_path):
    p = write(tmp_path, MODULE_MODEL)
    check_error([p, "--function", "nothing"], 2, "model, model.shift, compiled_g")


# -- outputs written whole --------------------------------------------------------------------


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), ValueError("cannot be exported")])
def test_export_of_several_functions_is_all_or_nothing(model, tmp_path, monkeypatch, error):
    import tfc.export

    dest = tmp_path / "out"
    real, calls = tfc.export.save, []

    def failing_second(conc, path, root=None):
        calls.append(path)
        if len(calls) == 2:
            raise error
        return real(conc, path, root=root)

    monkeypatch.setattr(tfc.export, "save", failing_second)
    code, _, err = run([model, "-o", str(dest)])
    assert code == 1 and len(calls) == 2 and "Traceback" not in err
    assert sorted(os.listdir(tmp_path)) == ["model.py"]  # nothing at dest, nothing staged left over
    monkeypatch.setattr(tfc.export, "save", real)
    assert run([model, "-o", str(dest)])[0] == 0
    before = {f: (dest / d / f).read_bytes() for d in ("dense", "total") for f in os.listdir(dest / d)}
    calls.clear()
    monkeypatch.setattr(tfc.export, "save", failing_second)
    assert run([model, "-o", str(dest)])[0] == 1
    assert {f: (dest / d / f).read_bytes() for d in ("dense", "total") for f in os.listdir(dest / d)} == before
    assert sorted(os.listdir(tmp_path)) == ["model.py", "out"]


def test_a_function_that_fails_to_compile_writes_nothing(tmp_path):
    p = write(tmp_path, MODEL + '''
@tfc.function(input_signature=[tfc.TensorSpec((2, 3))])
def zz_bad(x):
    return x @ x
''')
    dest = tmp_path / "out"
    check_error([p, "-o", str(dest)], 1, "cannot compile zz_bad")
    assert sorted(os.listdir(tmp_path)) == ["model.py"]


@pytest.mark.parametrize("passes", ["tfc-lower-loops", "tfc-cse,tfc-bufferize", "tfc-plan-memory"])
def test_passes_takes_l1_passes_only(model, passes):
    check_error([model, "--passes", passes], 2, "is not an L1 pass", "tfc-simplify, tfc-fold")
    with pytest.raises(ValueError, match="is not an L1 pass"):
        tfc.compile(lambda x: x + 1.0, tfc.TensorSpec((2,)), passes=passes)


# -- locations: the user's line, once ----------------------------------------------------------------


@pytest.mark.parametrize("body", ["return tfc.matmul(x, y)",     # rank error
                                  "return x + y",                # broadcast error
                                  "return tfc.reshape(x, (7,))",  # size error
                                  "return tfc.matmul(x, tfc.transpose(x)) @ y"])  # inner dims
def test_error_location_is_printed_once(tmp_path, body):
    p = write(tmp_path, f"""\
        import tfc

        @tfc.function(input_signature=[tfc.TensorSpec((2, 3)), tfc.TensorSpec((4,))])
        def bad(x, y):
            {body}
        """)
    err = check_error([p], 1, "cannot compile bad")
    assert err.count(f"{p}:5") == 1, err
    assert err.count("model.py") == 1, err


RETURNS = '''
import tfc


@tfc.function(input_signature=[tfc.TensorSpec((3,))])
def one_line(x):
    return tfc.exp(x) + 1.0


@tfc.function(input_signature=[tfc.TensorSpec((3,))])
def two_lines(x):
    y = x * 2.0
    return y
'''


def _return_locs(dest):
    locs = {}
    for name in os.listdir(dest):
        text = open(os.path.join(dest, name, "function.mlir")).read()
        locs[name] = [ln for ln in text.splitlines() if "func.return" in ln][0]
    return locs


def test_return_carries_the_users_line(tmp_path):
    p = write(tmp_path, RETURNS)
    dest = str(tmp_path / "out")
    assert run([p, "-o", dest])[0] == 0
    locs = _return_locs(dest)
    assert f'loc("{p}":7:' in locs["one_line"], locs
    assert f'loc("{p}":12:' in locs["two_lines"], locs


def test_return_location_through_the_installed_launcher(tmp_path):
    launcher = os.path.join(os.path.dirname(sys.executable), "tfc")
    if not os.path.exists(launcher):
        pytest.skip("tfc is not installed beside this interpreter")
    p = write(tmp_path, RETURNS + '''

@tfc.function(input_signature=[tfc.TensorSpec((3,))])
def identity(x):
    return x
''')
    dest = str(tmp_path / "out")
    r = subprocess.run([launcher, "compile", p, "-o", dest], capture_output=True, text=True, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    locs = _return_locs(dest)
    assert f'loc("{p}":7:' in locs["one_line"]
    for loc in locs.values():
        assert launcher not in loc and os.path.dirname(sys.executable) not in loc, loc


# -- the summary's memory plan ----------------------------------------------------------------------------


def test_summary_shows_the_plan_of_a_specialization(tmp_path):
    p = write(tmp_path, MODEL + '''
@tfc.function(input_signature=[tfc.TensorSpec((None, 3)), tfc.TensorSpec((4,))])
def mixed(x, y):
    return tfc.exp(x) * 2.0 + 1.0, tfc.exp(y) * 3.0 + 1.0
''')
    code, out, err = run([p])
    assert code == 0, err
    blocks = {b.split("(")[0]: b for b in out.split("function ")[1:]}
    assert "planned peak memory" in blocks["dense"] and "memory plan" not in blocks["dense"]
    # a function with run-time dimensions is summarized for a specialization (each None dimension 1)
    assert "specialized for" in blocks["total"] and "shapes [1] (each run-time shape" in blocks["total"]
    assert "planned peak memory" in blocks["total"] and "memory plan" not in blocks["total"]
    assert "shapes [1, 3], [4]" in blocks["mixed"] and "(static buffers only)" not in blocks["mixed"]


def test_export_never_replaces_a_directory_of_the_users(tmp_path):
    """-o naming the model's own directory, or a user's subdirectory named
    like a function, is refused and left untouched (it used to be deleted)."""
    model = write(tmp_path, MODEL)
    check_error([model, "--function", "dense", "-o", str(tmp_path)], 1,
                f"{tmp_path} is a directory that is not a tfc export")
    assert sorted(os.listdir(tmp_path)) == ["model.py"]
    out = tmp_path / "out"
    (out / "total").mkdir(parents=True)
    (out / "total" / "mine.txt").write_text("precious")
    check_error([model, "-o", str(out)], 1, "total is a directory that is not a tfc export")
    assert sorted(os.listdir(out)) == ["total"] and sorted(os.listdir(tmp_path)) == ["model.py", "out"]
    assert (out / "total" / "mine.txt").read_text() == "precious"
    (out / "total" / "mine.txt").unlink()  # an empty one may be used
    assert run([model, "-o", str(out)])[0] == 0
    assert sorted(os.listdir(out)) == ["dense", "total"]
    assert run([model, "-o", str(out)])[0] == 0  # and an earlier export replaced


def test_stage_of_another_target_is_refused_before_the_model_runs(tmp_path):
    p = write(tmp_path, "import os\nos.mkdir(os.path.join(os.path.dirname(__file__), 'ran'))\n" + MODEL)
    check_error([p, "--emit", "gpu"], 2, "stage 'gpu' is the cuda backend's: add --target cuda")
    assert not (tmp_path / "ran").exists()


def test_the_models_prints_go_to_stderr_not_into_the_emitted_ir(tmp_path):
    p = write(tmp_path, MODEL.replace("def dense(x):\n", "def dense(x):\n    print('tracing')\n")
              + "\nprint('importing')\n")
    code, out, err = run([p, "--function", "dense", "--emit", "tensor"])
    assert code == 0 and out.startswith("builtin.module") and "importing" not in out and "tracing" not in out
    assert "importing" in err and "tracing" in err


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version_flag(flag, capsys):
    from tfc.cli import version

    assert compile_main([flag]) == 0 and capsys.readouterr().out == f"tfc {version()}\n"


# -- --shape: the specialization a None-signature function's stages show -------------------------


def test_emit_loops_of_a_none_signature_shows_a_specialization(tmp_path):
    p = write(tmp_path, MODEL)
    code, out, err = run([p, "--function", "total", "--emit", "loops"])
    assert code == 0, err
    head, *body = out.splitlines()
    assert head == "// specialized for shapes [1] (signature float32[?])"
    assert "memref<1xf32>" in "\n".join(body) and "?" not in "\n".join(body)
    code, out, err = run([p, "--function", "total", "--emit", "loops", "--shape", "x=7"])
    assert code == 0, err
    assert out.splitlines()[0].startswith("// specialized for shapes [7]") and "memref<7xf32>" in out
    code, out, err = run([p, "--function", "total", "--emit", "numpy", "--shape", "0=0"])
    assert code == 0, err
    assert out.startswith("# specialized for shapes [0]")
    code, out, err = run([p, "--function", "total", "--shape", "x=5"])
    assert code == 0, err
    assert "shapes [5] (each run-time shape is compiled on first use)" in out


@pytest.mark.parametrize("option, needle", [
    ("x", "expected NAME=DIMS"),
    ("x=2xb", "non-negative integers joined by x"),
    ("x=-1", "non-negative integers joined by x"),
    ("y=3", "total has no tensor argument 'y' (its tensor arguments: x"),
    ("x=3x4", "does not fit argument x's shape ?"),
])
def test_bad_shape_option(tmp_path, option, needle):
    p = write(tmp_path, MODEL)
    check_error([p, "--function", "total", "--shape", option], 2, needle)


def test_shape_option_with_no_none_signature_is_an_error(tmp_path):
    p = write(tmp_path, MODEL)
    check_error([p, "--function", "dense", "--shape", "x=4x3"], 2, "no function compiled here has a None dimension")


def test_cuda_target_emits_gpu_and_ptx(model):
    """--target cuda needs no GPU: the L4 module and its PTX."""
    code, out, err = run([model, "--target", "cuda", "--emit", "ptx"])
    assert code == 0, err
    assert out.startswith("//") or ".version 8.0" in out
    assert ".target sm_80" in out and ".visible .entry" in out
    code, out, err = run([model, "--target", "cuda", "--emit", "gpu"])
    assert code == 0, err
    assert "gpu.module" in out and "kernels" in out and "tgpu.launch" in out
