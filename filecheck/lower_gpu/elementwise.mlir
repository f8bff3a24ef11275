// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s

// A broadcast input is read through the digits of the flat index; the
// contiguous identity-mapped ones at the flat index itself.
func.func @bias(%x: memref<5x7xf32>, %b: memref<7xf32>, %arena: memref<0xi8>) -> memref<5x7xf32> {
  %0 = loops.alloc : memref<5x7xf32>
  loops.parallel ins(%x, %b : memref<5x7xf32>, memref<7xf32>) outs(%0 : memref<5x7xf32>) attributes {shape = array<i64: 5, 7>, broadcast = [array<i64: 0, 1>, array<i64: 1>]} {
  ^bb0(%a: f32, %c: f32):
    %e = math.exp %a : f32
    %s = arith.addf %e, %c : f32
    loops.yield %s : f32
  }
  func.return %0 : memref<5x7xf32>
}

// CHECK-LABEL: gpu.module @kernels {
// CHECK:       gpu.func @k0_fused_exp_add(%{{.*}}: !tgpu.ptr<f32, global>, %{{.*}}: !tgpu.ptr<f32, global>, %{{.*}}: !tgpu.ptr<f32, global>) kernel attributes {{[{]}}gpu.known_block_size = array<i32: 256, 1, 1>, tgpu.kind = "elementwise", tgpu.index = "i32", tgpu.width = 1 : i64} {
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK-NEXT:      %[[COL:.*]] = arith.remui %[[I]], %{{.*}} : i32
// CHECK-NEXT:      %[[X:.*]] = tgpu.load %{{.*}}[%[[I]]] {nc} : !tgpu.ptr<f32, global>, i32
// CHECK-NEXT:      %[[B:.*]] = tgpu.load %{{.*}}[%[[COL]]] {nc} : !tgpu.ptr<f32, global>, i32
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[X]] : f32
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[E]], %[[B]] : f32
// CHECK-NEXT:      tgpu.store %[[S]], %{{.*}}[%[[I]]] : !tgpu.ptr<f32, global>, i32

// Contiguous, unbroadcast, aligned: 16-byte vectors, then a scalar tail for
// 1001 % 4: the copy reading the argument %x (the runtime aligns an
// argument that is a view at an odd offset, a GPU tensor x[1:]) and the
// kernel reading the planned buffer.
func.func @vec(%x: memref<1001xf32>, %arena: memref<4096xi8>) -> memref<1001xf32> {
  %a = loops.view %arena {offset = 0 : i64} : memref<4096xi8> -> memref<1001xf32>
  loops.copy %x, %a : memref<1001xf32>, memref<1001xf32>
  %0 = loops.alloc : memref<1001xf32>
  loops.parallel ins(%a : memref<1001xf32>) outs(%0 : memref<1001xf32>) attributes {shape = array<i64: 1001>, broadcast = [array<i64: 0>]} {
  ^bb0(%v: f32):
    %m = arith.mulf %v, %v : f32
    loops.yield %m : f32
  }
  func.return %0 : memref<1001xf32>
}

// CHECK:       gpu.func @k1_copy({{.*}}) kernel attributes {{.*}}tgpu.width = 4 : i64} {
// CHECK:       gpu.func @k2_fused_mul({{.*}}) kernel attributes {{.*}}tgpu.width = 4 : i64} {
// CHECK:         scf.for %[[Q:.*]] = %{{.*}} to %{{.*}} step
// CHECK:           %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = tgpu.load %{{.*}}[%{{.*}}] {width = 4, nc}
// CHECK-COUNT-4:   arith.mulf
// CHECK:           tgpu.store %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}[%{{.*}}] : !tgpu.ptr<f32, global>, i32
// CHECK:         scf.for
// CHECK:           tgpu.load %{{.*}}[%{{.*}}] {nc} : !tgpu.ptr<f32, global>, i32

// A strided view in (a transpose, a reversed slice) and a strided view out:
// element indices from the digits and the layouts' strides (negative ones too).
func.func @views(%x: memref<6x9xf32>, %arena: memref<256xi8>) -> memref<4x6xf32> {
  %t = loops.transpose_view %x {permutation = array<i64: 1, 0>} : memref<6x9xf32> -> memref<9x6xf32, strided<[1, 9]>>
  %s = loops.subview %t [8, 0] [4, 6] [-2, 1] : memref<9x6xf32, strided<[1, 9]>> -> memref<4x6xf32, strided<[-2, 9], offset: 8>>
  %0 = loops.alloc : memref<4x6xf32>
  loops.parallel ins(%s : memref<4x6xf32, strided<[-2, 9], offset: 8>>) outs(%0 : memref<4x6xf32>) attributes {shape = array<i64: 4, 6>, broadcast = [array<i64: 0, 1>]} {
  ^bb0(%a: f32):
    loops.yield %a : f32
  }
  func.return %0 : memref<4x6xf32>
}

// CHECK:       gpu.func @k3_copy({{.*}}) kernel attributes {{.*}}tgpu.kind = "copy"
// CHECK-DAG:     %[[C6:.*]] = arith.constant 6 : i32
// CHECK-DAG:     %[[CM2:.*]] = arith.constant -2 : i32
// CHECK-DAG:     %[[C9:.*]] = arith.constant 9 : i32
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK-NEXT:      %[[J:.*]] = arith.remui %[[I]], %[[C6]] : i32
// CHECK-NEXT:      %[[R:.*]] = arith.divui %[[I]], %[[C6]] : i32
// CHECK-NEXT:      %[[A:.*]] = arith.muli %[[R]], %[[CM2]] : i32
// CHECK-NEXT:      %[[B:.*]] = arith.muli %[[J]], %[[C9]] : i32
// CHECK-NEXT:      %[[IDX:.*]] = arith.addi %[[A]], %[[B]] : i32
// CHECK-NEXT:      tgpu.load %{{.*}}[%[[IDX]]] {nc}

// Nothing to do for zero elements: no kernel, no launch.
func.func @empty(%x: memref<0x4xf32>, %arena: memref<0xi8>) -> memref<0x4xf32> {
  %0 = loops.alloc : memref<0x4xf32>
  loops.parallel ins(%x : memref<0x4xf32>) outs(%0 : memref<0x4xf32>) attributes {shape = array<i64: 0, 4>, broadcast = [array<i64: 0, 1>]} {
  ^bb0(%a: f32):
    loops.yield %a : f32
  }
  func.return %0 : memref<0x4xf32>
}

// The host functions keep their L3 ops; each kernel is a tgpu.launch.
// CHECK-LABEL: func.func @bias
// CHECK:         %[[OUT:.*]] = loops.alloc : memref<5x7xf32>
// CHECK-NEXT:    %[[G1:.*]] = arith.constant 1 : index
// CHECK:         tgpu.launch @k0_fused_exp_add grid(%[[G1]], %{{.*}}, %{{.*}}) block(256, 1, 1) shared(0) args(%x, %b, %[[OUT]] : memref<5x7xf32>, memref<7xf32>, memref<5x7xf32>)
// CHECK-NOT:     loops.parallel
// CHECK-LABEL: func.func @views
// CHECK:         %[[T:.*]] = loops.transpose_view %x
// CHECK:         %[[S:.*]] = loops.subview %[[T]]
// CHECK:         tgpu.launch @k3_copy {{.*}} args(%[[S]], %{{.*}} : memref<4x6xf32, strided<[-2, 9], offset: 8>>, memref<4x6xf32>)
// CHECK-LABEL: func.func @empty
// CHECK-NEXT:    loops.alloc
// CHECK-NEXT:    func.return
