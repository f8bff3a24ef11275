// RUN: %tfc-opt %s -p tfc-cse | filecheck %s

// CHECK-LABEL: func.func @pure
// CHECK-NEXT:    %[[E:.*]] = tfc.exp %x
// CHECK-NEXT:    %[[S:.*]] = tfc.add %[[E]], %[[E]]
// CHECK-NEXT:    func.return %[[S]]
func.func @pure(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = tfc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = tfc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %s = tfc.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// Different attributes are different computations.
// CHECK-LABEL: func.func @attrs
// CHECK:         tfc.reduce_sum %x {axis = array<i64: 0>
// CHECK:         tfc.reduce_sum %x {axis = array<i64: 1>
func.func @attrs(%x: tensor<2x2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %a = tfc.reduce_sum %x {axis = array<i64: 0>, keepdims = false} : (tensor<2x2xf32>) -> tensor<2xf32>
  %b = tfc.reduce_sum %x {axis = array<i64: 1>, keepdims = false} : (tensor<2x2xf32>) -> tensor<2xf32>
  func.return %a, %b : tensor<2xf32>, tensor<2xf32>
}

// Two reads of a variable with an assign between them stay apart.
// CHECK-LABEL: func.func @reads
// CHECK:         tfc.read_variable
// CHECK:         tfc.assign_variable
// CHECK:         tfc.read_variable
func.func @reads(%v: !tfc.ref<tensor<f32>>, %x: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %a = tfc.read_variable %v : !tfc.ref<tensor<f32>> -> tensor<f32>
  tfc.assign_variable %v, %x : !tfc.ref<tensor<f32>>, tensor<f32>
  %b = tfc.read_variable %v : !tfc.ref<tensor<f32>> -> tensor<f32>
  func.return %a, %b : tensor<f32>, tensor<f32>
}
