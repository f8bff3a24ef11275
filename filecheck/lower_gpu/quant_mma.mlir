// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s
// RUN: sed -e 's/17x/15x/g' %s | %tfc-opt - -p tfc-lower-gpu | filecheck %s --check-prefix=DP4A

// quantized_matmul of 16 rows or more on int8 tensor cores
// (tfc/passes/gpu_quant_library.py _mma_matmul): x's rows and w's columns
// packed four codes to an i32 word as for dp4a, then blocks of 4 warps, each
// warp a 16 x 8 tile here (N = 5: one n-tile); a lane's four accumulators
// start at the bias of their columns; per 32 codes of K (8 words) its A
// registers are words t and t + 4 of rows g and g + 8, its B registers words
// t and t + 4 of column g, one tgpu.mma m16n8k32; each result in bounds is
// requantized as numpy does. Fewer than 16 rows keep dp4a.
func.func @q(%x: memref<17x6xi8>, %arena: memref<0xi8>) -> memref<17x5xi8> {
  %1 = loops.constant dense<[[1, -2, 3, -4, 5], [6, -7, 8, -9, 10], [11, -12, 13, -14, 15], [16, -17, 18, -19, 20], [21, -22, 23, -24, 25], [26, -27, 28, -29, 30]]> : tensor<6x5xi8> -> memref<6x5xi8>
  %2 = loops.constant dense<[-714, 2558, -1450, 4694, -945]> : tensor<5xi32> -> memref<5xi32>
  %3 = loops.constant dense<[0.0125]> : tensor<1xf32> -> memref<1xf32>
  %4 = loops.library "quantized_matmul"(%x, %1, %2, %3 : memref<17x6xi8>, memref<6x5xi8>, memref<5xi32>, memref<1xf32>) {attrs = {out_zero_point = -3 : i64, relu = true, out_dtype = i8}} -> (memref<17x5xi8>)
  func.return %4 : memref<17x5xi8>
}

// CHECK:       gpu.func @k2_quantized_matmul_s8_mma(%{{.*}}: !tgpu.ptr<i32, global>, %{{.*}}: !tgpu.ptr<i32, global>, %{{.*}}: !tgpu.ptr<i32, global>, %{{.*}}: !tgpu.ptr<f32, global>, %{{.*}}: !tgpu.ptr<i8, global>) kernel attributes {gpu.known_block_size = array<i32: 128, 1, 1>, tgpu.kind = "matmul", tgpu.index = "i32"} {
// CHECK:         scf.if
// CHECK:           %[[B0:.*]] = tgpu.load %2[%{{.*}}] {nc} : !tgpu.ptr<i32, global>, i32
// CHECK:           %[[B1:.*]] = tgpu.load %2[%{{.*}}] {nc} : !tgpu.ptr<i32, global>, i32
// CHECK:           scf.for
// CHECK-COUNT-4:     tgpu.load %0[%{{.*}}] {nc} : !tgpu.ptr<i32, global>, i32
// CHECK-COUNT-2:     tgpu.load %1[%{{.*}}] {nc} : !tgpu.ptr<i32, global>, i32
// CHECK:             tgpu.mma m16n8k32 a(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) b(%{{.*}}, %{{.*}}) c(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : i8 -> i32
// CHECK:           scf.if
// CHECK-NEXT:        arith.sitofp %{{.*}} : i32 to f32
// CHECK-NEXT:        tgpu.load %3[%{{.*}}] {nc} : !tgpu.ptr<f32, global>, i32
// CHECK:             math.roundeven
// CHECK:             tgpu.store %{{.*}}, %4[%{{.*}}] : !tgpu.ptr<i8, global>, i32
// CHECK:       tgpu.launch @k2_quantized_matmul_s8_mma grid(%{{.*}}, %{{.*}}, %{{.*}}) block(128, 1, 1) shared(0) args(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : memref<17x2xi32>, memref<5x2xi32>, memref<5xi32>, memref<1xf32>, memref<17x5xi8>)


// DP4A-NOT: tgpu.mma
// DP4A: tgpu.dp4a
// DP4A-NOT: tgpu.mma
