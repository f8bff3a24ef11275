// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s
// RUN: sed -e 's/memref<3x3x6x4xi8>/memref<3x3x6x4xf32>/g' %s | not %tfc-opt - -p tfc-lower-gpu 2>&1 | filecheck %s --check-prefix=ERR

// quantized_conv2d (tfc/passes/gpu_quant_library.py): one thread per output
// element (n, oh, ow, co), the accumulator starting at bias[co]; over the 3x3
// taps (one loop), the 6 input channels as one dp4a word and a 2-byte tail;
// a tap outside the image reads pad_value (-7: numpy pads with it), selected
// byte by byte before packing; then the requantization epilogue.
// weight_quantized_conv2d: conv2d's fma sum with each weight dequantized.
func.func @qc(%x: memref<1x5x4x6xi8>, %xf: memref<1x5x4x6xf32>, %arena: memref<0xi8>) -> (memref<1x5x4x4xi8>, memref<1x5x4x4xf32>) {
  %w = loops.constant dense<3> : tensor<3x3x6x4xi8> -> memref<3x3x6x4xi8>
  %b = loops.constant dense<[1, 2, 3, 4]> : tensor<4xi32> -> memref<4xi32>
  %m = loops.constant dense<[0.5, 0.25, 0.125, 0.0625]> : tensor<4xf32> -> memref<4xf32>
  %0 = loops.library "quantized_conv2d"(%x, %w, %b, %m : memref<1x5x4x6xi8>, memref<3x3x6x4xi8>, memref<4xi32>, memref<4xf32>) {attrs = {strides = array<i64: 1, 1>, padding = "SAME", dilations = array<i64: 1, 1>, pad_value = -7 : i64, out_zero_point = 0 : i64, relu = false, out_dtype = i8}} -> (memref<1x5x4x4xi8>)
  %1 = loops.library "weight_quantized_conv2d"(%xf, %w, %m : memref<1x5x4x6xf32>, memref<3x3x6x4xi8>, memref<4xf32>) {attrs = {strides = array<i64: 1, 1>, padding = "SAME", dilations = array<i64: 1, 1>}} -> (memref<1x5x4x4xf32>)
  func.return %0, %1 : memref<1x5x4x4xi8>, memref<1x5x4x4xf32>
}

// CHECK:       gpu.func @k0_quantized_conv2d_f32(
// CHECK-DAG:     %[[PAD:.*]] = arith.constant -7 : i8
// CHECK:         %[[BIAS:.*]] = tgpu.load %{{.*}}[%{{.*}}] {nc} : !tgpu.ptr<i32, global>, i32
// CHECK:         %[[ACC:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A:.*]] = %[[BIAS]]) -> (i32) : i32 {
// CHECK-COUNT-2:   arith.andi %{{.*}}, %{{.*}} : i1
// CHECK-NEXT:      %[[OK:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// CHECK:           scf.for %{{.*}} iter_args(%[[A2:.*]] = %[[A]]) -> (i32) : i32 {
// CHECK:             arith.select %[[OK]], %{{.*}}, %[[PAD]] : i8
// CHECK:             tgpu.dp4a %{{.*}}, %{{.*}}, %[[A2]] : i32
// CHECK:           }
// CHECK:           arith.select %[[OK]], %{{.*}}, %[[PAD]] : i8
// CHECK:           tgpu.dp4a
// CHECK:         }
// CHECK:         arith.sitofp %[[ACC]] : i32 to f32
// CHECK:         math.roundeven
// CHECK:       gpu.func @k1_weight_quantized_conv2d_f32(
// CHECK:         arith.sitofp %{{.*}} : i8 to f32
// CHECK-NEXT:    arith.mulf
// CHECK-NEXT:    math.fma

// ERR: no GPU kernel for quantized_conv2d of memref<3x3x6x4xf32> yet
