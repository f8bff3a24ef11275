// The compiler driver (tfc/passes/driver.py) through `tfc compile`: a
// None-batch function (Inputs/predict.py) is specialized to the shapes of
// --shape (driver.specialize: tfc-specialize, then the L1 passes) and lowered
// through the pipeline's stops (driver.lower: fused, then loops); every stage
// says which shapes it is for.
// RUN: %tfc compile %S/Inputs/predict.py --emit tensor --shape x=2x4 | filecheck %s --check-prefix=TENSOR
// RUN: %tfc compile %S/Inputs/predict.py --emit fused --shape x=2x4 | filecheck %s --check-prefix=FUSED
// RUN: %tfc compile %S/Inputs/predict.py --emit loops --shape x=5x4 | filecheck %s --check-prefix=LOOPS

// the tensor stage is the module as traced, run-time dims kept: it is what each shape specializes
// TENSOR-NOT:  specialized for
// TENSOR:      func.func @predict(%x: tensor<?x4xf32>, %Variable: !tfc.ref<tensor<4x3xf32>>) -> tensor<?x3xf32>
// TENSOR:        tfc.matmul %x, {{.*}} -> tensor<?x3xf32>
// TENSOR:        tfc.softmax {{.*}} -> tensor<?x3xf32>

// tfc-expand, then fusion: softmax is a max, an exp, a sum and a divide, relu fused into the first two
// FUSED:       // specialized for shapes [2, 4] (signature float32[?, 4])
// FUSED:       tfc.matmul
// FUSED:       tfc.fused({{.*}}) {{.*}}reduce = ["max"]
// FUSED:         arith.maximumf
// FUSED:       tfc.fused({{.*}}) {{.*}}: (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// FUSED:         math.exp
// FUSED:       tfc.fused({{.*}}) {{.*}}reduce = ["sum"]
// FUSED:       tfc.fused({{.*}})
// FUSED:         arith.divf
// FUSED-NOT:   tfc.softmax

// every buffer static and planned: arena views and the result, matmul into its buffer
// LOOPS:       // specialized for shapes [5, 4] (signature float32[?, 4])
// LOOPS:       func.func @predict(%x: memref<5x4xf32>, %Variable: !tfc.ref<tensor<4x3xf32>>, %arena: memref<{{[0-9]+}}xi8>) -> memref<5x3xf32>
// LOOPS:         loops.view %arena
// LOOPS:         loops.library "matmul"{{.*}} outs(
// LOOPS:         loops.parallel
// LOOPS-NOT:     loops.library
// LOOPS:         func.return
