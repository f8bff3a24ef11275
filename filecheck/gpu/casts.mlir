// RUN: %tfc-ptx %s | filecheck %s
// arith.fptosi gives numpy's (x86's) result: cvt.rzi, then the lowest integer
// where the value is NaN or at least 2^(w-1) (cvt.rzi saturates those to the
// highest); arith.minimumf on f64 is numpy's minimum (a where a < b or a is
// NaN, else b: equal operands give b, so minimum(-0.0, +0.0) is +0.0).
// The kernel is written in the gpu ops' custom syntax.

builtin.module {
  gpu.module @kernels {
    gpu.func @casts(%x: f32, %y: f64, %o32: !tgpu.ptr<i32, global>, %o64: !tgpu.ptr<i64, global>, %of: !tgpu.ptr<f64, global>) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>} {
      %c0 = arith.constant 0 : i32
      %a = arith.fptosi %x : f32 to i32
      tgpu.store %a, %o32[%c0] : !tgpu.ptr<i32, global>, i32
      %b = arith.fptosi %y : f64 to i64
      tgpu.store %b, %o64[%c0] : !tgpu.ptr<i64, global>, i32
      %m = arith.minimumf %y, %y : f64
      tgpu.store %m, %of[%c0] : !tgpu.ptr<f64, global>, i32
      gpu.return
    }
  }
}

// CHECK:      ld.param.f32 %[[X:f[0-9]+]], [casts_param_0];
// CHECK-NEXT: ld.param.f64 %[[Y:fd[0-9]+]], [casts_param_1];
// CHECK:      cvt.rzi.s32.f32 %[[A:r[0-9]+]], %[[X]];
// CHECK-NEXT: setp.geu.f32 %[[P:p[0-9]+]], %[[X]], 0f4F000000;
// CHECK-NEXT: @%[[P]] mov.u32 %[[A]], 0x80000000;
// CHECK:      st.global.u32 [%{{rd[0-9]+}}], %[[A]];
// CHECK:      cvt.rzi.s64.f64 %[[B:rd[0-9]+]], %[[Y]];
// CHECK-NEXT: setp.geu.f64 %[[Q:p[0-9]+]], %[[Y]], 0d43E0000000000000;
// CHECK-NEXT: @%[[Q]] mov.u64 %[[B]], 0x8000000000000000;
// CHECK:      st.global.u64 [%{{rd[0-9]+}}], %[[B]];
// CHECK:      setp.lt.f64 %[[LT:p[0-9]+]], %[[Y]], %[[Y]];
// CHECK-NEXT: testp.notanumber.f64 %[[N:p[0-9]+]], %[[Y]];
// CHECK-NEXT: or.pred %[[LT]], %[[LT]], %[[N]];
// CHECK-NEXT: selp.f64 %[[M:fd[0-9]+]], %[[Y]], %[[Y]], %[[LT]];
// CHECK:      st.global.f64 [%{{rd[0-9]+}}], %[[M]];
// CHECK-NOT:  max.NaN
// CHECK-NOT:  min.NaN
