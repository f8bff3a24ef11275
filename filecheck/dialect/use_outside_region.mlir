// A value defined in a region, used after it: not in scope there.
// RUN: not %tfc-opt %s 2>&1 | filecheck %s
// CHECK: use_outside_region.mlir:11:15: error: %2 is used but not defined in its scope
func.func @f(%a: tensor<3xf32>, %p: tensor<i1>) -> tensor<3xf32> {
  %1 = tfc.cond %p : (tensor<i1>) -> tensor<3xf32> {
    %2 = tfc.negative %a : (tensor<3xf32>) -> tensor<3xf32>
    tfc.yield %2 : tensor<3xf32>
  } else {
    tfc.yield %a : tensor<3xf32>
  }
  func.return %2 : tensor<3xf32>
}
