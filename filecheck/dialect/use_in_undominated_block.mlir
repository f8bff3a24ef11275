// A value from a block that does not dominate the use's block: an error at the use.
// RUN: not %tfc-opt %s 2>&1 | filecheck %s
// CHECK: use_in_undominated_block.mlir:14:23: error: %1 is used in a block that its definition does not dominate
func.func @f(%c: i1, %a: f32) -> f32 {
  %0 = arith.addf %a, %a : f32
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %1 = arith.addf %0, %a : f32
  cf.br ^bb3(%1 : f32)
^bb2:
  %2 = arith.mulf %0, %a : f32
  cf.br ^bb3(%2 : f32)
^bb3(%r: f32):
  %3 = arith.addf %r, %1 : f32
  func.return %3 : f32
}
