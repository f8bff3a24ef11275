// RUN: %tfc-opt %s -p tfc-fuse,tfc-dce,tfc-plan-memory | filecheck %s
// Buffer 0 (the matmul's in-place chain up to the result) is fresh (-1); the
// arena holds the 0-d sum (1), exp(x) (2) and the second matmul (3), all
// live at that matmul, so three 64-byte-aligned slots.

func.func @f(%x: tensor<4x3xf32>, %w: tensor<3x3xf32>) -> tensor<4x3xf32> {
  %m = tfc.matmul %x, %w {transpose_a = false, transpose_b = false} : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %e = tfc.exp %m : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %t = tfc.tanh %e : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %s = tfc.reduce_sum %t {keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  %r = tfc.multiply %t, %s : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %k = tfc.exp %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %q = tfc.matmul %k, %w {transpose_a = false, transpose_b = false} : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  %z = tfc.add %q, %r : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %z : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @f
// CHECK-SAME:    tfc.offsets = array<i64: -1, 128, 0, 64>, tfc.arena_size = 192 : i64
