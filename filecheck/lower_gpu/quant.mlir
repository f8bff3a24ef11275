// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s
// RUN: sed -e 's/"quantized_matmul"/"quantized_conv2d"/' %s | not %tfc-opt - -p tfc-lower-gpu 2>&1 | filecheck %s --check-prefix=ERR

// The quantized ops (tfc/passes/gpu_quant_library.py): they allocate their
// results (no kernel_into), so each gets a fresh device buffer (loops.alloc)
// and a kernel launched into it. quantize: divide, round half to even, add the
// zero point, clip, int8. quantized_matmul: x's rows and w's columns packed
// four int8 codes to an i32 word (byte j = k + j; K = 6: the second word's two
// last bytes 0) into fresh buffers by two pack kernels; then per result the
// accumulator starts at bias[n], one tgpu.dp4a per pair of words; then
// float32(acc) * multiplier (one for all here: no channel index), + zero point,
// round, clip to [zero point, 127] (relu), int8.
func.func @q(%x: memref<3x6xf32>, %arena: memref<0xi8>) -> memref<3x5xi8> {
  %0 = loops.library "quantize"(%x : memref<3x6xf32>) {attrs = {scale = 0.5 : f64, zero_point = 7 : i64}} -> (memref<3x6xi8>)
  %1 = loops.constant dense<[[1, -2, 3, -4, 5], [6, -7, 8, -9, 10], [11, -12, 13, -14, 15], [16, -17, 18, -19, 20], [21, -22, 23, -24, 25], [26, -27, 28, -29, 30]]> : tensor<6x5xi8> -> memref<6x5xi8>
  %2 = loops.constant dense<[-714, 2558, -1450, 4694, -945]> : tensor<5xi32> -> memref<5xi32>
  %3 = loops.constant dense<[0.0125]> : tensor<1xf32> -> memref<1xf32>
  %4 = loops.library "quantized_matmul"(%0, %1, %2, %3 : memref<3x6xi8>, memref<6x5xi8>, memref<5xi32>, memref<1xf32>) {attrs = {out_zero_point = -3 : i64, relu = true, out_dtype = i8}} -> (memref<3x5xi8>)
  func.return %4 : memref<3x5xi8>
}

// CHECK:       gpu.func @k0_quantize_f32(%{{.*}}: !tgpu.ptr<f32, global>, %{{.*}}: !tgpu.ptr<i8, global>) kernel attributes {{[{]}}gpu.known_block_size = array<i32: 256, 1, 1>, tgpu.kind = "elementwise", tgpu.index = "i32"} {
// CHECK:         %[[V:.*]] = tgpu.load %{{.*}}[%{{.*}}] {nc} : !tgpu.ptr<f32, global>, i32
// CHECK-NEXT:    %[[D:.*]] = arith.divf %[[V]], %{{.*}} : f32
// CHECK-NEXT:    %[[R:.*]] = math.roundeven %[[D]] : f32
// CHECK-NEXT:    %[[Z:.*]] = arith.addf %[[R]], %{{.*}} : f32
// CHECK-NEXT:    %[[LO:.*]] = arith.maximumf %[[Z]], %{{.*}} : f32
// CHECK-NEXT:    %[[HI:.*]] = arith.minimumf %[[LO]], %{{.*}} : f32
// CHECK-NEXT:    %[[I:.*]] = arith.fptosi %[[HI]] : f32 to i32
// CHECK-NEXT:    %[[Q:.*]] = arith.trunci %[[I]] : i32 to i8
// CHECK:         tgpu.store %[[Q]], %{{.*}}[%{{.*}}] : !tgpu.ptr<i8, global>, i32

// CHECK:       gpu.func @k1_pack_int8_f32(%{{.*}}: !tgpu.ptr<i8, global>, %{{.*}}: !tgpu.ptr<i32, global>) kernel
// CHECK-COUNT-4: arith.extui %{{.*}} : i8 to i32
// CHECK:         tgpu.store %{{.*}}, %{{.*}}[%{{.*}}] : !tgpu.ptr<i32, global>, i32
// CHECK:       gpu.func @k2_pack_int8_f32(

// CHECK:       gpu.func @k3_quantized_matmul_f32(%{{.*}}: !tgpu.ptr<i32, global>, %{{.*}}: !tgpu.ptr<i32, global>, %{{.*}}: !tgpu.ptr<i32, global>, %[[MULT:.*]]: !tgpu.ptr<f32, global>, %{{.*}}: !tgpu.ptr<i8, global>) kernel attributes {{[{]}}gpu.known_block_size = array<i32: 256, 1, 1>, tgpu.kind = "matmul", tgpu.index = "i32"} {
// CHECK:         %[[BIAS:.*]] = tgpu.load %{{.*}}[%{{.*}}] {nc} : !tgpu.ptr<i32, global>, i32
// CHECK:         %[[ACC:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A:.*]] = %[[BIAS]]) -> (i32) : i32 {
// CHECK:           %[[XW:.*]] = tgpu.load %{{.*}}[%{{.*}}] {nc} : !tgpu.ptr<i32, global>, i32
// CHECK:           %[[WW:.*]] = tgpu.load %{{.*}}[%{{.*}}] {nc} : !tgpu.ptr<i32, global>, i32
// CHECK-NEXT:      %[[S:.*]] = tgpu.dp4a %[[XW]], %[[WW]], %[[A]] : i32
// CHECK-NEXT:      scf.yield %[[S]] : i32
// CHECK:         }
// CHECK-NEXT:    %[[F:.*]] = arith.sitofp %[[ACC]] : i32 to f32
// CHECK-NEXT:    %[[M:.*]] = tgpu.load %[[MULT]][%{{.*}}] {nc} : !tgpu.ptr<f32, global>, i32
// CHECK-NEXT:    %[[RE:.*]] = arith.mulf %[[F]], %[[M]] : f32
// CHECK-NEXT:    arith.addf %[[RE]], %{{.*}} : f32
// CHECK-NEXT:    math.roundeven
// CHECK-NEXT:    arith.maximumf
// CHECK-NEXT:    arith.minimumf
// CHECK-NEXT:    arith.fptosi
// CHECK-NEXT:    arith.trunci

// CHECK:       func.func @q(
// CHECK:         %[[Q0:.*]] = loops.alloc : memref<3x6xi8>
// CHECK:         tgpu.launch @k0_quantize_f32 {{.*}} args(%x, %[[Q0]] : memref<3x6xf32>, memref<3x6xi8>)
// CHECK:         %[[W:.*]] = loops.constant {{.*}} -> memref<6x5xi8>
// CHECK:         %[[XP:.*]] = loops.alloc : memref<3x2xi32>
// CHECK:         tgpu.launch @k1_pack_int8_f32 {{.*}} args(%[[Q0]], %[[XP]] : memref<3x6xi8>, memref<3x2xi32>)
// CHECK:         %[[WP:.*]] = loops.alloc : memref<5x2xi32>
// CHECK:         tgpu.launch @k2_pack_int8_f32 {{.*}} args(%[[W]], %[[WP]] : memref<6x5xi8>, memref<5x2xi32>)
// CHECK:         %[[Q1:.*]] = loops.alloc : memref<3x5xi8>
// CHECK:         tgpu.launch @k3_quantized_matmul_f32 {{.*}} args(%[[XP]], %[[WP]], %{{.*}}, %{{.*}}, %[[Q1]] :
// CHECK:         func.return %[[Q1]] : memref<3x5xi8>

// ERR: no GPU kernel for quantized_conv2d of memref<3x6xi8>, memref<6x5xi8>, memref<3x5xi8> yet
