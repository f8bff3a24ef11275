// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s
// RUN: sed -e 's/40x/31x/g' %s | %tfc-opt - -p tfc-lower-gpu | filecheck %s --check-prefix=SIMPLE

// A float16 matmul of at least 32 rows and columns on tensor cores, tiled
// (tfc/passes/gpu_mma.py): a 64 x 64 tile per block of 4 warps; per 32 of K
// both operands staged in shared memory (64 rows of 32 + 8 halves each), in
// loops of one element per thread; a barrier; per 16 of K two ldmatrix x4 of
// A (the warp's two 16-row fragments) and two of B (pairs of 8-column
// n-tiles), 2 x 4 mma accumulating in float32 (32 values carried by the K
// loop); a barrier before the next stage; each result rounded once to f16
// and stored where it is inside C. Below 32 rows: the simple one-warp kernel.
func.func @mm(%x: memref<40x45xf16>, %y: memref<45x33xf16>, %arena: memref<0xi8>) -> memref<40x33xf16> {
  %0 = loops.alloc : memref<40x33xf16>
  loops.library "matmul"(%x, %y : memref<40x45xf16>, memref<45x33xf16>) outs(%0 : memref<40x33xf16>) {attrs = {transpose_a = false, transpose_b = false}} -> ()
  func.return %0 : memref<40x33xf16>
}

// CHECK:       gpu.func @k0_matmul_nn_f16_mma_64x64(%{{.*}}: !tgpu.ptr<f16, global>, %{{.*}}: !tgpu.ptr<f16, global>, %{{.*}}: !tgpu.ptr<f16, global>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>, tgpu.kind = "matmul", tgpu.index = "i32"} {
// CHECK:         %[[SA:.*]] = tgpu.shared {size = 2560} : !tgpu.ptr<f16, shared>
// CHECK-NEXT:    %[[SB:.*]] = tgpu.shared {size = 2560} : !tgpu.ptr<f16, shared>
// CHECK:         scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) : i32 {
// CHECK:           scf.for
// CHECK:             tgpu.store %{{.*}}, %[[SA]][%{{.*}}] : !tgpu.ptr<f16, shared>, i32
// CHECK:           scf.for
// CHECK:             tgpu.store %{{.*}}, %[[SB]][%{{.*}}] : !tgpu.ptr<f16, shared>, i32
// CHECK:           gpu.barrier
// CHECK-COUNT-2:   tgpu.ldmatrix x4 %[[SA]]
// CHECK-COUNT-2:   tgpu.ldmatrix x4 %[[SB]]
// CHECK-COUNT-8:   tgpu.mma m16n8k16
// CHECK-COUNT-2:   tgpu.ldmatrix x4 %[[SA]]
// CHECK-COUNT-2:   tgpu.ldmatrix x4 %[[SB]]
// CHECK-COUNT-8:   tgpu.mma m16n8k16
// CHECK-NEXT:      gpu.barrier
// CHECK:         scf.if
// CHECK:           arith.truncf %{{.*}} : f32 to f16
// CHECK-NEXT:      tgpu.store %{{.*}}, %{{.*}}[%{{.*}}] : !tgpu.ptr<f16, global>, i32
// CHECK:       tgpu.launch @k0_matmul_nn_f16_mma_64x64 grid({{.*}}) block(128, 1, 1)

// SIMPLE: gpu.func @k0_matmul_nn_f16_mma(
// SIMPLE-NOT: tgpu.ldmatrix
// SIMPLE: tgpu.mma m16n8k16
