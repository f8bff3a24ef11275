// RUN: not %tfc-opt %s -p 'tfc-quantize{mode=int4}' 2>&1 | filecheck %s --check-prefix=MODE
// RUN: not %tfc-opt %s -p 'tfc-quantize' 2>&1 | filecheck %s --check-prefix=RANGE
// RUN: not %tfc-opt %s -p 'tfc-quantize{codes=f16}' 2>&1 | filecheck %s --check-prefix=CODES

// MODE: tfc-quantize: mode must be one of static, weights, got 'int4'
// CODES: tfc-quantize: codes must be one of i8, f32, got 'f16'
// RANGE: errors.mlir:10:{{[0-9]+}}: error: tfc.matmul: attribute tfc.quant_input must be a finite range lo <= hi, got [1.0, -1.0]
func.func @f(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %w = tfc.constant dense<1.0> : tensor<3x2xf32>
  %0 = tfc.matmul %x, %w {transpose_a = false, transpose_b = false, tfc.quant_input = [1.0 : f64, -1.0 : f64], tfc.quant_output = [0.0 : f64, 3.0 : f64]} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}
