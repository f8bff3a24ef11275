// RUN: not %tfc-opt %s -p tfc-fold 2>&1 | filecheck %s
// A verifier error names the op's position in the file, on one line.
// CHECK: verify_error.mlir:[[# @LINE + 4]]:3: error: tfc.add: add: shapes (3,) and (4,) cannot be broadcast together
// CHECK-NOT: Traceback
// CHECK-NOT: <unknown location>
func.func @f(%a: tensor<3xf32>, %b: tensor<4xf32>) -> tensor<3xf32> {
  %0 = tfc.add %a, %b : (tensor<3xf32>, tensor<4xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
