// RUN: %tfc-opt %s -p tfc-fold,tfc-dce | filecheck %s

// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %[[C:.*]] = tfc.constant dense<[2.000000e+00, 5.000000e+00]> : tensor<2xf32>
// CHECK-NEXT:    %[[R:.*]] = tfc.add %x, %[[C]]
// CHECK-NEXT:    func.return %[[R]]
func.func @chain(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = tfc.constant dense<[1.0, 4.0]> : tensor<2xf32>
  %b = tfc.constant dense<1.0> : tensor<f32>
  %s = tfc.add %a, %b : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %r = tfc.add %x, %s : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}

// Attribute-only ops fold too; reductions and casts use the registry kernels.
// CHECK-LABEL: func.func @attrs
// CHECK-NEXT:    %[[C:.*]] = tfc.constant dense<3> : tensor<i32>
// CHECK-NEXT:    func.return %[[C]]
func.func @attrs() -> tensor<i32> {
  %o = tfc.ones {shape = array<i64: 3>, dtype = f32} : () -> tensor<3xf32>
  %s = tfc.reduce_sum %o {axis = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  %i = tfc.cast %s {dtype = i32} : (tensor<f32>) -> tensor<i32>
  func.return %i : tensor<i32>
}

// Large results are not materialized.
// CHECK-LABEL: func.func @big
// CHECK:         tfc.zeros
func.func @big() -> tensor<100x100xf32> {
  %z = tfc.zeros {shape = array<i64: 100, 100>, dtype = f32} : () -> tensor<100x100xf32>
  func.return %z : tensor<100x100xf32>
}

// Variables are state: a read is never folded.
// CHECK-LABEL: func.func @var
// CHECK:         tfc.read_variable
// CHECK:         tfc.negative
func.func @var(%v: !tfc.ref<tensor<f32>>) -> tensor<f32> {
  %r = tfc.read_variable %v : !tfc.ref<tensor<f32>> -> tensor<f32>
  %n = tfc.negative %r : (tensor<f32>) -> tensor<f32>
  func.return %n : tensor<f32>
}

// ones_like reads its operand's shape only (its scalar body is a constant):
// the seed of a gradient folds to a constant however the loss is computed.
// CHECK-LABEL: func.func @like
// CHECK-NEXT:    %[[C:.*]] = tfc.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[Z:.*]] = tfc.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK-NEXT:    func.return %[[C]], %[[Z]]
func.func @like(%x: tensor<2xf32>) -> (tensor<f32>, tensor<2xf32>) {
  %s = tfc.reduce_sum %x {keepdims = false} : (tensor<2xf32>) -> tensor<f32>
  %o = tfc.ones_like %s : (tensor<f32>) -> tensor<f32>
  %z = tfc.zeros_like %x : (tensor<2xf32>) -> tensor<2xf32>
  func.return %o, %z : tensor<f32>, tensor<2xf32>
}
