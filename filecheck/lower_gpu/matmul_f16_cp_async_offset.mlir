// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s
// RUN: sed -e 's/\[1\] \[1920\]/[8] [1920]/; s/offset: 1>/offset: 8>/g' %s | %tfc-opt - -p tfc-lower-gpu | filecheck %s --check-prefix=ALIGNED

// cp.async staging needs each row's first element 16-byte aligned in memory, not
// only in the layout: A here is a reshape of a slice from element 1 (its layout
// offset is 0, its data start 2 bytes past an aligned address), so A is staged
// with plain loads and only B (rows of 48 halves from an aligned start) with
// tgpu.cp_async. From element 8 (16 bytes) both are.
func.func @mm(%x: memref<1928xf16>, %y: memref<33x48xf16>, %arena: memref<0xi8>) -> memref<40x33xf16> {
  %s = loops.subview %x [1] [1920] [1] : memref<1928xf16> -> memref<1920xf16, strided<[1], offset: 1>>
  %a = loops.reshape %s : memref<1920xf16, strided<[1], offset: 1>> -> memref<40x48xf16>
  %0 = loops.alloc : memref<40x33xf16>
  loops.library "matmul"(%a, %y : memref<40x48xf16>, memref<33x48xf16>) outs(%0 : memref<40x33xf16>) {attrs = {transpose_a = false, transpose_b = true}} -> ()
  func.return %0 : memref<40x33xf16>
}

// CHECK:       gpu.func @k0_matmul_nt_f16_mma_64x64(
// CHECK:         %[[SA:.*]] = tgpu.shared {size = 2560} : !tgpu.ptr<f16, shared>
// CHECK-NEXT:    %[[SB:.*]] = tgpu.shared {size = 2560} : !tgpu.ptr<f16, shared>
// CHECK-NOT:     tgpu.cp_async %[[SA]]
// CHECK-COUNT-2: tgpu.cp_async %[[SB]]
// CHECK-NOT:     tgpu.cp_async %[[SA]]
// CHECK:         tgpu.cp_async_wait

// ALIGNED-COUNT-2: tgpu.cp_async %{{.*}}, %0[
// ALIGNED-COUNT-2: tgpu.cp_async %{{.*}}, %1[
