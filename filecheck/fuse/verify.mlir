// RUN: %tfc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// The tfc.fused verifier: inputs must fit the iteration shape through their broadcast maps.

// CHECK: tfc.fused: input 1 dim 0 has size 4, expected 3 (iteration shape [2, 3], broadcast [1])
func.func @bad_broadcast(%x: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  %r = tfc.fused(%x, %b) {shape = array<i64: 2, 3>, broadcast = [array<i64: 0, 1>, array<i64: 1>]} : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: f32, %c: f32):
    %s = arith.addf %a, %c : f32
    tfc.fused_yield %s : f32
  }
  func.return %r : tensor<2x3xf32>
}

// -----

// CHECK: tfc.fused: result 0 has shape [2], which does not fit iteration shape [2, 3] reduced over [0]
func.func @bad_reduce(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %r = tfc.fused(%x) {shape = array<i64: 2, 3>, broadcast = [array<i64: 0, 1>], reduce = ["sum"], reduce_axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<2xf32> {
  ^bb0(%a: f32):
    tfc.fused_yield %a : f32
  }
  func.return %r : tensor<2xf32>
}

// -----

// CHECK: tfc.fused: unknown reduction 'mode'
func.func @bad_kind(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  %r = tfc.fused(%x) {shape = array<i64: 2, 3>, broadcast = [array<i64: 0, 1>], reduce = ["mode"], reduce_axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32> {
  ^bb0(%a: f32):
    tfc.fused_yield %a : f32
  }
  func.return %r : tensor<3xf32>
}

// -----

// CHECK: tfc.fused: body argument 0 has type i32, expected f32
func.func @bad_arg(%x: tensor<3xf32>) -> tensor<3xi32> {
  %r = tfc.fused(%x) {shape = array<i64: 3>, broadcast = [array<i64: 0>]} : (tensor<3xf32>) -> tensor<3xi32> {
  ^bb0(%a: i32):
    tfc.fused_yield %a : i32
  }
  func.return %r : tensor<3xi32>
}

// -----

// CHECK: tfc.fused: reduce needs one string per result (2), got 1
func.func @kinds_per_result(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<f32>) {
  %r, %s = tfc.fused(%x) {shape = array<i64: 2, 3>, broadcast = [array<i64: 0, 1>], reduce = ["sum"], reduce_axes = array<i64: 0, 1>} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<f32>) {
  ^bb0(%a: f32):
    tfc.fused_yield %a, %a : f32, f32
  }
  func.return %r, %s : tensor<2x3xf32>, tensor<f32>
}

// -----

// CHECK: tfc.fused: reduce names no reduction (leave it out for an elementwise kernel)
func.func @no_reduction(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %r = tfc.fused(%x) {shape = array<i64: 2, 3>, broadcast = [array<i64: 0, 1>], reduce = ["none"], reduce_axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: f32):
    tfc.fused_yield %a : f32
  }
  func.return %r : tensor<2x3xf32>
}

// -----

// CHECK: tfc.fused: result 0 has shape [3], which does not fit iteration shape [2, 3]
func.func @elementwise_result_shape(%x: tensor<2x3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %r, %s = tfc.fused(%x) {shape = array<i64: 2, 3>, broadcast = [array<i64: 0, 1>], reduce = ["none", "sum"], reduce_axes = array<i64: 0>} : (tensor<2x3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  ^bb0(%a: f32):
    tfc.fused_yield %a, %a : f32, f32
  }
  func.return %r, %s : tensor<3xf32>, tensor<3xf32>
}
