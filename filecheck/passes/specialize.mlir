// RUN: %tfc-opt %s -p 'tfc-specialize{shapes="4x64,4x10"}' | filecheck %s
// RUN: %tfc-opt %s -p 'tfc-specialize{shapes="4x64,4x10"},tfc-simplify,tfc-fold,tfc-cse,tfc-dce,tfc-fuse' | filecheck %s --check-prefix=FUSED
// RUN: not %tfc-opt %s -p 'tfc-specialize{shapes="4x64,5x10"}' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: not %tfc-opt %s -p 'tfc-specialize{shapes="4x32,4x10"}' 2>&1 | filecheck %s --check-prefix=ARG

// Argument types take the shapes, every result type is inferred again from
// its operands' (variables keep their types), the *_like ops of a gradient
// become their static forms, and the function type follows.
// CHECK-LABEL: func.func @step(%x: tensor<4x64xf32>, %y: tensor<4x10xf32>, %w: !tfc.ref<tensor<64x10xf32>>, %b: !tfc.ref<tensor<10xf32>>) -> (tensor<4x10xf32>, tensor<10xf32>)
// CHECK:         tfc.matmul %x, %{{.*}} : (tensor<4x64xf32>, tensor<64x10xf32>) -> tensor<4x10xf32>
// CHECK:         tfc.add %{{.*}}, %{{.*}} : (tensor<4x10xf32>, tensor<10xf32>) -> tensor<4x10xf32>
// CHECK:         %[[N:.*]] = tfc.constant dense<40> : tensor<i64>
// CHECK:         tfc.cast %[[N]] {dtype = f32} : (tensor<i64>) -> tensor<f32>
// CHECK:         tfc.broadcast_to %{{.*}} {shape = array<i64: 4, 10>} : (tensor<f32>) -> tensor<4x10xf32>
// CHECK:         tfc.reduce_sum %{{.*}} {axis = array<i64: 0>, keepdims = false} : (tensor<4x10xf32>) -> tensor<10xf32>
// CHECK-NOT:     _like
// CHECK-NOT:     count_along
// CHECK:         func.return %{{.*}}, %{{.*}} : tensor<4x10xf32>, tensor<10xf32>

// After the default L1 pipeline, fusion sees static shapes.
// FUSED-LABEL: func.func @step
// FUSED:         tfc.fused
// FUSED-NOT:     ?x

// A batch of another size: eager's error, at the op's line.
// ERR: m.py:3: error: tfc.subtract: subtract: shapes (4, 10) and (5, 10) cannot be broadcast together

// ARG: argument 0 of @step has type tensor<?x64xf32>; shape (4, 32) is not compatible with it
func.func @step(%x: tensor<?x64xf32>, %y: tensor<?x10xf32>, %w: !tfc.ref<tensor<64x10xf32>>, %b: !tfc.ref<tensor<10xf32>>) -> (tensor<?x10xf32>, tensor<10xf32>) {
  %0 = tfc.read_variable %w : !tfc.ref<tensor<64x10xf32>> -> tensor<64x10xf32> loc("m.py":1:0)
  %1 = tfc.matmul %x, %0 {transpose_a = false, transpose_b = false} : (tensor<?x64xf32>, tensor<64x10xf32>) -> tensor<?x10xf32> loc("m.py":1:0)
  %2 = tfc.read_variable %b : !tfc.ref<tensor<10xf32>> -> tensor<10xf32> loc("m.py":2:0)
  %3 = tfc.add %1, %2 : (tensor<?x10xf32>, tensor<10xf32>) -> tensor<?x10xf32> loc("m.py":2:0)
  %4 = tfc.subtract %3, %y : (tensor<?x10xf32>, tensor<?x10xf32>) -> tensor<?x10xf32> loc("m.py":3:0)
  %5 = tfc.constant dense<1.000000e+00> : tensor<f32> loc("m.py":4:0)
  %6 = tfc.count_along %4 {axes = array<i64: 0, 1>} : (tensor<?x10xf32>) -> tensor<i64> loc("m.py":4:0)
  %7 = tfc.cast %6 {dtype = f32} : (tensor<i64>) -> tensor<f32> loc("m.py":4:0)
  %8 = tfc.divide %5, %7 : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("m.py":4:0)
  %9 = tfc.broadcast_like %8, %4 : (tensor<f32>, tensor<?x10xf32>) -> tensor<?x10xf32> loc("m.py":4:0)
  %10 = tfc.unbroadcast_like %9, %2 : (tensor<?x10xf32>, tensor<10xf32>) -> tensor<10xf32> loc("m.py":2:0)
  func.return %4, %10 : tensor<?x10xf32>, tensor<10xf32> loc("m.py":5:0)
}
