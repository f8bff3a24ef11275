// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s
// RUN: sed -e 's/40x48xf16/40x45xf16/g; s/33x48xf16/33x45xf16/g' %s | %tfc-opt - -p tfc-lower-gpu | filecheck %s --check-prefix=PLAIN

// The tiled float16 tensor-core matmul stages an operand whose k is contiguous
// and whose rows start 16-byte aligned (here A, and B transposed: rows of 48
// halves) with tgpu.cp_async: 64 rows x 4 chunks of 8 halves = 2 copies per
// thread per operand, each reading only the halves before K (none past the
// rows), then tgpu.cp_async_wait and the barrier before the ldmatrix loads.
// Rows of 45 halves are not 16-byte aligned: plain loads and stores.
func.func @mm(%x: memref<40x48xf16>, %y: memref<33x48xf16>, %arena: memref<0xi8>) -> memref<40x33xf16> {
  %0 = loops.alloc : memref<40x33xf16>
  loops.library "matmul"(%x, %y : memref<40x48xf16>, memref<33x48xf16>) outs(%0 : memref<40x33xf16>) {attrs = {transpose_a = false, transpose_b = true}} -> ()
  func.return %0 : memref<40x33xf16>
}

// CHECK:       gpu.func @k0_matmul_nt_f16_mma_64x64(
// CHECK:         %[[SA:.*]] = tgpu.shared {size = 2560} : !tgpu.ptr<f16, shared>
// CHECK-NEXT:    %[[SB:.*]] = tgpu.shared {size = 2560} : !tgpu.ptr<f16, shared>
// CHECK:         scf.for
// CHECK-COUNT-2:   tgpu.cp_async %[[SA]][%{{.*}}], %0[%{{.*}}], %{{.*}} : !tgpu.ptr<f16, shared>, !tgpu.ptr<f16, global>, i32
// CHECK-COUNT-2:   tgpu.cp_async %[[SB]][%{{.*}}], %1[%{{.*}}], %{{.*}} : !tgpu.ptr<f16, shared>, !tgpu.ptr<f16, global>, i32
// CHECK-NEXT:      tgpu.cp_async_wait
// CHECK-NEXT:      gpu.barrier
// CHECK:           tgpu.ldmatrix x4 %[[SA]]

// PLAIN-NOT: tgpu.cp_async
// PLAIN: tgpu.ldmatrix x4
// PLAIN-NOT: tgpu.cp_async
