// A region that uses a value the parent block defines after the region's op.
// RUN: not %tfc-opt %s -p tfc-fuse 2>&1 | filecheck %s
// CHECK: use_later_in_region.mlir:6:15: error: %2 is used before its definition at {{.*}}use_later_in_region.mlir:10:3
func.func @f(%a: tensor<3xf32>, %p: tensor<i1>) -> tensor<3xf32> {
  %1 = tfc.cond %p : (tensor<i1>) -> tensor<3xf32> {
    tfc.yield %2 : tensor<3xf32>
  } else {
    tfc.yield %a : tensor<3xf32>
  }
  %2 = tfc.negative %a : (tensor<3xf32>) -> tensor<3xf32>
  func.return %1 : tensor<3xf32>
}
