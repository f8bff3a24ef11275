"""The compiler driver (one pipeline with named stops), the backend interface
(tfc.backends) and the numerics contract the differential tests read."""
from __future__ import annotations

import numpy as np
import pytest

import tfc
import tfc.backends as backends
from tfc.compiler import STAGES
from tfc.dialects import tensor as T
from tfc.passes import driver
from tfc.passes.pipeline import DEFAULT_L1, FUSED, LOOPS, PASSES, PIPELINE, STOPS, passes_between, run_pipeline

from helpers import assert_meets_contract, numerics

PROGRAM = """
func.func @f(%x: tensor<4x3xf32>, %w: tensor<3x3xf32>) -> tensor<4x3xf32> {
  %m = tfc.matmul %x, %w {transpose_a = false, transpose_b = false} : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %e = tfc.exp %m : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %s = tfc.reduce_sum %e {keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  %r = tfc.multiply %e, %s : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}
"""


# -- the pipeline ------------------------------------------------------------------------------


def test_pipeline_is_one_list_with_named_stops():
    assert STOPS == ("tensor", "fused", "loops")
    assert [names for _, names in PIPELINE] == [DEFAULT_L1, FUSED, LOOPS]
    assert FUSED[0] == "tfc-expand" and LOOPS[-1] == "tfc-lower-loops"
    assert passes_between(None, "loops") == DEFAULT_L1 + FUSED + LOOPS
    assert passes_between("tensor", "fused") == FUSED
    assert passes_between("fused", "fused") == ()
    assert all(name in PASSES for _, names in PIPELINE for name in names)
    with pytest.raises(ValueError, match="unknown pipeline stop 'l2'"):
        passes_between(None, "l2")
    with pytest.raises(ValueError, match="comes before"):
        passes_between("loops", "fused")


def test_emit_stages_are_the_stops_and_the_backends_outputs():
    assert [s for s in STAGES if s in STOPS] == list(STOPS)
    assert set(STAGES) == {"tensor-raw", *STOPS, *backends.backend("cpu").stages, *backends.backend("cuda").stages}
    assert all(get is not None for get in STAGES.values())


def test_driver_lowering_is_the_loops_passes():
    """lower() (which hands the backend L3 and the plan) gives the L3 module that
    running the pipeline's passes gives."""
    module = T.parse_module(PROGRAM)
    low = driver.lower(module)
    by_passes = run_pipeline(T.parse_module(PROGRAM), passes_between("tensor", "loops"))
    assert T.print_ir(low.loops) == T.print_ir(by_passes)
    assert T.print_ir(low.fused) == T.print_ir(run_pipeline(T.parse_module(PROGRAM), FUSED))
    assert T.print_ir(module) == T.print_ir(T.parse_module(PROGRAM))  # its input is not changed
    assert low.plan.arena_size == low.function.body.block.args[-1].type.get_shape()[0]
    assert all(v3 is not None for v3 in low.value_map.values())


def test_run_time_dims():
    assert not driver.run_time_dims(T.parse_module(PROGRAM))
    assert driver.run_time_dims(T.parse_module(PROGRAM.replace("tensor<4x3xf32>", "tensor<?x3xf32>")))


def test_specialize_then_lower():
    dyn = T.parse_module(PROGRAM.replace("tensor<4x3xf32>", "tensor<?x3xf32>"))
    module = driver.specialize(dyn, [(5, 3), (3, 3)])
    assert not driver.run_time_dims(module) and "tensor<5x3xf32>" in T.print_ir(module)
    assert driver.run_time_dims(dyn)  # a new module
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    w = np.random.default_rng(1).normal(size=(3, 3)).astype(np.float32)
    low = driver.lower(module)
    (got,) = backends.backend("cpu").run_loops(low.loops, [x, w])
    (want,) = backends.reference_executor(module).call("f", [x, w])
    assert_meets_contract(got, want)
    with pytest.raises(ValueError):
        driver.specialize(dyn, [(5, 4), (3, 3)])


# -- the backend interface ---------------------------------------------------------------------


def test_backend_registry():
    cpu = backends.backend("cpu")
    assert cpu is backends.backend("cpu") and cpu.target == "cpu" and "numpy" in cpu.stages
    cuda = backends.backend("cuda")
    assert cuda.target == "cuda" and cuda.stages == ("gpu", "ptx") and not cuda.numerics.exact
    with pytest.raises(ValueError, match="unknown target 'tpu'; targets: cpu, cuda"):
        backends.backend("tpu")
    assert backends.targets() == ("cpu", "cuda")


def test_the_function_reaches_its_backend_through_the_interface(monkeypatch):
    """tfc.function compiles through backend(target): a backend that records
    what it is given sees L3 and its plan, and runs the calls."""
    real = backends.backend("cpu")
    seen = []

    class Recording:
        target, stages, numerics = real.target, real.stages, real.numerics

        def caching(self):
            return False

        def load(self, key, name):
            raise AssertionError("not caching: no lookup")

        def compile(self, loops, plan, name, source_key=None):
            seen.append((T.print_ir(loops), plan.arena_size, source_key))
            return real.compile(loops, plan, name)

        def compile_hooked(self, *args):
            return real.compile_hooked(*args)

        def text(self, exe, stage):
            return real.text(exe, stage)

    monkeypatch.setitem(backends._LOADED, "cpu", Recording())

    @tfc.function
    def f(x):
        return tfc.exp(x) * 2.0

    x = np.linspace(-1, 1, 6, dtype=np.float32)
    assert_meets_contract(f(x).numpy(), (tfc.exp(tfc.constant(x)) * 2.0).numpy())
    (l3, arena, key), = seen
    assert "loops.parallel" in l3 and "tfc." not in l3.replace("tfc.arena_size", "")  # L3 only
    assert key is None


def test_the_cache_key_is_the_l1_text(monkeypatch, tmp_path):
    """The numpy backend caches by the L1 text the driver gives it: a second
    function with the same L1 loads the module without lowering."""
    monkeypatch.setenv("TFC_CACHE_DIR", str(tmp_path))
    lowered = []
    orig = driver.lower
    monkeypatch.setattr(driver, "lower", lambda m: lowered.append(1) or orig(m))

    def body(x):
        return tfc.tanh(x) + 1.0

    x = np.ones(3, np.float32)
    tfc.function(body)(x)
    tfc.function(body)(x)
    assert lowered == [1]
    assert len(list(tmp_path.glob("*.py"))) == 1


def test_reference_executor_and_cell():
    from tfc.core.cell import Cell

    assert backends.Cell is Cell
    module = T.parse_module(PROGRAM)
    x, w = np.ones((4, 3), np.float32), np.eye(3, dtype=np.float32)
    (r,) = backends.reference_executor(module).call("f", [x, w])
    assert r.shape == (4, 3)


# -- the numerics contract ---------------------------------------------------------------------


def test_numpy_backend_contract_is_bit_identical():
    n = numerics("cpu")
    assert n.exact and n.loosest() is None
    assert all(n.tolerance(f) is None for f in backends.OP_FAMILIES)
    one = np.float32(1)
    assert n.difference(np.array([1.0, np.nan], np.float32), np.array([1.0, np.nan], np.float32)) is None
    assert "not bit-identical" in n.difference(np.array([0.0], np.float32), np.array([-0.0], np.float32))
    assert "not bit-identical" in n.difference(one, np.nextafter(one, np.float32(2)))
    assert "expected float32[2], got float64[2]" in n.difference(np.zeros(2, np.float32), np.zeros(2))
    assert n.difference(np.array([1, 2]), np.array([1, 2])) is None
    assert n.difference(np.array([1 + 1j]), np.array([1 - 1j])) is not None
    with pytest.raises(ValueError, match="unknown op family"):
        n.tolerance("sorting")


def test_a_contract_with_tolerances():
    n = backends.Numerics("reductions in another order", {"reduction": (1e-5, 1e-6)})
    assert not n.exact and n.loosest() == (1e-5, 1e-6)
    w = np.array([1.0, 2.0], np.float32)
    g = w * np.float32(1 + 2e-6)
    assert n.difference(w, g, "reduction") is None
    assert "not bit-identical" in n.difference(w, g, "elementwise")
    assert "beyond rtol" in n.difference(w, w * np.float32(1.1), "reduction")
    assert "beyond rtol" in n.difference(w, np.array([1.0, np.nan], np.float32), "reduction")
    assert n.difference(np.array([1, 2]), np.array([1, 3]), "reduction") is not None  # integers exact
    with pytest.raises(ValueError, match="unknown op families"):
        backends.Numerics("x", {"sorting": (1, 1)})


def test_the_fuzzer_compares_through_the_contract():
    from tests.fuzz import run
    from tests.fuzz.programs import Program

    p = Program(0, 0, "float32", [()], [np.float32(1)], [], ["v0"])
    assert run.numerics() is numerics("cpu")
    assert run.compare(p, [np.array([0.0], np.float32)], [np.array([-0.0], np.float32)])[0] == "wrong-value"
    assert run.compare(p, [np.array([np.nan], np.float32)], [np.array([np.nan], np.float32)]) is None


def test_tfc_opt_lists_the_pipeline_stops():
    from tfc.cli import pass_table

    lines = pass_table().splitlines()
    for stop, names in PIPELINE:
        assert any(line.split()[0] == stop and line.endswith(" " + ",".join(names)) for line in lines), stop
    assert any(line.split()[0] == "tfc-specialize" for line in lines)


@pytest.mark.parametrize("path", ["tfc/frontend", "tfc/compiler.py", "tfc/compile_cli.py", "tfc/cli.py"])
def test_frontend_reaches_backends_only_through_the_interface(path):
    """tfc.function, tfc.compile and the CLI import tfc.backends (backend(target),
    reference_executor, Cell), never a backend's own modules."""
    from test_layers import ROOT, imports

    root = ROOT.parent / path
    for f in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
        for target, line in imports(f):
            assert not target.startswith("tfc.backends."), f"{f}:{line} imports {target}"
