// RUN: %tfc-opt %s -p 'tfc-quantize{mode=weights}' | filecheck %s
// RUN: %tfc-opt %s -p 'tfc-quantize{mode=weights per_channel=false}' | filecheck %s --check-prefix=TENSOR
// RUN: %tfc-opt %s -p 'tfc-quantize{mode=weights exclude="conv2d,w_last"}' | filecheck %s --check-prefix=EXCLUDE

// Weight-only: int8 weights and per-channel scales, float compute; the bias add
// and relu stay float ops. A transposed weight is quantized as the product reads it.
// CHECK-LABEL: func.func @dense
// CHECK-NEXT:    %b = tfc.constant dense<[1.000000e-01, -2.000000e-01]>
// CHECK-NEXT:    %0 = tfc.constant dense<{{\[\[}}127, -64], [64, 0], [-32, 127]]> : tensor<3x2xi8>
// CHECK-NEXT:    %1 = tfc.constant dense<[0.00393700786, 0.0157480314]> : tensor<2xf32>
// CHECK-NEXT:    %2 = tfc.weight_quantized_matmul %x, %0, %1 : (tensor<2x3xf32>, tensor<3x2xi8>, tensor<2xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    %3 = tfc.add %2, %b
// CHECK-NEXT:    %4 = tfc.relu %3
// CHECK-NEXT:    %5 = tfc.constant dense<{{\[\[}}127], [-127]]> : tensor<2x1xi8>
// CHECK:         tfc.weight_quantized_matmul %4, %5, %{{.*}} : (tensor<2x2xf32>, tensor<2x1xi8>, tensor<1xf32>) -> tensor<2x1xf32>

// One scale for the whole tensor: 2.0 / 127 on both columns, stored once.
// TENSOR-LABEL: func.func @dense
// TENSOR:         tfc.constant dense<{{\[\[}}32, -64], [16, 0], [-8, 127]]> : tensor<3x2xi8>
// TENSOR-NEXT:    tfc.constant dense<0.0157480314> : tensor<1xf32>

// exclude names op kinds or weights (the tfc.variable name of a frozen weight).
// EXCLUDE-LABEL: func.func @dense
// EXCLUDE:         tfc.weight_quantized_matmul
// EXCLUDE:         tfc.matmul %4, %w2 {transpose_a = false, transpose_b = true}
// EXCLUDE-LABEL: func.func @conv
// EXCLUDE-NEXT:    tfc.constant
// EXCLUDE-NEXT:    tfc.conv2d
func.func @dense(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %w = tfc.constant dense<[[0.5, -1.0], [0.25, 0.0], [-0.125, 2.0]]> : tensor<3x2xf32>
  %b = tfc.constant dense<[0.1, -0.2]> : tensor<2xf32>
  %0 = tfc.matmul %x, %w {transpose_a = false, transpose_b = false} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %1 = tfc.add %0, %b : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %2 = tfc.relu %1 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %w2 = tfc.constant dense<[[1.0, -1.0]]> : tensor<1x2xf32> {tfc.variable = "w_last"}
  %3 = tfc.matmul %2, %w2 {transpose_a = false, transpose_b = true} : (tensor<2x2xf32>, tensor<1x2xf32>) -> tensor<2x1xf32>
  func.return %3 : tensor<2x1xf32>
}

// conv2d: HWIO filters, one scale per output channel (the last axis).
// CHECK-LABEL: func.func @conv
// CHECK-NEXT:    %0 = tfc.constant dense<{{\[\[\[\[}}127, -127], [64, 64]]]]> : tensor<1x1x2x2xi8>
// CHECK-NEXT:    %1 = tfc.constant dense<[0.00787401572, 0.0236220472]> : tensor<2xf32>
// CHECK-NEXT:    %2 = tfc.weight_quantized_conv2d %x, %0, %1 {strides = array<i64: 1, 1>, padding = "SAME", dilations = array<i64: 1, 1>}
func.func @conv(%x: tensor<1x4x4x2xf32>) -> tensor<1x4x4x2xf32> {
  %w = tfc.constant dense<[[[[1.0, -3.0], [0.5, 1.5]]]]> : tensor<1x1x2x2xf32>
  %0 = tfc.conv2d %x, %w {strides = array<i64: 1, 1>, padding = "SAME", dilations = array<i64: 1, 1>} : (tensor<1x4x4x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x4x4x2xf32>
  func.return %0 : tensor<1x4x4x2xf32>
}
