// RUN: not %tfc-opt %s -p tfc-fold 2>&1 | filecheck %s
// A dense literal too big to expand is refused at the literal, before any allocation.
// CHECK: huge_splat.mlir:[[# @LINE + 4]]:26: error: dense literal of 10,000,000,000,000 elements
// CHECK-NOT: Traceback
// CHECK-NOT: MemoryError
func.func @f() -> tensor<100000x100000x1000xf32> {
  %0 = tfc.constant dense<1.0> : tensor<100000x100000x1000xf32>
  func.return %0 : tensor<100000x100000x1000xf32>
}
