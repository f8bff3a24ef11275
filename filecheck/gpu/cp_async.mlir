// RUN: %tfc-opt %s | filecheck %s
// RUN: %tfc-opt %s | %tfc-opt | filecheck %s
// RUN: %tfc-opt %s | %tfc-ptx - | filecheck %s --check-prefix=PTX
// RUN: sed -e 's/%buf\[%i\], %g\[%i\]/%g[%i], %g[%i]/; s/!tgpu.ptr<f16, shared>, !tgpu.ptr<f16, global>, i32/!tgpu.ptr<f16, global>, !tgpu.ptr<f16, global>, i32/' %s | not %tfc-opt - 2>&1 | filecheck %s --check-prefix=ERR
// tgpu.cp_async (16 bytes from global to shared memory, the first %n read, the
// rest zero) and tgpu.cp_async_wait print and parse back, and print as
// cp.async.cg.shared.global with a 32-bit shared and a 64-bit global address,
// and cp.async.wait_all.

// CHECK: tgpu.cp_async %buf[%i], %g[%i], %n : !tgpu.ptr<f16, shared>, !tgpu.ptr<f16, global>, i32
// CHECK-NEXT: tgpu.cp_async_wait

// PTX: cp.async.cg.shared.global [%r{{[0-9]+}}], [%rd{{[0-9]+}}], 16, %r{{[0-9]+}};
// PTX-NEXT: cp.async.wait_all;

// ERR: copies from a global pointer to a shared one

builtin.module {
  gpu.module @kernels {
    gpu.func @k(%g: !tgpu.ptr<f16, global>, %n: i32) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>, tgpu.kind = "copy", tgpu.index = "i32"} {
      %tid0 = gpu.thread_id x
      %t = arith.index_cast %tid0 : index to i32
      %c8 = arith.constant 8 : i32
      %i = arith.muli %t, %c8 : i32
      %buf = tgpu.shared {size = 256} : !tgpu.ptr<f16, shared>
      tgpu.cp_async %buf[%i], %g[%i], %n : !tgpu.ptr<f16, shared>, !tgpu.ptr<f16, global>, i32
      tgpu.cp_async_wait
      gpu.return
    }
  }
}
