"""The L4 tgpu dialect (tfc/dialects/gpu.py): every op prints in its custom
syntax and parses back (custom and generic forms), and the verifier refuses
what the PTX printer could not print."""
import pytest
from xdsl.dialects.builtin import f32, i32
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException

from tfc.dialects import gpu as G
from tfc.dialects.tensor import parse_module

KERNEL = """builtin.module {
  gpu.module @kernels {
    gpu.func @k(%x: !tgpu.ptr<f32, global>, %out: !tgpu.ptr<f32, global>, %n: i32) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>} {
      %tid = gpu.thread_id x
      %t = arith.index_cast %tid : index to i32
      %a, %b = tgpu.load %x[%t] {width = 2, nc} : !tgpu.ptr<f32, global>, i32
      %c = tgpu.load %x[%t] : !tgpu.ptr<f32, global>, i32
      %s = tgpu.shared {size = 32} : !tgpu.ptr<f32, shared>
      tgpu.store %a, %s[%t] : !tgpu.ptr<f32, shared>, i32
      gpu.barrier
      %one = arith.constant 1 : i32
      %r = tgpu.shuffle down %b, %one : f32
      %q = tgpu.shuffle xor %one, %one : i32
      tgpu.store %r, %c, %out[%t] : !tgpu.ptr<f32, global>, i32
      tgpu.atomic add %out[%t], %r : !tgpu.ptr<f32, global>, i32
      %old = tgpu.atomic add %out[%t], %r : !tgpu.ptr<f32, global>, i32 -> f32
      gpu.return
    }
  }
  func.func @main(%a: memref<?xf32>, %o: memref<?xf32>, %n: i1) {
    %g = arith.constant 4 : index
    %one = arith.constant 1 : index
    tgpu.launch @k grid(%g, %one, %one) block(128, 1, 1) shared(0) args(%a, %o, %n : memref<?xf32>, memref<?xf32>, i1)
    func.return
  }
}"""

# the same module as xDSL's generic form writes gpu.module, gpu.func and the gpu ops
KERNEL_GENERIC = """builtin.module {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (!tgpu.ptr<f32, global>, !tgpu.ptr<f32, global>, i32) -> (), kernel}> ({
    ^bb0(%x: !tgpu.ptr<f32, global>, %out: !tgpu.ptr<f32, global>, %n: i32):
      %tid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %t = arith.index_cast %tid : index to i32
      %a, %b = tgpu.load %x[%t] {width = 2, nc} : !tgpu.ptr<f32, global>, i32
      %c = tgpu.load %x[%t] : !tgpu.ptr<f32, global>, i32
      %s = tgpu.shared {size = 32} : !tgpu.ptr<f32, shared>
      tgpu.store %a, %s[%t] : !tgpu.ptr<f32, shared>, i32
      "gpu.barrier"() : () -> ()
      %one = arith.constant 1 : i32
      %r = tgpu.shuffle down %b, %one : f32
      %q = tgpu.shuffle xor %one, %one : i32
      tgpu.store %r, %c, %out[%t] : !tgpu.ptr<f32, global>, i32
      tgpu.atomic add %out[%t], %r : !tgpu.ptr<f32, global>, i32
      %old = tgpu.atomic add %out[%t], %r : !tgpu.ptr<f32, global>, i32 -> f32
      "gpu.return"() : () -> ()
    }) {sym_name = "k", gpu.known_block_size = array<i32: 128, 1, 1>} : () -> ()
  }) : () -> ()
  func.func @main(%a: memref<?xf32>, %o: memref<?xf32>, %n: i1) {
    %g = arith.constant 4 : index
    %one = arith.constant 1 : index
    tgpu.launch @k grid(%g, %one, %one) block(128, 1, 1) shared(0) args(%a, %o, %n : memref<?xf32>, memref<?xf32>, i1)
    func.return
  }
}"""


def _generic(m) -> str:
    import io

    buf = io.StringIO()
    Printer(stream=buf, print_generic_format=True).print_op(m)
    return buf.getvalue()


def test_round_trip():
    m = parse_module(KERNEL)
    text = str(m)
    assert text == KERNEL
    assert str(parse_module(text)) == text
    assert str(parse_module(_generic(m))) == text
    assert str(parse_module(KERNEL_GENERIC)) == KERNEL


def test_gpu_ops_custom_syntax():
    """MLIR's syntax for xDSL's gpu ops: every id and dimension, a gpu.func
    with results (not a kernel), gpu.return with values, discardable
    attributes on each."""
    src = """builtin.module {
  gpu.module @kernels attributes {tag = 1 : i64} {
    gpu.func @k() kernel attributes {gpu.known_block_size = array<i32: 32, 2, 1>, tgpu.kind = "copy"} {
      %0 = gpu.thread_id y
      %1 = gpu.block_id z
      %2 = gpu.block_dim x {note = "b"}
      %3 = gpu.grid_dim y
      gpu.barrier {note = "here"}
      gpu.return
    }
    gpu.func @f(%a: f32, %b: i32) -> (f32, i32) {
      gpu.return %a, %b : f32, i32
    }
    gpu.func @g(%a: f32) -> f32 {
      gpu.return %a : f32
    }
  }
}"""
    m = parse_module(src)
    assert str(m) == src
    assert str(parse_module(_generic(m))) == src
    from xdsl.dialects import gpu
    k, f, g = m.body.block.ops.first.body.block.ops
    assert k.kernel is not None and f.kernel is None and list(k.known_block_size.get_values()) == [32, 2, 1]
    assert [str(t) for t in f.function_type.outputs.data] == ["f32", "i32"]
    dims = [(op.name, op.dimension.data.value) for op in k.walk() if hasattr(op, "dimension")]
    assert dims == [("gpu.thread_id", "y"), ("gpu.block_id", "z"), ("gpu.block_dim", "x"), ("gpu.grid_dim", "y")]
    assert isinstance(k.body.block.ops.last, gpu.ReturnOp) and G.GPU.name == "gpu"


@pytest.mark.parametrize("src, msg", [
    ("gpu.module @m {\n  gpu.func @k() {\n    %0 = gpu.thread_id w\n    gpu.return\n  }\n}", "dimension 'w'"),
    ("gpu.module @m {\n  gpu.func @k(%a: f32) {\n    gpu.return %a, %a : f32\n  }\n}", "2 values and 1 types"),
    ("gpu.module @m {\n  gpu.func @k(f32) {\n    gpu.return\n  }\n}", "needs named arguments"),
    ("%k, %b = tgpu.philox_take", r"tgpu.philox_take needs \{blocks = N\}"),
    ('%k, %b = tgpu.philox_take {blocks = "a"}', r"tgpu.philox_take needs \{blocks = N\} \(an integer\)"),
    ("%s = tgpu.shared {size = 1.5} : !tgpu.ptr<f32, shared>", r"tgpu.shared needs \{size = N\} \(an integer\)"),
])
def test_gpu_ops_custom_syntax_errors(src, msg):
    with pytest.raises(ParseError, match=msg):
        parse_module(src)


@pytest.mark.parametrize("line", ["%s = tgpu.shared {size = 4, foo} : !tgpu.ptr<f32, shared>",
                                  "%k, %b = tgpu.philox_take {blocks = 3, bar = 2 : i32}"])
def test_leading_int_property_with_other_attributes_round_trips(line):
    """Other attributes print in a second dictionary after ``{size = N}``; it parses back."""
    printed = str(parse_module(line))
    assert "} {" in printed and str(parse_module(printed)) == printed


def test_custom_syntax_parses_in_a_fresh_process(tmp_path):
    """Reading L4 text needs nothing imported first when the context
    registers tfc.dialects.gpu.GPU as "gpu"; the PTX printer's command line
    reads it."""
    import subprocess
    import sys

    f = tmp_path / "k.mlir"
    f.write_text(KERNEL)
    out = subprocess.run([sys.executable, "-m", "tfc.backends.cuda.ptx", str(f)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert ".visible .entry k(" in out.stdout


@pytest.mark.parametrize("elem", ["f64", "f32", "f16", "i64", "i32", "i8", "i1"])
@pytest.mark.parametrize("space", ["global", "shared"])
def test_ptr_type_round_trip(elem, space):
    src = f"""func.func @f(%p: !tgpu.ptr<{elem}, {space}>, %i: i64) -> {elem} {{
  %v = tgpu.load %p[%i] : !tgpu.ptr<{elem}, {space}>, i64
  tgpu.store %v, %p[%i] : !tgpu.ptr<{elem}, {space}>, i64
  func.return %v : {elem}
}}"""
    m = parse_module(src)
    assert str(parse_module(str(m))) == str(m)
    (p,) = m.body.block.ops.first.body.block.args[:1]
    assert p.type.element_type == parse_module(f"func.func @g(%x: {elem}) {{\n  func.return\n}}").body.block.ops.first \
        .body.block.args[0].type
    assert G.element_bytes(p.type.element_type) == {"f64": 8, "f32": 4, "f16": 2, "i64": 8, "i32": 4, "i8": 1,
                                                     "i1": 1}[elem]


def _fn(body, args="%p: !tgpu.ptr<f32, global>, %i: i32, %v: f32"):
    return f"func.func @f({args}) {{\n{body}\n  func.return\n}}"


@pytest.mark.parametrize("body, msg", [
    ("  %a, %b, %c, %d = tgpu.load %p[%i] {width = 3} : !tgpu.ptr<f32, global>, i32", "has 3 results, but was given 4"),
    ("  %a, %b, %c = tgpu.load %p[%i] {width = 3} : !tgpu.ptr<f32, global>, i32", "width 3 is not 1, 2 or 4"),
    ("  %s = tgpu.shared {size = 4} : !tgpu.ptr<f32, shared>\n"
     "  %a = tgpu.load %s[%i] {nc} : !tgpu.ptr<f32, shared>, i32", "global memory only"),
    ("  %s = tgpu.shared {size = 0} : !tgpu.ptr<f32, shared>", "not positive"),
    ("  %r = tgpu.shuffle sideways %v, %i : f32", "mode 'sideways'"),
    ("  %s = tgpu.shared {size = 4} : !tgpu.ptr<f32, shared>\n"
     "  tgpu.atomic add %s[%i], %v : !tgpu.ptr<f32, shared>, i32", "global only"),
    ("  tgpu.atomic mul %p[%i], %v : !tgpu.ptr<f32, global>, i32", "kind 'mul'"),
])
def test_verifier_refuses(body, msg):
    with pytest.raises((VerifyException, ParseError), match=msg):
        parse_module(_fn(body))


def test_wide_vectors_refused():
    src = _fn("  %a, %b, %c, %d = tgpu.load %p[%i] {width = 4} : !tgpu.ptr<f64, global>, i32",
              "%p: !tgpu.ptr<f64, global>, %i: i32")
    with pytest.raises(VerifyException, match="more than 16 bytes"):
        parse_module(src)


def test_index_must_be_i32_or_i64():
    src = _fn("  %a = tgpu.load %p[%i] : !tgpu.ptr<f32, global>, i8", "%p: !tgpu.ptr<f32, global>, %i: i8")
    with pytest.raises(VerifyException, match="not i32 or i64"):
        parse_module(src)


def test_ptr_type_refuses():
    with pytest.raises(Exception, match="address space 'local'"):
        parse_module("func.func @f(%p: !tgpu.ptr<f32, local>) {\n  func.return\n}")
    with pytest.raises(Exception, match="element type i16"):
        parse_module("func.func @f(%p: !tgpu.ptr<i16, global>) {\n  func.return\n}")


def test_launch_checks_the_kernel_signature():
    bad = KERNEL.replace("args(%a, %o, %n : memref<?xf32>, memref<?xf32>, i1)", "args(%a, %n : memref<?xf32>, i1)")
    with pytest.raises(VerifyException, match="do not match @k's parameters"):
        parse_module(bad)
    bad = KERNEL.replace("block(128, 1, 1)", "block(64, 2, 1)")
    with pytest.raises(VerifyException, match="known_block_size"):
        parse_module(bad)
    bad = KERNEL.replace("block(128, 1, 1)", "block(64, 64, 1)")
    with pytest.raises(VerifyException, match="more than 1024"):
        parse_module(bad)


def test_launch_params_and_builders():
    m = parse_module(KERNEL)
    launch = next(op for op in m.walk() if isinstance(op, G.LaunchOp))
    assert launch.block_size == (128, 1, 1)
    assert launch.kernel_op().sym_name.data == "k"
    assert [G.param_type(a.type) for a in launch.args] == [G.PtrType(f32), G.PtrType(f32), i32]
    loads = [op for op in m.walk() if isinstance(op, G.LoadOp)]
    assert [ld.n for ld in loads] == [2, 1] and loads[0].nc is not None
    stores = [op for op in m.walk() if isinstance(op, G.StoreOp)]
    assert [st.n for st in stores] == [1, 2]
    (sh,) = [op for op in m.walk() if isinstance(op, G.SharedOp)]
    assert sh.nbytes == 128
