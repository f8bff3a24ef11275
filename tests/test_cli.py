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


def test_compile_not_implemented(capsys):
    assert main(["compile", "model.py"]) == 2
    assert "not implemented yet" in capsys.readouterr().err


def test_subprocess_no_traceback(tmp_path):
    p = tmp_path / "bad.mlir"
    p.write_text("func.func @f( {\n")
    r = subprocess.run([sys.executable, "-m", "tfc.cli", "opt", str(p)], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": ROOT}, cwd=ROOT)
    assert r.returncode == 1 and "Traceback" not in r.stderr and f"{p}:1:" in r.stderr
