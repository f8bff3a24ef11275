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
