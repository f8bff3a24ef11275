// RUN: python -m tfc.passes.gpu_nn_library %s | filecheck %s

// Pooling (tfc/passes/gpu_nn_library.py), one thread per result element:
// max_pool2d keeps the first maximum in tap order (the first tap taken, then
// strict ogt: a NaN first tap stays, a later NaN never wins; padding -inf);
// max_pool2d_grad gathers, per input element, the gradient of each covering
// window whose first maximum it is; avg_pool2d divides by the count of real
// elements (sitofp of the clipped window's size); avg_pool2d_grad loops over
// the windows covering an element only (run-time bounds, step the stride).
func.func @pool(%x: memref<3x7x6x5xf64>, %g: memref<3x4x3x5xf64>, %arena: memref<0xi8>) -> (memref<3x4x3x5xf64>, memref<3x7x6x5xf64>, memref<3x4x3x5xf64>, memref<3x7x6x5xf64>) {
  %y = loops.alloc : memref<3x4x3x5xf64>
  loops.library "max_pool2d"(%x : memref<3x7x6x5xf64>) outs(%y : memref<3x4x3x5xf64>) {attrs = {ksize = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = "SAME"}} -> ()
  %dx = loops.alloc : memref<3x7x6x5xf64>
  loops.library "max_pool2d_grad"(%x, %g : memref<3x7x6x5xf64>, memref<3x4x3x5xf64>) outs(%dx : memref<3x7x6x5xf64>) {attrs = {ksize = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = "SAME"}} -> ()
  %a = loops.alloc : memref<3x4x3x5xf64>
  loops.library "avg_pool2d"(%x : memref<3x7x6x5xf64>) outs(%a : memref<3x4x3x5xf64>) {attrs = {ksize = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = "SAME"}} -> ()
  %da = loops.alloc : memref<3x7x6x5xf64>
  loops.library "avg_pool2d_grad"(%g : memref<3x4x3x5xf64>) outs(%da : memref<3x7x6x5xf64>) {attrs = {input_hw = array<i64: 7, 6>, ksize = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = "SAME"}} -> ()
  func.return %y, %dx, %a, %da : memref<3x4x3x5xf64>, memref<3x7x6x5xf64>, memref<3x4x3x5xf64>, memref<3x7x6x5xf64>
}

// CHECK:       gpu.func @k0_max_pool2d_f64(%{{.*}}: !tgpu.ptr<f64, global>, %{{.*}}: !tgpu.ptr<f64, global>) kernel attributes {{[{]}}gpu.known_block_size = array<i32: 256, 1, 1>, tgpu.kind = "elementwise", tgpu.index = "i32"} {
// CHECK-DAG:     %[[NINF:.*]] = arith.constant 0xfff0000000000000 : f64
// CHECK:         scf.for
// CHECK:           %{{.*}}, %{{.*}} = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[BEST:.*]] = %[[NINF]], %[[IDX:.*]] = %{{.*}}) -> (f64, i32) : i32 {
// CHECK:             %[[V:.*]] = tgpu.load %{{.*}}[%{{.*}}] {nc} : !tgpu.ptr<f64, global>, i32
// CHECK-NEXT:        %[[VP:.*]] = arith.select %{{.*}}, %[[V]], %[[NINF]] : f64
// CHECK:             %[[FIRST:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:        %[[GT:.*]] = arith.cmpf ogt, %[[VP]], %[[BEST]] : f64
// CHECK-NEXT:        %[[BETTER:.*]] = arith.ori %[[FIRST]], %[[GT]] : i1
// CHECK-NEXT:        arith.select %[[BETTER]], %[[VP]], %[[BEST]] : f64
// CHECK-NEXT:        arith.select %[[BETTER]], %{{.*}}, %[[IDX]] : i32
// CHECK:       gpu.func @k1_max_pool2d_grad_f64(
// CHECK:             scf.if %{{.*}} -> (f64) {
// CHECK:               arith.cmpf ogt
// CHECK:               arith.addf
// CHECK:       gpu.func @k2_avg_pool2d_f64(
// CHECK:           arith.maxsi
// CHECK:           arith.minsi
// CHECK:           arith.sitofp %{{.*}} : i32 to f64
// CHECK-NEXT:      arith.divf
// CHECK:       gpu.func @k3_avg_pool2d_grad_f64(
// CHECK:           %[[LO:.*]] = arith.subi
// CHECK:           %[[HI:.*]] = arith.minsi
// CHECK:           %{{.*}} = scf.for %{{.*}} = %[[LO]] to %[[HI]] step %[[S:.*]] iter_args
// CHECK:             scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[S]] iter_args
// CHECK-NOT:           scf.if
// CHECK:               tgpu.load
// CHECK:               arith.divf
// CHECK-NEXT:          arith.addf
// CHECK:       // launch @k0_max_pool2d_f64 grid(1, 1, 1) block(256, 1, 1) args(x, y)
// CHECK-NEXT:  // launch @k1_max_pool2d_grad_f64 grid(3, 1, 1) block(256, 1, 1) args(x, g, dx)
// CHECK-NEXT:  // launch @k2_avg_pool2d_f64 grid(1, 1, 1) block(256, 1, 1) args(x, a)
// CHECK-NEXT:  // launch @k3_avg_pool2d_grad_f64 grid(3, 1, 1) block(256, 1, 1) args(g, da)
