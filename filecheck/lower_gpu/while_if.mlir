// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s

// Control flow stays on the host: the kernels of a loops.while body and of a
// loops.if branch are launches there; the 0-d predicate kernel (shape ()) is one
// thread; loops.load, the host read, stays.
func.func @f(%x: memref<8xf32>, %n: i32, %arena: memref<128xi8>) -> memref<8xf32> attributes {tfc.arena_size = 128 : i64} {
  %0 = loops.view %arena {offset = 0 : i64} : memref<128xi8> -> memref<8xf32>
  %1 = loops.view %arena {offset = 0 : i64} : memref<128xi8> -> memref<f32>
  %2 = loops.view %arena {offset = 64 : i64} : memref<128xi8> -> memref<i1>
  %3 = arith.constant 0 : i32
  loops.copy %x, %0 : memref<8xf32>, memref<8xf32>
  %4, %5 = loops.while %3, %0 : (i32, memref<8xf32>) -> (i32, memref<8xf32>) cond {
  ^bb0(%6: i32, %7: memref<8xf32>):
    %8 = arith.cmpi slt, %6, %n : i32
    loops.condition %8 : i1
  } do {
  ^bb0(%9: i32, %10: memref<8xf32>):
    loops.parallel ins(%10 : memref<8xf32>) outs(%10 : memref<8xf32>) attributes {shape = array<i64: 8>, broadcast = [array<i64: 0>]} {
    ^bb0(%11: f32):
      %12 = arith.constant 5.000000e-01 : f32
      %13 = arith.mulf %11, %12 : f32
      %14 = arith.constant 1.000000e+00 : f32
      %15 = arith.addf %13, %14 : f32
      loops.yield %15 : f32
    }
    %16 = arith.constant 1 : i32
    %17 = arith.addi %9, %16 : i32
    loops.yield %17, %10 : i32, memref<8xf32>
  }
  %18 = loops.alloc : memref<8xf32>
  loops.copy %5, %18 : memref<8xf32>, memref<8xf32>
  loops.parallel ins(%18 : memref<8xf32>) outs(%1 : memref<f32>) attributes {shape = array<i64: 8>, broadcast = [array<i64: 0>], reduce = ["sum"], reduce_axes = array<i64: 0>} {
  ^bb0(%19: f32):
    loops.yield %19 : f32
  }
  loops.parallel ins(%1 : memref<f32>) outs(%2 : memref<i1>) attributes {shape = array<i64>, broadcast = [array<i64>]} {
  ^bb0(%20: f32):
    %21 = arith.constant 0.000000e+00 : f32
    %22 = arith.cmpf ogt, %20, %21 : f32
    loops.yield %22 : i1
  }
  %23 = loops.load %2 : memref<i1> -> i1
  %24 = loops.if %23 : (i1) -> memref<8xf32> {
    %25 = loops.alloc : memref<8xf32>
    loops.parallel ins(%18 : memref<8xf32>) outs(%25 : memref<8xf32>) attributes {shape = array<i64: 8>, broadcast = [array<i64: 0>]} {
    ^bb0(%26: f32):
      %27 = arith.constant 1.000000e+00 : f32
      %28 = arith.addf %26, %27 : f32
      loops.yield %28 : f32
    }
    loops.yield %25 : memref<8xf32>
  } else {
    loops.yield %18 : memref<8xf32>
  }
  func.return %24 : memref<8xf32>
}

// The loop variable's kernel writes in place (one parameter, read and written): not read through
// the read-only cache (no nc); the buffer is a planned arena view, aligned:
// 16-byte vectors.
// CHECK:       gpu.func @k0_copy(
// CHECK:       gpu.func @k1_fused_mul_add({{.*}}) kernel attributes {{.*}}tgpu.width = 4 : i64} {
// CHECK:         tgpu.load %{{.*}}[%{{.*}}] {width = 4} : !tgpu.ptr<f32, global>, i32
// CHECK:       gpu.func @k2_copy(
// CHECK:       gpu.func @k3_sum_all(
// CHECK:       gpu.func @k4_fused_cmp(%{{.*}}: !tgpu.ptr<f32, global>, %{{.*}}: !tgpu.ptr<i1, global>) kernel
// CHECK:         %[[V:.*]] = tgpu.load %{{.*}}[%{{.*}}] {nc} : !tgpu.ptr<f32, global>, i32
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK-NEXT:      arith.cmpf ogt, %[[V]], %{{.*}} : f32
// CHECK-NEXT:      tgpu.store %{{.*}}, %{{.*}}[%{{.*}}] : !tgpu.ptr<i1, global>, i32
// CHECK:       gpu.func @k5_fused_add(
// CHECK-LABEL: func.func @f
// CHECK:         tgpu.launch @k0_copy {{.*}} args(%x, %{{.*}} : memref<8xf32>, memref<8xf32>)
// CHECK:         loops.while
// CHECK:         } do {
// CHECK:           tgpu.launch @k1_fused_mul_add {{.*}} args(%{{.*}} : memref<8xf32>)
// CHECK-NOT:     loops.parallel
// CHECK:           loops.yield
// CHECK:         tgpu.launch @k2_copy
// CHECK:         tgpu.launch @k3_sum_all
// CHECK:         tgpu.launch @k4_fused_cmp
// CHECK:         %[[P:.*]] = loops.load %{{.*}} : memref<i1> -> i1
// CHECK:         loops.if %[[P]] : (i1) -> memref<8xf32> {
// CHECK:           %[[NEW:.*]] = loops.alloc : memref<8xf32>
// CHECK:           tgpu.launch @k5_fused_add {{.*}} args(%{{.*}}, %[[NEW]] : memref<8xf32>, memref<8xf32>)
// CHECK:           loops.yield %[[NEW]] : memref<8xf32>
// CHECK:         } else {
