// RUN: %tfc-opt %s -p tfc-quantize | filecheck %s
// RUN: %tfc-opt %s -p 'tfc-quantize{per_channel=false}' | filecheck %s --check-prefix=TENSOR
// RUN: %tfc-opt %s -p 'tfc-quantize{codes=f32}' | filecheck %s --check-prefix=F32

// A dense layer with relu feeding another: the first keeps its result int8 (no
// dequantize / quantize between them), relu is the clamp at the output's zero
// point, the last gives float32; the input's zero point is folded into the bias.
// Weights per output channel: column 0 max 0.5 -> scale 0.5/127, codes 127, 64, -32.
// CHECK-LABEL: func.func @two_dense
// CHECK-NEXT:    %0 = tfc.quantize %x {scale = 0.0078431372549019607 : f64, zero_point = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xi8>
// CHECK-NEXT:    %1 = tfc.constant dense<{{\[\[}}127, -64], [64, 0], [-32, 127]]> : tensor<3x2xi8>
// CHECK-NEXT:    %2 = tfc.constant dense<[3239, -1619]> : tensor<2xi32>
// CHECK-NEXT:    %3 = tfc.constant dense<[0.00262467191, 0.0104986876]> : tensor<2xf32>
// CHECK-NEXT:    %4 = tfc.quantized_matmul %0, %1, %2, %3 {out_zero_point = -128 : i64, relu = true, out_dtype = i8}
// CHECK-SAME:      -> tensor<2x2xi8>
// CHECK-NOT:     tfc.quantize %
// CHECK:         %8 = tfc.quantized_matmul %4, %5, %6, %7 {out_zero_point = 0 : i64, relu = false, out_dtype = f32}
// CHECK-SAME:      -> tensor<2x1xf32>
// CHECK-NEXT:    func.return %8 : tensor<2x1xf32>
// Per-tensor weights: one scale 2.0 / 127, so one multiplier s_in * s_w / s_out,
// stored once (shape [1]); the int32 bias stays per channel.
// TENSOR-LABEL: func.func @two_dense
// TENSOR:         tfc.constant dense<{{\[\[}}32, -64], [16, 0], [-8, 127]]> : tensor<3x2xi8>
// TENSOR-NEXT:    tfc.constant dense<[810, -1619]> : tensor<2xi32>
// TENSOR-NEXT:    tfc.constant dense<0.0104986876> : tensor<1xf32>
// TENSOR-NEXT:    tfc.quantized_matmul
// TENSOR-SAME:      (tensor<2x3xi8>, tensor<3x2xi8>, tensor<2xi32>, tensor<1xf32>) -> tensor<2x2xi8>
// The codes held in float32 (the numpy backend's form): the same constants and
// attributes, the activations' codes typed f32; the weights stay int8.
// F32-LABEL: func.func @two_dense
// F32-NEXT:    %0 = tfc.quantize %x {scale = 0.0078431372549019607 : f64, zero_point = 0 : i64, codes = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// F32-NEXT:    %1 = tfc.constant dense<{{\[\[}}127, -64], [64, 0], [-32, 127]]> : tensor<3x2xi8>
// F32-NEXT:    %2 = tfc.constant dense<[3239, -1619]> : tensor<2xi32>
// F32:         %4 = tfc.quantized_matmul %0, %1, %2, %3 {out_zero_point = -128 : i64, relu = true, out_dtype = i8, codes = f32}
// F32-SAME:      (tensor<2x3xf32>, tensor<3x2xi8>, tensor<2xi32>, tensor<2xf32>) -> tensor<2x2xf32>
// F32:         %8 = tfc.quantized_matmul %4, %5, %6, %7 {out_zero_point = 0 : i64, relu = false, out_dtype = f32, codes = f32}
// F32-SAME:      -> tensor<2x1xf32>
func.func @two_dense(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %w = tfc.constant dense<[[0.5, -1.0], [0.25, 0.0], [-0.125, 2.0]]> : tensor<3x2xf32>
  %b = tfc.constant dense<[0.1, -0.2]> : tensor<2xf32>
  %0 = tfc.matmul %x, %w {transpose_a = false, transpose_b = false, tfc.quant_input = [-1.0 : f64, 1.0 : f64], tfc.quant_output = [0.0 : f64, 3.0 : f64]} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %1 = tfc.add %0, %b : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %2 = tfc.relu %1 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %w2 = tfc.constant dense<[[1.0], [-1.0]]> : tensor<2x1xf32>
  %3 = tfc.matmul %2, %w2 {transpose_a = false, transpose_b = false, tfc.quant_input = [0.0 : f64, 3.0 : f64], tfc.quant_output = [-3.0 : f64, 3.0 : f64]} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  func.return %3 : tensor<2x1xf32>
}

// A result with a float user as well stays float: the next op quantizes it again.
// CHECK-LABEL: func.func @shared_result
// CHECK:         %[[A:.*]] = tfc.quantized_matmul {{.*}}out_dtype = f32{{.*}} -> tensor<2x2xf32>
// CHECK:         tfc.quantize %[[A]] {scale = 0.011764705882352941 : f64, zero_point = -128 : i64}
// CHECK:         tfc.quantized_matmul
// CHECK:         func.return %{{.*}}, %[[A]]
func.func @shared_result(%x: tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x2xf32>) {
  %w = tfc.constant dense<[[0.5, -1.0], [0.25, 0.0], [-0.125, 2.0]]> : tensor<3x2xf32>
  %0 = tfc.matmul %x, %w {transpose_a = false, transpose_b = false, tfc.quant_input = [-1.0 : f64, 1.0 : f64], tfc.quant_output = [0.0 : f64, 3.0 : f64]} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %w2 = tfc.constant dense<[[1.0], [-1.0]]> : tensor<2x1xf32>
  %1 = tfc.matmul %0, %w2 {transpose_a = false, transpose_b = false, tfc.quant_input = [0.0 : f64, 3.0 : f64], tfc.quant_output = [-3.0 : f64, 3.0 : f64]} : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  func.return %1, %0 : tensor<2x1xf32>, tensor<2x2xf32>
}

// Without calibrated ranges (or with weights that are not constants) an op stays float.
// CHECK-LABEL: func.func @uncalibrated
// CHECK-NEXT:    %c = tfc.constant dense<1.000000e+00>
// CHECK-NEXT:    tfc.matmul %x, %w
// CHECK-NEXT:    tfc.matmul %x, %c
// CHECK-NEXT:    func.return
func.func @uncalibrated(%x: tensor<2x3xf32>, %w: tensor<3x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %c = tfc.constant dense<1.0> : tensor<3x2xf32>
  %0 = tfc.matmul %x, %w {transpose_a = false, transpose_b = false, tfc.quant_input = [-1.0 : f64, 1.0 : f64], tfc.quant_output = [0.0 : f64, 3.0 : f64]} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %1 = tfc.matmul %x, %c {transpose_a = false, transpose_b = false} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  func.return %0, %1 : tensor<2x2xf32>, tensor<2x2xf32>
}

// conv2d with its bias and relu: the padding is the input's zero point (a real 0).
// CHECK-LABEL: func.func @conv
// CHECK:         %[[Q:.*]] = tfc.quantize %x {scale = 0.0039215686274509803 : f64, zero_point = -128 : i64}
// CHECK:         tfc.quantized_conv2d %[[Q]], {{.*}} {strides = array<i64: 1, 1>, padding = "SAME", dilations = array<i64: 1, 1>, pad_value = -128 : i64, out_zero_point = 0 : i64, relu = true, out_dtype = f32}
// CHECK-NOT:     tfc.relu
func.func @conv(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %w = tfc.constant dense<[[[[1.0, -3.0], [0.5, 1.5]]]]> : tensor<1x1x2x2xf32>
  %b = tfc.constant dense<[0.25, -0.25]> : tensor<2xf32>
  %0 = tfc.conv2d %x, %w {strides = array<i64: 1, 1>, padding = "SAME", dilations = array<i64: 1, 1>, tfc.quant_input = [0.0 : f64, 1.0 : f64], tfc.quant_output = [0.0 : f64, 2.0 : f64]} : (tensor<1x4x4x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x4x4x2xf32>
  %1 = tfc.add %0, %b : (tensor<1x4x4x2xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
  %2 = tfc.relu %1 : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  func.return %2 : tensor<1x4x4x2xf32>
}

// A max pool and a reshape between two quantized ops run on the int8 codes (exact:
// quantization is monotone), so the conv's result stays int8 with its own output
// scale and zero point, and nothing is dequantized or quantized between the layers;
// the float pool and reshape are gone. A pool whose result has another user stays float.
// CHECK-LABEL: func.func @conv_pool_dense
// CHECK:         %[[C:.*]] = tfc.quantized_conv2d {{.*}}out_zero_point = -128 : i64, relu = true, out_dtype = i8}{{.*}} -> tensor<1x4x4x2xi8>
// CHECK-NEXT:    %[[P:.*]] = tfc.max_pool2d %[[C]] {ksize = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = "VALID"} : (tensor<1x4x4x2xi8>) -> tensor<1x2x2x2xi8>
// CHECK-NEXT:    %[[R:.*]] = tfc.reshape %[[P]] {shape = array<i64: 1, 8>} : (tensor<1x2x2x2xi8>) -> tensor<1x8xi8>
// CHECK-NOT:     tfc.quantize %
// CHECK:         tfc.quantized_matmul %[[R]], {{.*}}out_dtype = f32}
// CHECK-NOT:     tfc.max_pool2d
// CHECK-NOT:     tfc.reshape
// CHECK:         func.return
// CHECK-LABEL: func.func @pool_used_twice
// CHECK:         tfc.quantized_conv2d {{.*}}out_dtype = f32}
// CHECK-NEXT:    %[[P:.*]] = tfc.max_pool2d {{.*}} -> tensor<1x2x2x2xf32>
// CHECK-NEXT:    %[[R:.*]] = tfc.reshape %[[P]]
// CHECK-NEXT:    tfc.quantize %[[R]]
// With codes=f32 the codes a quantize makes for a conv2d stay int8 all the way
// (the pool and reshape on int8, the matmul after them reading int8).
// F32-LABEL: func.func @conv_pool_dense
// F32:         tfc.quantize %x {scale = 0.0039215686274509803 : f64, zero_point = -128 : i64} : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xi8>
// F32:         tfc.max_pool2d {{.*}} : (tensor<1x4x4x2xi8>) -> tensor<1x2x2x2xi8>
// F32:         tfc.quantized_matmul {{.*}}out_dtype = f32}
// F32-SAME:      (tensor<1x8xi8>,
func.func @conv_pool_dense(%x: tensor<1x4x4x2xf32>) -> tensor<1x1xf32> {
  %w = tfc.constant dense<[[[[1.0, -3.0], [0.5, 1.5]]]]> : tensor<1x1x2x2xf32>
  %0 = tfc.conv2d %x, %w {strides = array<i64: 1, 1>, padding = "SAME", dilations = array<i64: 1, 1>, tfc.quant_input = [0.0 : f64, 1.0 : f64], tfc.quant_output = [0.0 : f64, 2.0 : f64]} : (tensor<1x4x4x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x4x4x2xf32>
  %1 = tfc.relu %0 : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %2 = tfc.max_pool2d %1 {ksize = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = "VALID"} : (tensor<1x4x4x2xf32>) -> tensor<1x2x2x2xf32>
  %3 = tfc.reshape %2 {shape = array<i64: 1, 8>} : (tensor<1x2x2x2xf32>) -> tensor<1x8xf32>
  %w2 = tfc.constant dense<[[1.0], [-1.0], [0.5], [0.25], [1.0], [-1.0], [0.5], [0.25]]> : tensor<8x1xf32>
  %4 = tfc.matmul %3, %w2 {transpose_a = false, transpose_b = false, tfc.quant_input = [0.0 : f64, 2.0 : f64], tfc.quant_output = [-3.0 : f64, 3.0 : f64]} : (tensor<1x8xf32>, tensor<8x1xf32>) -> tensor<1x1xf32>
  func.return %4 : tensor<1x1xf32>
}
func.func @pool_used_twice(%x: tensor<1x4x4x2xf32>) -> (tensor<1x1xf32>, tensor<1x2x2x2xf32>) {
  %w = tfc.constant dense<[[[[1.0, -3.0], [0.5, 1.5]]]]> : tensor<1x1x2x2xf32>
  %0 = tfc.conv2d %x, %w {strides = array<i64: 1, 1>, padding = "SAME", dilations = array<i64: 1, 1>, tfc.quant_input = [0.0 : f64, 1.0 : f64], tfc.quant_output = [0.0 : f64, 2.0 : f64]} : (tensor<1x4x4x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x4x4x2xf32>
  %1 = tfc.relu %0 : (tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32>
  %2 = tfc.max_pool2d %1 {ksize = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = "VALID"} : (tensor<1x4x4x2xf32>) -> tensor<1x2x2x2xf32>
  %3 = tfc.reshape %2 {shape = array<i64: 1, 8>} : (tensor<1x2x2x2xf32>) -> tensor<1x8xf32>
  %w2 = tfc.constant dense<[[1.0], [-1.0], [0.5], [0.25], [1.0], [-1.0], [0.5], [0.25]]> : tensor<8x1xf32>
  %4 = tfc.matmul %3, %w2 {transpose_a = false, transpose_b = false, tfc.quant_input = [0.0 : f64, 2.0 : f64], tfc.quant_output = [-3.0 : f64, 3.0 : f64]} : (tensor<1x8xf32>, tensor<8x1xf32>) -> tensor<1x1xf32>
  func.return %4, %2 : tensor<1x1xf32>, tensor<1x2x2x2xf32>
}
