// RUN: python -m tfc.passes.gpu_nn_library %s | filecheck %s
// RUN: sed -e 's/f32/f16/g' %s | not python -m tfc.passes.gpu_nn_library - 2>&1 | filecheck %s --check-prefix=ERR

// conv2d and its gradients (tfc/passes/gpu_nn_library.py): one thread per
// result element over a grid-stride loop (block 256), the window's taps in one
// loop (bounded by taps * gridDim.y, which ptxas cannot unroll whole), padded
// taps read as 0 (numpy's im2col), math.fma over the channels; conv2d: 4 output
// channels per thread (x loaded once for them; the last group's tail checked). (Until
// tfc-lower-gpu dispatches to LIBRARY, the module's command line prints the kernels.)
func.func @conv(%x: memref<2x7x6x3xf32>, %w: memref<3x2x3x5xf32>, %g: memref<2x4x3x5xf32>, %arena: memref<0xi8>) -> (memref<2x4x3x5xf32>, memref<2x7x6x3xf32>, memref<3x2x3x5xf32>) {
  %y = loops.alloc : memref<2x4x3x5xf32>
  loops.library "conv2d"(%x, %w : memref<2x7x6x3xf32>, memref<3x2x3x5xf32>) outs(%y : memref<2x4x3x5xf32>) {attrs = {strides = array<i64: 2, 2>, padding = "SAME", dilations = array<i64: 1, 1>}} -> ()
  %dx = loops.alloc : memref<2x7x6x3xf32>
  loops.library "conv2d_backprop_input"(%w, %g : memref<3x2x3x5xf32>, memref<2x4x3x5xf32>) outs(%dx : memref<2x7x6x3xf32>) {attrs = {input_hw = array<i64: 7, 6>, strides = array<i64: 2, 2>, padding = "SAME", dilations = array<i64: 1, 1>}} -> ()
  %dw = loops.alloc : memref<3x2x3x5xf32>
  loops.library "conv2d_backprop_filter"(%x, %g : memref<2x7x6x3xf32>, memref<2x4x3x5xf32>) outs(%dw : memref<3x2x3x5xf32>) {attrs = {filter_hw = array<i64: 3, 2>, strides = array<i64: 2, 2>, padding = "SAME", dilations = array<i64: 1, 1>}} -> ()
  func.return %y, %dx, %dw : memref<2x4x3x5xf32>, memref<2x7x6x3xf32>, memref<3x2x3x5xf32>
}

// CHECK:       gpu.func @k0_conv2d_f32(%{{.*}}: !tgpu.ptr<f32, global>, %{{.*}}: !tgpu.ptr<f32, global>, %{{.*}}: !tgpu.ptr<f32, global>) kernel attributes {{[{]}}gpu.known_block_size = array<i32: 256, 1, 1>, tgpu.kind = "matmul", tgpu.index = "i32"} {
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:     %[[N:.*]] = arith.constant 48 : i32
// CHECK-DAG:     %[[CO:.*]] = arith.constant 5 : i32
// CHECK-DAG:     %[[GY:.*]] = gpu.grid_dim y
// CHECK:         %[[TAPS:.*]] = arith.muli %{{.*}}, %{{.*}} : i32
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[N]] step %{{.*}} : i32 {
// CHECK-COUNT-3:   arith.cmpi slt, %{{.*}}, %[[CO]] : i32
// CHECK:           %[[A0:[0-9]+]], %[[A1:[0-9]+]], %{{[0-9]+}}, %{{[0-9]+}} = scf.for %{{.*}} = %{{.*}} to %[[TAPS]] step %{{.*}} iter_args(%{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]], %{{.*}} = %[[ZERO]]) -> (f32, f32, f32, f32) : i32 {
// CHECK:             arith.cmpi sge
// CHECK:             arith.cmpi slt
// CHECK:             scf.for %{{.*}} iter_args
// CHECK-NEXT:          arith.addi
// CHECK-NEXT:          %[[XV:.*]] = tgpu.load %{{.*}}[%{{.*}}] {nc} : !tgpu.ptr<f32, global>, i32
// CHECK-NEXT:          %[[XP:.*]] = arith.select %{{.*}}, %[[XV]], %[[ZERO]] : f32
// CHECK-COUNT-4:       math.fma %[[XP]], %{{.*}}, %{{.*}} : f32
// CHECK:           tgpu.store %[[A0]], %{{.*}}
// CHECK:           scf.if
// CHECK-NEXT:        arith.muli
// CHECK:             tgpu.store %[[A1]], %{{.*}}
// CHECK:       gpu.func @k1_conv2d_backprop_input_f32(
// CHECK:           arith.remui
// CHECK:           arith.cmpi eq
// CHECK:           math.fma
// CHECK:           arith.addf
// CHECK:       gpu.func @k2_conv2d_backprop_filter_f32(
// CHECK:           math.fma
// CHECK-NOT:   gpu.func
// CHECK:       // launch @k0_conv2d_f32 grid(1, 1, 1) block(256, 1, 1) args(x, w, y)
// CHECK-NEXT:  // launch @k1_conv2d_backprop_input_f32 grid(1, 1, 1) block(256, 1, 1) args(w, g, dx)
// CHECK-NEXT:  // launch @k2_conv2d_backprop_filter_f32 grid(1, 1, 1) block(256, 1, 1) args(x, g, dw)

// ERR: error: target cuda: no GPU kernel for conv2d of f16, f16, f16 yet
