// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s
// RUN: sed -e 's/"matmul"/"conv2d"/' %s | not %tfc-opt - -p tfc-lower-gpu 2>&1 | filecheck %s --check-prefix=ERR

// matmul into its planned buffer: the 16x16 tiled kernel of gpu_library.py,
// block (16, 16), every (batch, tile row, tile column) on gridDim.x (y and z
// hold only 65535 blocks): here 2 x 2 tiles, the digits of blockIdx.x; a
// transposed operand is read through swapped strides.
func.func @mm(%a: memref<37x19xf32>, %b: memref<23x37xf32>, %arena: memref<0xi8>) -> memref<19x23xf32> {
  %0 = loops.alloc : memref<19x23xf32>
  loops.library "matmul"(%a, %b : memref<37x19xf32>, memref<23x37xf32>) outs(%0 : memref<19x23xf32>) {attrs = {transpose_a = true, transpose_b = true}} -> ()
  func.return %0 : memref<19x23xf32>
}

// CHECK:       gpu.func @k0_matmul_tt_f32(%{{.*}}: !tgpu.ptr<f32, global>, %{{.*}}: !tgpu.ptr<f32, global>, %{{.*}}: !tgpu.ptr<f32, global>) kernel attributes {{[{]}}gpu.known_block_size = array<i32: 16, 16, 1>, tgpu.kind = "matmul", tgpu.index = "i32"} {
// CHECK-NOT:     gpu.block_id y
// CHECK:         gpu.block_id x
// CHECK-NOT:     gpu.block_id
// CHECK-DAG:     %[[SA:.*]] = tgpu.shared {size = 256} : !tgpu.ptr<f32, shared>
// CHECK-DAG:     %[[SB:.*]] = tgpu.shared {size = 256} : !tgpu.ptr<f32, shared>
// CHECK:         arith.remui %{{.*}}, %{{.*}} : i32
// CHECK:         arith.divui %{{.*}}, %{{.*}} : i32
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) : i32 {
// CHECK:           tgpu.store %{{.*}}, %[[SA]]
// CHECK:           tgpu.store %{{.*}}, %[[SB]]
// CHECK-NEXT:      gpu.barrier
// CHECK-COUNT-16:  math.fma
// CHECK-NEXT:      gpu.barrier
// CHECK-LABEL: func.func @mm
// CHECK:         %[[GX:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[GY:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[GZ:.*]] = arith.constant 1 : index
// CHECK-NEXT:    tgpu.launch @k0_matmul_tt_f32 grid(%[[GX]], %[[GY]], %[[GZ]]) block(16, 16, 1) shared(0) args(%a, %b, %0 : memref<37x19xf32>, memref<23x37xf32>, memref<19x23xf32>)
// CHECK-NOT:     loops.library

// A library call the GPU has no kernel for raises at lowering time, naming it
// (here a conv2d of rank 2).
// ERR: target cuda: no GPU kernel for conv2d of memref<37x19xf32>
