// RUN: %tfc-opt %s -p tfc-fuse,tfc-lower-loops | filecheck %s
// RUN: %tfc-opt %s -p tfc-fuse,tfc-lower-loops | filecheck %s --check-prefix=NOLIB
// RUN: %tfc-opt %s -p tfc-fuse,tfc-lower-loops | %tfc-opt | filecheck %s --check-prefix=ROUND
// NOLIB-NOT: loops.library
// The scatter-adds (unsorted_segment_sum, gather_grad_like) lower to a check of
// the indices (loops.raise: eager's error), a fill of zeros and a scatter kernel:
// a loops.parallel with no outputs whose body adds into the result with
// loops.add_at (in the iteration space's row-major order on the numpy backend,
// atomically on a GPU); unsorted_segment_sum drops negative ids with a mask.

func.func @segment_sum(%d: tensor<6x3xf32>, %i: tensor<6xi32>) -> tensor<4x3xf32> {
  %0 = tfc.unsorted_segment_sum %d, %i {num_segments = 4 : i64} : (tensor<6x3xf32>, tensor<6xi32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}
// CHECK-LABEL: func.func @segment_sum
// CHECK:         %[[F:.*]] = loops.view %arena {offset = 0 : i64} : memref<64xi8> -> memref<i1>
// CHECK:         %[[O:.*]] = loops.alloc : memref<4x3xf32>
// CHECK:         loops.parallel ins(%i : memref<6xi32>) outs(%[[F]] : memref<i1>) {{.*}}reduce = ["any"], reduce_axes = array<i64: 0>}
// CHECK:           arith.constant 4 : i64
// CHECK-NEXT:      arith.cmpi sge
// CHECK-NOT:       arith.ori
// CHECK:         %[[B:.*]] = loops.load %[[F]] : memref<i1> -> i1
// CHECK:         loops.if %[[B]] : (i1) -> () {
// CHECK-NEXT:      loops.raise "unsorted_segment_sum"(%d, %i : memref<6x3xf32>, memref<6xi32>) {attrs = {num_segments = 4 : i64}}
// CHECK:         loops.parallel ins() outs(%[[O]] : memref<4x3xf32>) attributes {shape = array<i64: 4, 3>, broadcast = []}
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      loops.yield %[[Z]] : f32
// CHECK:         loops.parallel ins(%d, %i : memref<6x3xf32>, memref<6xi32>) outs() attributes {shape = array<i64: 6, 3>, broadcast = [array<i64: 0, 1>, array<i64: 0>]}
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f32, %[[ID:.*]]: i32):
// CHECK-NEXT:      %[[R:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK-NEXT:      %[[C:.*]] = loops.index 1 : index
// CHECK:           %[[K:.*]] = arith.cmpi sge, {{.*}} : i64
// CHECK-NEXT:      loops.add_at %[[X]], %[[O]][%[[R]], %[[C]]] if %[[K]] : f32 -> memref<4x3xf32>
// CHECK-NEXT:      loops.yield
// CHECK:         func.return %[[O]] : memref<4x3xf32>
// ROUND-LABEL: func.func @segment_sum
// ROUND:         loops.parallel ins(%{{.*}}, %{{.*}} : memref<6x3xf32>, memref<6xi32>) outs() attributes
// ROUND:           loops.add_at %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] if %{{.*}} : f32 -> memref<4x3xf32>

func.func @gather_grad_like(%g: tensor<2x4xf32>, %i: tensor<4xi64>, %like: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = tfc.gather_grad_like %g, %i, %like {axis = 1 : i64} : (tensor<2x4xf32>, tensor<4xi64>, tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}
// indices in [-5, 5) (np.add.at wraps negatives), no mask
// CHECK-LABEL: func.func @gather_grad_like
// CHECK:         loops.parallel ins(%i : memref<4xi64>) outs(%{{.*}} : memref<i1>) {{.*}}reduce = ["any"]
// CHECK:           arith.constant -5 : i64
// CHECK:         loops.raise "gather_grad_like"(%g, %i, %like : memref<2x4xf32>, memref<4xi64>, memref<2x5xf32>)
// CHECK:         loops.parallel ins(%g, %i : memref<2x4xf32>, memref<4xi64>) outs() attributes {shape = array<i64: 2, 4>, broadcast = [array<i64: 0, 1>, array<i64: 1>]}
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: f32, %[[ID:.*]]: i64):
// CHECK:           %[[W:.*]] = arith.select
// CHECK-NEXT:      %[[P:.*]] = loops.index 0 : index
// CHECK-NEXT:      %[[R:.*]] = arith.index_cast %[[W]] : i64 to index
// CHECK-NEXT:      loops.add_at %[[X]], %{{.*}}[%[[P]], %[[R]]] : f32 -> memref<2x5xf32>
// CHECK-NEXT:      loops.yield
