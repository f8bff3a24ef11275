// RUN: %tfc-opt %s -p tfc-fuse,tfc-dce,tfc-bufferize | filecheck %s
// Kernel results get buffers; an elementwise kernel whose input dies reuses its
// buffer in place (the matmul's buffer 0 holds %m, %t and %z; the kernel of %t
// and its sum %s has one result of each kind); the returned
// value's buffer is fresh.

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
// CHECK-SAME:    tfc.fresh = array<i64: 0>
// CHECK:         %m = tfc.matmul {{.*}}tfc.buffers = array<i64: 0>
// CHECK:         %t, %s = tfc.fused(%m) {tfc.buffers = array<i64: 0, 1>, {{.*}}reduce = ["none", "sum"]
// CHECK:         %k = tfc.fused(%x) {tfc.buffers = array<i64: 2>,
// CHECK:         %q = tfc.matmul {{.*}}tfc.buffers = array<i64: 3>
// CHECK:         %z = tfc.fused(%t, %s, %q) {tfc.buffers = array<i64: 0>,
