// A broadcast map naming an iteration dim that does not exist: a verifier error, as for tfc.fused.
// RUN: not %tfc-opt %s 2>&1 | filecheck %s
// CHECK: parallel_broadcast_range.mlir:5:3: error: loops.parallel: broadcast[0] = [1] must name distinct iteration dims in [0, 1) or -1
func.func @f(%a: memref<4xf32>, %o: memref<4xf32>) {
  loops.parallel ins(%a : memref<4xf32>) outs(%o : memref<4xf32>) attributes {shape = array<i64: 4>, broadcast = [array<i64: 1>]} {
  ^bb0(%x: f32):
    loops.yield %x : f32
  }
  func.return
}
