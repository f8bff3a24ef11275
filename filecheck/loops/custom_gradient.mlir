// RUN: %tfc-opt %s -p tfc-fuse,tfc-lower-loops | filecheck %s
// RUN: %tfc-opt %s -p tfc-fuse,tfc-lower-loops | filecheck %s --check-prefix=NOLIB
// NOLIB-NOT: loops.library
// NOLIB-NOT: custom_gradient
// custom_gradient's marker (lower.forward) is no op in L3: its outputs are its
// operands' values, on static and run-time shapes, 0-d ones included.

func.func @marker(%x: tensor<3x2xf32>, %s: tensor<f32>) -> (tensor<3x2xf32>, tensor<f32>) {
  %y = tfc.multiply %x, %x : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  %0, %1 = tfc.custom_gradient %x, %y, %s {key = 1 : i64, n_inputs = 1 : i64} : (tensor<3x2xf32>, tensor<3x2xf32>, tensor<f32>) -> (tensor<3x2xf32>, tensor<f32>)
  %2 = tfc.add %0, %0 : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %2, %1 : tensor<3x2xf32>, tensor<f32>
}
// CHECK-LABEL: func.func @marker
// CHECK:         loops.parallel ins(%x : memref<3x2xf32>) outs(%[[Y:.*]] : memref<3x2xf32>)
// CHECK:           arith.mulf
// CHECK:         loops.parallel ins(%[[Y]] : memref<3x2xf32>) outs(%[[O:.*]] : memref<3x2xf32>)
// CHECK:           arith.addf
// CHECK:         func.return %[[O]], %s : memref<3x2xf32>, f32

func.func @dynamic(%x: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %0 = tfc.custom_gradient %x, %x {key = 2 : i64, n_inputs = 1 : i64} : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
  func.return %0 : tensor<?x2xf32>
}
// CHECK-LABEL: func.func @dynamic
// CHECK-NEXT:    func.return %x : memref<?x2xf32>
