"""The layers of tfc import downward only: core < dialects < ops < passes <
backends < frontend < the rest (tfc/__init__.py, tfc/nn, tfc/export.py,
tfc/cli.py, tfc/compiler.py, ...). Every import of every module is checked,
function-level imports included (parsed, not run)."""
from __future__ import annotations

import ast
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "tfc"
LAYERS = ("core", "dialects", "ops", "passes", "backends", "frontend")
TOP = len(LAYERS)  # tfc/__init__.py, tfc/nn, tfc/export.py, tfc/cli.py, tfc/compiler.py, ...

# The one exception the design allows: Tensor's operators (x + y, x[i], ...) are ops.
ALLOWED = {("tfc.core.tensor", "tfc.ops")}

# Upward imports that exist today and are to be removed (each names why it is
# there); the test fails when one disappears, so that this list only shrinks.
KNOWN = {
    ("tfc.core.tape", "tfc.ops"): "the tape's gradient arithmetic (sums of gradients, zeros, guarded selects) "
                                  "runs registry ops",
    ("tfc.core.registry", "tfc.ops"): "the weak-type promotion of an op's inputs casts with tfc.ops.math.cast",
}


def layer_of(module: str) -> int | None:
    """The layer of a tfc module (None: not tfc's)."""
    parts = module.split(".")
    if parts[0] != "tfc":
        return None
    if len(parts) == 1:
        return TOP
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else TOP


def module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: pathlib.Path):
    """(imported module, line) for every import in the file, at any depth."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name != "tfc":  # the package itself is loaded before any of its modules anyway
                    yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            if target == "tfc":  # from tfc import X: X is a submodule or tfc's public API
                for a in node.names:
                    sub = ROOT / a.name
                    yield ("tfc." + a.name if sub.is_dir() or sub.with_suffix(".py").exists() else "tfc"), node.lineno
            else:
                yield target, node.lineno


def upward_imports():
    """{(importer, imported layer's package): [(imported module, file:line), ...]}"""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        me = module_name(path)
        mine = layer_of(me)
        for target, line in imports(path):
            theirs = layer_of(target)
            if theirs is None or theirs <= mine:
                continue
            pkg = "tfc" if theirs == TOP else f"tfc.{LAYERS[theirs]}"
            found.setdefault((me, pkg), []).append((target, f"{path.relative_to(ROOT.parent)}:{line}"))
    return found


def test_layer_of():
    assert layer_of("tfc.core.tensor") == 0 and layer_of("tfc.frontend.function") == 5
    assert layer_of("tfc.nn.layers") == TOP and layer_of("tfc.compiler") == TOP and layer_of("numpy") is None


def test_the_checker_sees_function_level_and_relative_imports(tmp_path, monkeypatch):
    pkg = tmp_path / "tfc" / "passes"
    pkg.mkdir(parents=True)
    (tmp_path / "tfc" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "p.py").write_text("def f():\n    from tfc.backends import numpy\n    from ..frontend import x\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path / "tfc")
    found = upward_imports()
    assert set(found) == {("tfc.passes.p", "tfc.backends"), ("tfc.passes.p", "tfc.frontend")}
    assert found[("tfc.passes.p", "tfc.frontend")][0][0] == "tfc.frontend"


def test_imports_go_downward_only():
    found = upward_imports()
    bad = {k: v for k, v in found.items() if k not in ALLOWED and k not in KNOWN}
    assert not bad, "upward imports:\n" + "\n".join(
        f"  {me} imports {target} at {where}" for (me, _), uses in sorted(bad.items()) for target, where in uses)


@pytest.mark.parametrize("pair", sorted(KNOWN))
def test_known_exceptions_are_still_there(pair):
    assert pair in upward_imports(), f"{pair[0]} no longer imports {pair[1]}: remove it from KNOWN"


@pytest.mark.parametrize("package, forbidden", [
    ("passes", "tfc.backends"), ("backends", "tfc.frontend"), ("core", "tfc.frontend"),
])
def test_the_issue_s_three_rules(package, forbidden):
    """No pass imports a backend, no backend the frontend, core no frontend."""
    for path in sorted((ROOT / package).rglob("*.py")):
        for target, line in imports(path):
            assert not (target == forbidden or target.startswith(forbidden + ".")), f"{path}:{line} imports {target}"
