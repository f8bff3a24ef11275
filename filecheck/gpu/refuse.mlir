// RUN: not %tfc-ptx %s 2>&1 | filecheck %s
// Float64 transcendental functions without a PTX sequence (all but exp, log,
// expm1, tanh, sin, cos, powf, log1p) are refused by name.

builtin.module {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (!tgpu.ptr<f64, global>) -> (), kernel}> ({
    ^bb0(%x: !tgpu.ptr<f64, global>):
      %c0 = arith.constant 0 : i32
      %v = tgpu.load %x[%c0] : !tgpu.ptr<f64, global>, i32
      %e = math.tan %v : f64
      tgpu.store %e, %x[%c0] : !tgpu.ptr<f64, global>, i32
      "gpu.return"() : () -> ()
    }) {sym_name = "k", gpu.known_block_size = array<i32: 32, 1, 1>} : () -> ()
  }) : () -> ()
}

// CHECK: NotImplementedError: PTX printer: math.tan on f64 (transcendental functions are float32 only, but for math.cos, math.exp, math.expm1, math.log, math.log1p, math.powf, math.sin, math.tanh on float64; kernel @k)
