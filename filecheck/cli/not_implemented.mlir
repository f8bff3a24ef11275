// RUN: rm -f %t.out
// RUN: not %tfc-opt %s -p tfc-bufferize,tfc-plan-memory,tfc-lower-loops,tfc-lower-gpu -o %t.out 2>&1 | filecheck %s
// RUN: not test -e %t.out
// A pass that raises NotImplementedError (here the GPU lowering of an op with
// no GPU kernel) is a located error, not a Python traceback, and writes no output.

builtin.module {
  func.func @f(%x: tensor<4xf32>, %s: tensor<i64>) -> tensor<4xf32> {
    %m = tfc.seeded_dropout_mask %x, %s {rate = 5.000000e-01 : f64} : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
    func.return %m : tensor<4xf32>
  }
}

// CHECK-NOT: Traceback
// CHECK: not_implemented.mlir: error: not implemented: target cuda: no GPU kernel for seeded_dropout_mask yet
// CHECK-NOT: Traceback
