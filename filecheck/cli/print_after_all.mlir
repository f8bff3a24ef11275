// RUN: %tfc-opt %s -p tfc-simplify,tfc-dce --print-ir-after-all 2>&1 >/dev/null | filecheck %s
// CHECK: IR Dump After tfc-simplify
// CHECK: tfc.constant
// CHECK: IR Dump After tfc-dce
// CHECK-NOT: tfc.constant
func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {
  %one = tfc.constant dense<1.0> : tensor<3xf32>
  %0 = tfc.multiply %a, %one : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
