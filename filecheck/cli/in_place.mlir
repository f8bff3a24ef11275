// RUN: cp %s %t.mlir && %tfc-opt %t.mlir -p tfc-simplify,tfc-dce -o %t.mlir && filecheck %s < %t.mlir
// RUN: cp %s %t.mlir && not %tfc-opt %t.mlir -p tfc-lower-loops,tfc-fold -o %t.mlir 2>&1 | filecheck %s --check-prefix=ERR
// RUN: diff %s %t.mlir
// -o may name the input (read whole first), and a failure leaves it as it was.
// CHECK: tfc.exp %a
// CHECK-NOT: tfc.constant
// ERR: error: tfc-fold expects tensor IR (L1 or L2); @f is already lowered to loops (L3): run tfc-fold before tfc-lower-loops
// ERR-NOT: Traceback
func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {
  %one = tfc.constant dense<1.0> : tensor<3xf32>
  %0 = tfc.multiply %a, %one : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = tfc.exp %0 : (tensor<3xf32>) -> tensor<3xf32>
  func.return %1 : tensor<3xf32>
}
