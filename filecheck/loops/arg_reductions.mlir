// RUN: %tfc-opt %s -p tfc-fuse,tfc-lower-loops | filecheck %s
// RUN: %tfc-opt %s -p tfc-fuse,tfc-lower-loops | filecheck %s --check-prefix=NOLIB
// RUN: %tfc-opt %s -p tfc-fuse | filecheck %s --check-prefix=FUSED
// NOLIB-NOT: loops.library
// argmax / argmin are arg-reductions of loops.parallel (reduce kinds "argmax" /
// "argmin" over one axis: the index of the first extreme, the first NaN as numpy),
// fused with their elementwise producers; no loops.library.

func.func @argmax_rows(%x: tensor<4x6xf32>) -> tensor<4xi64> {
  %0 = tfc.argmax %x {axis = 1 : i64, output_type = i64} : (tensor<4x6xf32>) -> tensor<4xi64>
  func.return %0 : tensor<4xi64>
}
// CHECK-LABEL: func.func @argmax_rows
// CHECK:         %[[O:.*]] = loops.alloc : memref<4xi64>
// CHECK:         loops.parallel ins(%x : memref<4x6xf32>) outs(%[[O]] : memref<4xi64>) attributes {shape = array<i64: 4, 6>, broadcast = [array<i64: 0, 1>], reduce = ["argmax"], reduce_axes = array<i64: 1>}
// CHECK-NEXT:    ^{{.*}}(%[[E:.*]]: f32):
// CHECK-NEXT:      loops.yield %[[E]] : f32

func.func @argmin_of_exp_cols(%x: tensor<4x6xf32>) -> tensor<6xi32> {
  %e = tfc.exp %x : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %0 = tfc.argmin %e {axis = 0 : i64, output_type = i32} : (tensor<4x6xf32>) -> tensor<6xi32>
  func.return %0 : tensor<6xi32>
}
// the producer is in the kernel's body; an i32 index
// CHECK-LABEL: func.func @argmin_of_exp_cols
// CHECK:         loops.parallel ins(%x : memref<4x6xf32>) outs(%{{.*}} : memref<6xi32>) attributes {shape = array<i64: 4, 6>, broadcast = [array<i64: 0, 1>], reduce = ["argmin"], reduce_axes = array<i64: 0>}
// CHECK-NEXT:    ^{{.*}}(%[[E:.*]]: f32):
// CHECK-NEXT:      %[[X:.*]] = math.exp %[[E]] : f32
// CHECK-NEXT:      loops.yield %[[X]] : f32
// FUSED-LABEL: func.func @argmin_of_exp_cols
// FUSED:         tfc.fused(%x) {{.*}}reduce = ["argmin"], reduce_axes = array<i64: 0>} : (tensor<4x6xf32>) -> tensor<6xi32>
// FUSED-NOT:     tfc.argmin

func.func @argmax_vector(%x: tensor<5xi32>) -> tensor<i64> {
  %0 = tfc.argmax %x {axis = 0 : i64, output_type = i64} : (tensor<5xi32>) -> tensor<i64>
  func.return %0 : tensor<i64>
}
// a 0-d index: a 0-d buffer, read on the host where it is returned
// CHECK-LABEL: func.func @argmax_vector
// CHECK:         loops.parallel ins(%x : memref<5xi32>) outs(%[[O:.*]] : memref<i64>) {{.*}}reduce = ["argmax"], reduce_axes = array<i64: 0>}
// CHECK:         %[[S:.*]] = loops.load %[[O]] : memref<i64> -> i64
// CHECK:         func.return %[[S]] : i64
