// RUN: not %tfc-opt %s 2>&1 | filecheck %s
// CHECK: parse_error.mlir:[[# @LINE + 3]]:{{[0-9]+}}: error: {{.*}}expected
// CHECK-NOT: Traceback
func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = tfc.exp %a : (tensor<3xf32> -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}
