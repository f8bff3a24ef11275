// An op that uses its own result, directly or from its region.
// RUN: not %tfc-opt %s -p tfc-fuse 2>&1 | filecheck %s
// CHECK: use_own_result.mlir:5:16: error: %0 is used by the op that defines it
func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = tfc.add %0, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
