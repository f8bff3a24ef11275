// A use before the definition, in the same block: refused at the use, naming
// the value, before any pass runs (tfc-fuse once wrote such IR back out,
// self-referential, with exit 0). More cases: use_*.mlir.
// RUN: not %tfc-opt %s -p tfc-fuse 2>&1 | filecheck %s
// CHECK: use_before_def.mlir:7:16: error: %0 is used before its definition at {{.*}}use_before_def.mlir:8:3
func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {
  %1 = tfc.add %0, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %0 = tfc.negative %a : (tensor<3xf32>) -> tensor<3xf32>
  func.return %1 : tensor<3xf32>
}
