// RUN: %tfc-opt %s --verify-diagnostics | filecheck %s

// CHECK: model.py:7:2: tfc.matmul: matmul: inner dimensions differ
func.func @f(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  %0 = tfc.matmul %a, %b {transpose_a = false, transpose_b = false} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32> loc("model.py":7:2)
  func.return %0 : tensor<2x5xf32>
}
