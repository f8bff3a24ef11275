// RUN: %tfc-ptx %s | filecheck %s
// float64 sin (tfc/backends/cuda/ptx_math.py): Cody-Waite with pi/2 in three
// float64 parts (the first product exact through fma) for |x| < 2^20 pi/2;
// a branch past the Payne-Hanek reduction, which only larger |x| take: x's
// significand in two parts times each 24-bit chunk of 2/pi (0xA2F983 first),
// scaled by a power of two built from the exponent (0 where the product is a
// multiple of 4 or below 2^-200), taken mod 4 exactly; then FreeBSD's kernels
// by quadrant; tiny |x| gives x, inf and NaN give NaN.

// CHECK: .entry k(
// CHECK: mul.rn.f64 %[[T:fd[0-9]+]], %fd1, 0d3FE45F306DC9C883;
// CHECK-NEXT: cvt.rni.f64.f64 %[[N:fd[0-9]+]], %[[T]];
// CHECK-NEXT: neg.f64 %[[NN:fd[0-9]+]], %[[N]];
// CHECK-NEXT: fma.rn.f64 %{{fd[0-9]+}}, %[[NN]], 0d3FF921FB54442D18, %fd1;
// CHECK: setp.lt.f64 %[[P:p[0-9]+]], %{{fd[0-9]+}}, 0d413921FB54442D18;
// CHECK-NEXT: @%[[P]] bra $[[SKIP:L_k_[0-9]+]];
// CHECK: setp.gt.s32 %[[BIG:p[0-9]+]], %{{r[0-9]+}}, 1;
// CHECK-NEXT: @%[[BIG]] mov.f64 %{{fd[0-9]+}}, 0d0000000000000000;
// CHECK-NEXT: setp.lt.s32 %{{p[0-9]+}}, %{{r[0-9]+}}, -200;
// CHECK: mul.rn.f64 %{{fd[0-9]+}}, %{{fd[0-9]+}}, 0d41645F3060000000;
// CHECK: fma.rn.f64 %{{fd[0-9]+}}, %{{fd[0-9]+}}, 0dC010000000000000, %{{fd[0-9]+}};
// CHECK: $[[SKIP]]:
// CHECK: selp.f64
// CHECK: setp.lt.f64 %[[TINY:p[0-9]+]], %{{fd[0-9]+}}, 0d3E40000000000000;
// CHECK-NEXT: @%[[TINY]] mov.f64 %{{fd[0-9]+}}, %fd1;
// CHECK: setp.gtu.f64 %[[INF:p[0-9]+]], %{{fd[0-9]+}}, 0d7FEFFFFFFFFFFFFF;
// CHECK-NEXT: @%[[INF]] mov.f64 %{{fd[0-9]+}}, 0d7FF8000000000000;

builtin.module {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (!tgpu.ptr<f64, global>) -> (), kernel}> ({
    ^bb0(%x: !tgpu.ptr<f64, global>):
      %c0 = arith.constant 0 : i32
      %v = tgpu.load %x[%c0] : !tgpu.ptr<f64, global>, i32
      %e = math.sin %v : f64
      tgpu.store %e, %x[%c0] : !tgpu.ptr<f64, global>, i32
      "gpu.return"() : () -> ()
    }) {sym_name = "k", gpu.known_block_size = array<i32: 32, 1, 1>} : () -> ()
  }) : () -> ()
}

