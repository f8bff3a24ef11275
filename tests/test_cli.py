"""tfc / tfc-opt command line."""
import os
import subprocess
import sys

import pytest

from tfc.cli import main, opt_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOOD = """func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {
  %one = tfc.constant dense<1.0> : tensor<3xf32>
  %0 = tfc.multiply %a, %one : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = tfc.exp %0 : (tensor<3xf32>) -> tensor<3xf32>
  func.return %1 : tensor<3xf32>
}
"""


@pytest.fixture
def good(tmp_path):
    p = tmp_path / "good.mlir"
    p.write_text(GOOD)
    return str(p)


def test_opt_runs_passes(good, capsys):
    assert opt_main([good, "-p", "tfc-simplify,tfc-dce"]) == 0
    out = capsys.readouterr().out
    assert "tfc.exp %a" in out and "tfc.multiply" not in out and "tfc.constant" not in out


def test_main_opt_subcommand(good, capsys):
    assert main(["opt", good, "-p", "tfc-cse"]) == 0
    assert "tfc.multiply" in capsys.readouterr().out


def test_list_passes(capsys):
    assert opt_main(["--list-passes"]) == 0
    out = capsys.readouterr().out
    for name in ("tfc-fold", "tfc-cse", "tfc-dce", "tfc-simplify"):
        assert name in out


def test_print_ir_after_all(good, capsys):
    assert opt_main([good, "-p", "tfc-simplify,tfc-dce", "--print-ir-after-all"]) == 0
    err = capsys.readouterr().err
    assert "IR Dump After tfc-simplify" in err and "IR Dump After tfc-dce" in err


def test_parse_error_names_file_line_col(tmp_path, capsys):
    p = tmp_path / "bad.mlir"
    p.write_text("func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {\n  %0 = tfc.exp %a : (tensor<3xf32>\n}\n")
    assert opt_main([str(p)]) == 1
    err = capsys.readouterr().err
    assert f"{p}:3:1: error:" in err and "error:" in err and "Traceback" not in err


def test_verify_error_exits_nonzero(tmp_path, capsys):
    p = tmp_path / "v.mlir"
    p.write_text(GOOD.replace("tfc.exp %0 : (tensor<3xf32>) -> tensor<3xf32>",
                              "tfc.exp %0 : (tensor<3xf32>) -> tensor<3xi32>").replace(
        "%1 : tensor<3xf32>\n}", "%1 : tensor<3xi32>\n}").replace("-> tensor<3xf32> {", "-> tensor<3xi32> {"))
    assert opt_main([str(p)]) == 1
    assert "inference gives tensor<3xf32>" in capsys.readouterr().err


def test_unknown_pass(good, capsys):
    assert opt_main([good, "-p", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_compile_subcommand_reports_missing_model(capsys):
    assert main(["compile", "no_such_model.py"]) == 1
    assert "no_such_model.py: no such file" in capsys.readouterr().err


def test_subprocess_no_traceback(tmp_path):
    p = tmp_path / "bad.mlir"
    p.write_text("func.func @f( {\n")
    r = subprocess.run([sys.executable, "-m", "tfc.cli", "opt", str(p)], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": ROOT}, cwd=ROOT)
    assert r.returncode == 1 and "Traceback" not in r.stderr and f"{p}:1:" in r.stderr


def _opt_error(tmp_path, capsys, text):
    """The stderr of tfc opt on ``text`` (which must fail with exit status 1)."""
    p = tmp_path / "bad.mlir"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert opt_main([str(p), "-p", "tfc-fold"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.replace(str(p), "bad.mlir")


def _func(body, args="%x: tensor<6xf32>", result="tensor<2x3xf32>"):
    return f"func.func @f({args}) -> {result} {{\n{body}\n}}\n"


@pytest.mark.parametrize("body, want", [
    ('  %a = tfc.reshape %x {shape = "hello"} : (tensor<6xf32>) -> tensor<2x3xf32>\n  func.return %a : tensor<2x3xf32>',
     "bad.mlir:2:3: error: tfc.reshape: attribute 'shape' is \"hello\", expected array<i64: ...>\n"),
    ("  %a = tfc.reshape %x : (tensor<6xf32>) -> tensor<2x3xf32>\n  func.return %a : tensor<2x3xf32>",
     "bad.mlir:2:3: error: tfc.reshape: missing attribute 'shape' (array<i64: ...>)\n"),
    # a tfc verifier error at the op's position in the file, or at its own loc(...)
    ("  %a = tfc.add %x, %x : (tensor<6xf32>, tensor<6xf32>) -> tensor<2x3xf32>\n  func.return %a : tensor<2x3xf32>",
     "bad.mlir:2:3: error: tfc.add: result 0 has type tensor<2x3xf32>, but inference gives tensor<6xf32>\n"),
    ('  %a = tfc.add %x, %x : (tensor<6xf32>, tensor<6xf32>) -> tensor<2x3xf32> loc("model.py":7:0)\n'
     "  func.return %a : tensor<2x3xf32>", "model.py:7: error: tfc.add: result 0 has type"),
    # xDSL's own verifiers, located too, on one line
    ("  %a = tfc.multiply %x : (tensor<6xf32>) -> tensor<6xf32>\n  func.return %x : tensor<6xf32>",
     "bad.mlir:2:3: error: tfc.multiply: Expected 2 operands, but got 1\n"),
    ("  func.return %x : tensor<6xf32>", "bad.mlir:2:3: error: func.return: Expected arguments to have the same types"),
])
def test_opt_verify_errors_name_file_line_col(tmp_path, capsys, body, want):
    err = _opt_error(tmp_path, capsys, _func(body))
    assert err.startswith(want) and err.count("\n") == 1, err


def test_opt_non_utf8_and_dense_literal_errors_point_at_the_place(tmp_path, capsys):
    err = _opt_error(tmp_path, capsys, b"func.func @f() {\n  \xff\n}\n")
    assert err.startswith("bad.mlir:2:3: error: not UTF-8 text (byte 0xff)\n")
    err = _opt_error(tmp_path, capsys, _func("  %0 = tfc.constant dense<[1.0, 2.0]> : tensor<3xf32>\n"
                                             "  func.return %0 : tensor<3xf32>", args="", result="tensor<3xf32>"))
    assert err.startswith("bad.mlir:2:26: error: Shape mismatch in dense literal")
    assert "\n  %0 = tfc.constant dense<[1.0, 2.0]> : tensor<3xf32>\n" in err


# -- outputs are written whole or not at all ----------------------------------------------


def test_output_may_name_the_input(good, capsys):
    assert opt_main([good, "-p", "tfc-simplify,tfc-dce"]) == 0
    want = capsys.readouterr().out
    assert opt_main([good, "-p", "tfc-simplify,tfc-dce", "-o", good]) == 0
    assert open(good).read() == want and "tfc.exp %a" in want
    assert os.listdir(os.path.dirname(good)) == ["good.mlir"]  # no temporary file left


def test_output_through_a_symbolic_link_replaces_its_target(good, tmp_path, capsys):
    target = tmp_path / "target.mlir"
    target.write_text("old\n")
    link = tmp_path / "link.mlir"
    link.symlink_to(target)
    assert opt_main([good, "-p", "tfc-cse", "-o", str(link)]) == 0
    assert link.is_symlink() and "tfc.multiply" in target.read_text()


@pytest.mark.parametrize("argv, text", [
    (["-p", "tfc-fold"], "func.func @f( {\n"),                                   # parse error
    (["-p", "tfc-fold"], GOOD.replace("-> tensor<3xf32>\n  func", "-> tensor<4xf32>\n  func")),  # verifier
    (["-p", "tfc-lower-loops,tfc-fold"], GOOD),                                  # a pass's precondition
    (["-p", "tfc-fold"], "builtin.module {" * 3000 + "}" * 3000),                # nesting too deep
])
def test_failure_leaves_the_output_as_it_was(tmp_path, capsys, argv, text):
    src = tmp_path / "in.mlir"
    src.write_text(text)
    old = tmp_path / "old.mlir"
    old.write_text("previous contents\n")
    assert opt_main([str(src), *argv, "-o", str(old)]) == 1
    assert opt_main([str(src), *argv, "-o", str(tmp_path / "new.mlir")]) == 1
    assert opt_main([str(src), *argv, "-o", str(src)]) == 1
    assert old.read_text() == "previous contents\n" and src.read_text() == text
    assert sorted(os.listdir(tmp_path)) == ["in.mlir", "old.mlir"]
    assert "Traceback" not in capsys.readouterr().err


# -- bad inputs: one line, at the place ------------------------------------------------------


def _one_error(argv, capsys, code=1):
    assert opt_main(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.splitlines()[0]


def test_input_that_is_not_a_file(tmp_path, capsys):
    assert _one_error([str(tmp_path), "-p", "tfc-fold"], capsys) == \
        f"{tmp_path}: error: is a directory; expected an IR file (.mlir)"
    missing = str(tmp_path / "missing.mlir")
    assert _one_error([missing], capsys) == f"{missing}: error: no such file"


def test_input_is_read_by_content_not_by_name(tmp_path, capsys):
    ir = tmp_path / "f.txt"
    ir.write_text(GOOD)
    assert opt_main([str(ir), "-p", "tfc-simplify,tfc-dce"]) == 0
    assert "tfc.exp %a" in capsys.readouterr().out
    py = tmp_path / "model.py"
    py.write_text("import tfc\n")
    line = _one_error([str(py)], capsys)
    assert line.startswith(f"{py}:1:") and "not an .mlir file" in line and "tfc compile" in line


@pytest.mark.parametrize("text, where, message", [
    ("builtin.module {" * 3000 + "}" * 3000, "bad.mlir:1:", "nesting too deep"),
    ('"builtin.module"() ({\n' * 2500 + "}) : () -> ()\n" * 2500, "bad.mlir:", "nesting too deep"),
    (_func("  %0 = tfc.constant dense<1.0> : tensor<100000x100000x1000xf32>\n  func.return %0 : tensor<3xf32>",
           args="", result="tensor<3xf32>"), "bad.mlir:2:26:", "dense literal of 10,000,000,000,000 elements"),
    (_func("  %0 = tfc.constant dense<1> : tensor<1000000x1000000xi8>\n  func.return %0 : tensor<3xf32>",
           args="", result="tensor<3xf32>"), "bad.mlir:2:26:", "over the limit"),
    # attribute values that their attribute refuses, at the line of the op
    (_func("  %a = tfc.reduce_sum %x {axis = array<i64: 0>, keepdims = 2 : i1} : (tensor<6xf32>) -> tensor<f32>\n"
           "  func.return %a : tensor<f32>", result="tensor<f32>"), "bad.mlir:2:", "out of range for type i1"),
    (_func('  %a = tfc.reduce_sum %x {axis = array<i64: 0>, keepdims = "no"} : (tensor<6xf32>) -> tensor<f32>\n'
           "  func.return %a : tensor<f32>", result="tensor<f32>"), "bad.mlir:2:3:", "attribute 'keepdims'"),
    (_func("  %a = tfc.reduce_sum %x {axis = array<i64: 0>, keepdims = [true]} : (tensor<6xf32>) -> tensor<f32>\n"
           "  func.return %a : tensor<f32>", result="tensor<f32>"), "bad.mlir:2:3:", "attribute 'keepdims'"),
])
def test_bad_input_is_one_error_at_the_place(tmp_path, capsys, text, where, message):
    p = tmp_path / "bad.mlir"
    p.write_text(text)
    line = _one_error([str(p), "-p", "tfc-fold"], capsys).replace(str(p), "bad.mlir")
    assert line.startswith(where) and message in line and ".py" not in line, line


@pytest.mark.parametrize("passes", ["tfc-lower-loops,tfc-fold", "tfc-lower-loops,tfc-simplify",
                                    "tfc-lower-loops,tfc-fuse", "tfc-lower-loops,tfc-bufferize",
                                    "tfc-lower-loops,tfc-plan-memory", "tfc-lower-loops,tfc-lower-loops"])
def test_a_pass_on_ir_of_the_wrong_level_says_what_it_needs(good, capsys, passes):
    second = passes.split(",")[1]
    line = _one_error([good, "-p", passes], capsys)
    fix = "it is run once" if second == "tfc-lower-loops" else f"run {second} before tfc-lower-loops"
    assert line == (f"{good}: error: {second} expects tensor IR (L1 or L2); @f is already lowered to loops "
                    f"(L3): {fix}")


@pytest.mark.parametrize("passes", ["tfc-lower-loops", "tfc-fuse,tfc-lower-loops,tfc-dce,tfc-cse",
                                    "tfc-bufferize,tfc-plan-memory,tfc-lower-loops"])
def test_passes_in_order_still_run(good, capsys, passes):
    assert opt_main([good, "-p", passes]) == 0
    assert "memref" in capsys.readouterr().out


# -- --time-passes, --help, --version ------------------------------------------------------------


def test_time_passes_prints_each_pass_and_the_total(good, capsys):
    assert opt_main([good, "-p", "tfc-simplify,tfc-fold,tfc-dce", "--time-passes"]) == 0
    captured = capsys.readouterr()
    assert "wall time" not in captured.out
    rows = dict(line.split()[:2] for line in captured.err.splitlines()[1:])
    assert captured.err.startswith("wall time:\n")
    for step in ("parse", "tfc-simplify", "tfc-fold", "tfc-dce", "print", "total"):
        assert float(rows[step]) >= 0.0, step
    assert float(rows["total"]) >= sum(float(v) for k, v in rows.items() if k != "total")


def test_opt_help_lists_tfc_passes_only(capsys):
    from tfc.passes.pipeline import DESCRIPTIONS, PASSES

    assert main(["opt", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: tfc opt ")
    for name in PASSES:
        assert f"  {name} " in out and DESCRIPTIONS[name] in out
    for xdsl_pass in ("canonicalize", "convert-", "lower-affine", "--shrink"):
        assert xdsl_pass not in out
    assert opt_main(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: tfc-opt ")


def test_version(capsys):
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"tfc {version('tfc')}\n"
    r = subprocess.run([sys.executable, "-m", "tfc.cli", "--version"], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": ROOT}, cwd=ROOT)
    assert r.returncode == 0 and r.stdout == f"tfc {version('tfc')}\n"


@pytest.mark.parametrize("attrs", ['keepdims = "no"', "keepdims = [true]", "keepdims = unit"])
@pytest.mark.parametrize("passes", ["tfc-fuse", "tfc-simplify,tfc-fuse", "tfc-fold,tfc-fuse,tfc-lower-loops"])
def test_bad_attribute_unverified_is_reported_at_the_op(tmp_path, capsys, attrs, passes):
    # with --disable-verify a pass meets the bad attribute: the error is still the op's, at its line
    p = tmp_path / "bad.mlir"
    p.write_text(_func(f"  %a = tfc.reduce_sum %x {{axis = array<i64: 0>, {attrs}}} : (tensor<6xf32>) -> tensor<f32>\n"
                       "  %b = tfc.exp %a : (tensor<f32>) -> tensor<f32>\n  func.return %b : tensor<f32>",
                       result="tensor<f32>"))
    line = _one_error([str(p), "-p", passes, "--disable-verify"], capsys).replace(str(p), "bad.mlir")
    assert line.startswith("bad.mlir:2:3: error: tfc.reduce_sum: attribute 'keepdims'"), line


# -- -o: what it names ---------------------------------------------------------------------


def _opt_subprocess(argv, **kw):
    return subprocess.run([sys.executable, "-m", "tfc.cli", "opt", *argv], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT}, **kw)


def test_output_to_a_fifo_or_device_is_written_into_not_replaced(good, tmp_path, capsys):
    import stat
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()), daemon=True)
    reader.start()
    assert opt_main([good, "-o", str(fifo)]) == 0
    reader.join(10)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and got and "tfc.multiply" in got[0]
    if os.getuid() == 0:  # a device node: only root makes one
        null = tmp_path / "null"
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        assert opt_main([good, "-o", str(null)]) == 0
        assert stat.S_ISCHR(os.stat(null).st_mode)
    assert sorted(os.listdir(tmp_path)) == sorted(["good.mlir", "fifo"] + ["null"] * (os.getuid() == 0))


def test_dash_is_stdin_and_stdout_and_dev_stdout_a_pipe(good, tmp_path):
    for argv in (["-", "-o", "-"], ["-o", "/dev/stdout"]):
        r = _opt_subprocess(argv, input=GOOD, cwd=tmp_path)
        assert r.returncode == 0 and "tfc.multiply" in r.stdout, r.stderr
    assert os.listdir(tmp_path) == ["good.mlir"]  # no file named "-"
    r = _opt_subprocess(["-"], input="func.func @f( {\n", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.startswith("stdin:1:"), r.stderr


def test_output_keeps_the_files_mode_and_owner_and_refuses_one_not_writable(good, tmp_path, capsys,
                                                                           monkeypatch):
    out = tmp_path / "out.mlir"
    out.write_text("old\n")
    os.chmod(out, 0o640)
    if os.getuid() == 0:
        os.chown(out, 65534, 65534)
    assert opt_main([good, "-o", str(out)]) == 0
    st = os.stat(out)
    assert "tfc.multiply" in out.read_text() and st.st_mode & 0o777 == 0o640
    if os.getuid() == 0:
        assert (st.st_uid, st.st_gid) == (65534, 65534)
    monkeypatch.setattr(os, "access", lambda *a, **k: False)  # as for a mode-444 file of a user
    assert _one_error([good, "-o", str(out)], capsys) == f"{out}: error: cannot write it: Permission denied"
    assert "tfc.multiply" in out.read_text() and sorted(os.listdir(tmp_path)) == ["good.mlir", "out.mlir"]


# -- inputs a pass or the parser cannot take: one line, no traceback ------------------------


@pytest.mark.parametrize("elt", ["i72", "i128", "ui128", "f80"])
def test_dense_literal_of_an_element_type_tfc_lacks_is_one_error(tmp_path, capsys, elt):
    p = tmp_path / "t.mlir"
    p.write_text(f"func.func @f() -> tensor<2x{elt}> {{\n  %0 = tfc.constant dense<0> : tensor<2x{elt}>\n"
                 f"  func.return %0 : tensor<2x{elt}>\n}}\n")
    assert _one_error([str(p)], capsys) == (f"{p}:2:26: error: dense literal of tensor<2x{elt}>: tfc does not "
                                            "support its element type (supported: f16, f32, f64, i8, ui8, i32, i64, i1)")


def test_lower_loops_on_an_op_that_is_not_tensor_ir_is_one_error(tmp_path, capsys):
    p = tmp_path / "f.mlir"
    p.write_text("func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  %c = arith.constant 1.0 : f32\n"
                 "  func.return %a : tensor<f32>\n}\n")
    assert _one_error([str(p), "-p", "tfc-lower-loops"], capsys) == \
        f"{p}: error: tfc-lower-loops: op arith.constant at {p}:2:3 is not tensor IR"
    p.write_text('"builtin.module"() ({\n  "func.func"() <{sym_name = "f", function_type = (tensor<f32>) -> '
                 'tensor<f32>}> ({\n  ^bb0(%a: tensor<f32>):\n    %0 = "tfc.fused"(%a) <{shape = array<i64>, '
                 'broadcast = [array<i64>]}> ({\n    ^bb0(%1: f32):\n      %2 = "math.exp"(%1) : (f32) -> f32\n'
                 '    }) : (tensor<f32>) -> tensor<f32>\n    "func.return"(%0) : (tensor<f32>) -> ()\n  }) : () -> ()\n'
                 '}) : () -> ()\n')
    assert _one_error([str(p), "-p", "tfc-lower-loops", "--disable-verify"], capsys) == \
        f"{p}: error: tfc-lower-loops: tfc.fused at {p}:4:5 has a body without its terminator tfc.fused_yield"


@pytest.mark.parametrize("text", ["", "// only a comment\n\n"])
def test_empty_input_is_an_empty_module(tmp_path, capsys, text):
    p = tmp_path / "e.mlir"
    p.write_text(text)
    assert opt_main([str(p), "-p", "tfc-fold"]) == 0
    assert capsys.readouterr().out == "builtin.module {\n}\n\n"


def test_opt_short_version_flag(capsys):
    assert main(["opt", "-V"]) == 0
    assert capsys.readouterr().out.startswith("tfc ")


def test_syntax_highlight_only_on_a_terminal(good, tmp_path, capsys):
    out = tmp_path / "out.mlir"
    assert opt_main([good, "--syntax-highlight", "-o", str(out)]) == 0
    assert opt_main([good, "--syntax-highlight"]) == 0  # captured stdout: not a terminal
    assert "\x1b" not in out.read_text() and "\x1b" not in capsys.readouterr().out


def test_disable_verify_does_not_outlive_the_run(tmp_path, capsys):
    """xDSL's --disable-verify switches attribute verification off process-wide:
    tfc opt switches it back on when the run ends (in-process callers, tests)."""
    from tfc.dialects.tensor import parse_module

    p = tmp_path / "f.mlir"
    p.write_text("func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  func.return %a : tensor<f32>\n}\n")
    assert opt_main([str(p), "--disable-verify"]) == 0
    with pytest.raises(Exception, match="address space 'local'"):
        parse_module("func.func @f(%p: !tgpu.ptr<f32, local>) {\n  func.return\n}")
