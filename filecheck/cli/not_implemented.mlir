// RUN: rm -f %t.out
// RUN: not %tfc-opt %s -p tfc-bufferize,tfc-plan-memory,tfc-lower-loops,tfc-lower-gpu -o %t.out 2>&1 | filecheck %s
// RUN: not test -e %t.out
// A pass that raises NotImplementedError (here the GPU lowering of an op with
// no GPU kernel: a sort of run-time length) is a located error, not a Python
// traceback, and writes no output.

builtin.module {
  func.func @f(%x: tensor<?xf32>) -> tensor<?xi32> {
    %i = tfc.argsort %x {axis = 0 : i64, direction = "ASCENDING"} : (tensor<?xf32>) -> tensor<?xi32>
    func.return %i : tensor<?xi32>
  }
}

// CHECK-NOT: Traceback
// CHECK: not_implemented.mlir: error: not implemented: target cuda: no GPU kernel for argsort of run-time shape yet
// CHECK-NOT: Traceback
