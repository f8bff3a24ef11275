// RUN: not %tfc-opt %s 2>&1 | filecheck %s
// CHECK: use_own_result_in_region.mlir:5:15: error: %1 is used by the op that defines it
func.func @f(%a: tensor<3xf32>, %p: tensor<i1>) -> tensor<3xf32> {
  %1 = tfc.cond %p : (tensor<i1>) -> tensor<3xf32> {
    tfc.yield %1 : tensor<3xf32>
  } else {
    tfc.yield %a : tensor<3xf32>
  }
  func.return %1 : tensor<3xf32>
}
