// RUN: %tfc-opt %s -p tfc-fuse,tfc-lower-loops | filecheck %s
// RUN: %tfc-opt %s -p tfc-fuse,tfc-lower-loops | filecheck %s --check-prefix=NOLIB
// NOLIB-NOT: loops.library
// guarded_select (a tape's select of a gradient that exists only on some run-time
// paths) is a kernel: an arith.select on the predicate, read at every index.

func.func @select(%p: tensor<i1>, %a: tensor<4x3xf32>, %b: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = tfc.guarded_select %p, %a, %b : (tensor<i1>, tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}
// CHECK-LABEL: func.func @select
// CHECK:         %[[O:.*]] = loops.alloc : memref<4x3xf32>
// CHECK:         loops.parallel ins(%p, %a, %b : i1, memref<4x3xf32>, memref<4x3xf32>) outs(%[[O]] : memref<4x3xf32>) attributes {shape = array<i64: 4, 3>, broadcast = [array<i64>, array<i64: 0, 1>, array<i64: 0, 1>]}
// CHECK-NEXT:    ^{{.*}}(%[[P:.*]]: i1, %[[X:.*]]: f32, %[[Y:.*]]: f32):
// CHECK-NEXT:      %[[S:.*]] = arith.select %[[P]], %[[X]], %[[Y]] : f32
// CHECK-NEXT:      loops.yield %[[S]] : f32

func.func @select_one_element_pred(%p: tensor<1xi1>, %a: tensor<5xi32>, %b: tensor<5xi32>) -> tensor<5xi32> {
  %0 = tfc.guarded_select %p, %a, %b : (tensor<1xi1>, tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  func.return %0 : tensor<5xi32>
}
// CHECK-LABEL: func.func @select_one_element_pred
// CHECK:         loops.parallel ins(%p, %a, %b : memref<1xi1>, memref<5xi32>, memref<5xi32>) outs(%{{.*}} : memref<5xi32>) attributes {shape = array<i64: 5>, broadcast = [array<i64: -1>, array<i64: 0>, array<i64: 0>]}
