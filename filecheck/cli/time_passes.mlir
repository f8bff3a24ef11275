// RUN: %tfc-opt %s -p tfc-simplify,tfc-dce --time-passes 2>&1 >/dev/null | filecheck %s
// CHECK: wall time:
// CHECK-DAG: parse {{.*}} ms
// CHECK-DAG: tfc-simplify {{.*}} ms
// CHECK-DAG: tfc-dce {{.*}} ms
// CHECK: total {{.*}} ms
func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = tfc.exp %a : (tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
