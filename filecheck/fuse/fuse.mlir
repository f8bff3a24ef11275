// RUN: %tfc-opt %s -p tfc-fuse | filecheck %s
// RUN: %tfc-opt %s -p tfc-fuse | %tfc-opt | filecheck %s

// A chain becomes one kernel; the splat constant is inlined.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:    %[[R:.*]] = tfc.fused(%x, %y) {shape = array<i64: 4>, broadcast = [array<i64: 0>, array<i64: 0>]} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32):
// CHECK-NEXT:      %[[N:.*]] = arith.negf %[[X]] : f32
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[N]], %[[Y]] : f32
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[S]] : f32
// CHECK-NEXT:      %[[C:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[E]], %[[C]] : f32
// CHECK-NEXT:      tfc.fused_yield %[[M]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]]
func.func @chain(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %two = tfc.constant dense<2.0> : tensor<f32>
  %n = tfc.negative %x : (tensor<4xf32>) -> tensor<4xf32>
  %s = tfc.add %n, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e = tfc.exp %s : (tensor<4xf32>) -> tensor<4xf32>
  %m = tfc.multiply %e, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %m : tensor<4xf32>
}

// Broadcasting: each input records the iteration dims it follows (-1: size 1).
// CHECK-LABEL: func.func @broadcast
// CHECK-NEXT:    tfc.fused(%x, %b, %c) {shape = array<i64: 2, 3, 4>, broadcast = [array<i64: 0, 1, 2>, array<i64: 2>, array<i64: 1, -1>]}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      tfc.fused_yield
// CHECK-NOT:     tfc.add
func.func @broadcast(%x: tensor<2x3x4xf32>, %b: tensor<4xf32>, %c: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %a = tfc.add %x, %b : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %m = tfc.multiply %a, %c : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  func.return %m : tensor<2x3x4xf32>
}

// broadcast_to is cheap: its body is empty, the input is read broadcast.
// CHECK-LABEL: func.func @broadcast_to
// CHECK-NEXT:    tfc.fused(%b, %x) {shape = array<i64: 2, 3>, broadcast = [array<i64: 1>, array<i64: 0, 1>]}
// CHECK-NEXT:    ^bb0(%[[B:.*]]: f32, %[[X:.*]]: f32):
// CHECK-NEXT:      arith.subf %[[B]], %[[X]]
// CHECK-NOT:     tfc.broadcast_to
func.func @broadcast_to(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %bb = tfc.broadcast_to %b {shape = array<i64: 2, 3>} : (tensor<3xf32>) -> tensor<2x3xf32>
  %s = tfc.subtract %bb, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %s : tensor<2x3xf32>
}

// A reduction is the root of the kernel that computes its input.
// CHECK-LABEL: func.func @reduction_root
// CHECK-NEXT:    %[[R:.*]] = tfc.fused(%x) {shape = array<i64: 4, 3>, broadcast = [array<i64: 0, 1>], reduce = ["sum"], reduce_axes = array<i64: 1>} : (tensor<4x3xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32):
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[X]] : f32
// CHECK-NEXT:      %[[Q:.*]] = arith.mulf %[[E]], %[[E]] : f32
// CHECK-NEXT:      tfc.fused_yield %[[Q]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[M:.*]] = tfc.fused(%x) {{.*}}reduce = ["max"], reduce_axes = array<i64: 0, 1>} : (tensor<4x3xf32>) -> tensor<1x1xf32>
// CHECK:         func.return %[[R]], %[[M]]
func.func @reduction_root(%x: tensor<4x3xf32>) -> (tensor<4xf32>, tensor<1x1xf32>) {
  %e = tfc.exp %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %q = tfc.square %e : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %s = tfc.reduce_sum %q {axis = array<i64: -1>, keepdims = false} : (tensor<4x3xf32>) -> tensor<4xf32>
  %m = tfc.reduce_max %x {keepdims = true} : (tensor<4x3xf32>) -> tensor<1x1xf32>
  func.return %s, %m : tensor<4xf32>, tensor<1x1xf32>
}

// An expensive producer with two users is computed once: the kernels of its
// users merge with its own into one kernel with two results.
// CHECK-LABEL: func.func @two_users
// CHECK-NEXT:    %[[A:.*]], %[[B:.*]] = tfc.fused(%x) {{.*}} -> (tensor<8xf32>, tensor<8xf32>) {
// CHECK-NEXT:    ^bb0(%[[X:.*]]: f32):
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[X]] : f32
// CHECK-NEXT:      %[[N:.*]] = arith.negf %[[E]] : f32
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[E]], %[[X]] : f32
// CHECK-NEXT:      tfc.fused_yield %[[N]], %[[M]] : f32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[A]], %[[B]]
func.func @two_users(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tfc.exp %x : (tensor<8xf32>) -> tensor<8xf32>
  %a = tfc.negative %e : (tensor<8xf32>) -> tensor<8xf32>
  %b = tfc.multiply %e, %x : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %a, %b : tensor<8xf32>, tensor<8xf32>
}

// A cheap producer with two users is recomputed in both kernels.
// CHECK-LABEL: func.func @cheap_two_users
// CHECK-NEXT:    tfc.fused(%x, %y)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      math.exp
// CHECK:         tfc.fused(%x, %y)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      math.log
// CHECK-NOT:     tfc.add
func.func @cheap_two_users(%x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %s = tfc.add %x, %y : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %a = tfc.exp %s : (tensor<8xf32>) -> tensor<8xf32>
  %b = tfc.log %s : (tensor<8xf32>) -> tensor<8xf32>
  func.return %a, %b : tensor<8xf32>, tensor<8xf32>
}

// matmul stays an L1 op (a library call); bias and relu fuse after it.
// CHECK-LABEL: func.func @dense
// CHECK-NEXT:    %[[M:.*]] = tfc.matmul %x, %w
// CHECK-NEXT:    tfc.fused(%[[M]], %b) {shape = array<i64: 2, 3>, broadcast = [array<i64: 0, 1>, array<i64: 1>]}
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      arith.addf
// CHECK-NEXT:      arith.constant 0.0
// CHECK-NEXT:      arith.maximumf
func.func @dense(%x: tensor<2x4xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %m = tfc.matmul %x, %w : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %a = tfc.add %m, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = tfc.relu %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// Integer ops use the integer forms; a cast ends the chain in another dtype.
// CHECK-LABEL: func.func @ints
// CHECK:         arith.muli
// CHECK-NEXT:    arith.maxsi
// CHECK-NEXT:    arith.sitofp {{.*}} : i32 to f32
func.func @ints(%x: tensor<5xi32>, %y: tensor<5xi32>) -> tensor<5xf32> {
  %m = tfc.multiply %x, %y : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  %n = tfc.maximum %m, %x : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  %c = tfc.cast %n {dtype = f32} : (tensor<5xi32>) -> tensor<5xf32>
  func.return %c : tensor<5xf32>
}

// Inside region control flow each block is fused on its own.
// CHECK-LABEL: func.func @regions
// CHECK:         tfc.cond
// CHECK-NEXT:      tfc.fused(%x)
// CHECK-NEXT:      ^bb0
// CHECK-NEXT:        arith.constant 2.0
// CHECK-NEXT:        arith.mulf
// CHECK-NEXT:        math.sin
// CHECK-NEXT:        math.cos
// CHECK:           tfc.yield
// CHECK:         } else {
// CHECK-NEXT:      tfc.yield %x
func.func @regions(%p: tensor<i1>, %x: tensor<3xf32>) -> tensor<3xf32> {
  %two = tfc.constant dense<2.0> : tensor<f32>
  %r = tfc.cond %p : (tensor<i1>) -> (tensor<3xf32>) {
    %s = tfc.multiply %x, %two : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    %a = tfc.sin %s : (tensor<3xf32>) -> tensor<3xf32>
    %b = tfc.cos %a : (tensor<3xf32>) -> tensor<3xf32>
    tfc.yield %b : tensor<3xf32>
  } else {
    tfc.yield %x : tensor<3xf32>
  }
  func.return %r : tensor<3xf32>
}

// Multi-output: the output layer of an autoencoder's loss and gradient. The
// sigmoid, the error, its squared sum and the error's gradient become one
// kernel with two results (the gradient and the sum); %b varies along the
// trailing dim only, so the kernel runs as one flat loop.
// CHECK-LABEL: func.func @loss_and_gradient
// CHECK-NEXT:    %[[S:.*]], %[[D:.*]] = tfc.fused(%z, %b, %x) {shape = array<i64: 8, 5>, broadcast = [array<i64: 0, 1>, array<i64: 1>, array<i64: 0, 1>], reduce = ["sum", "none"], reduce_axes = array<i64: 0, 1>} : (tensor<8x5xf32>, tensor<5xf32>, tensor<8x5xf32>) -> (tensor<f32>, tensor<8x5xf32>) {
// CHECK:           math.exp
// CHECK-NOT:       math.exp
// CHECK:           %[[E:.*]] = arith.subf
// CHECK-NEXT:      %[[Q:.*]] = arith.mulf %[[E]], %[[E]] : f32
// CHECK:           tfc.fused_yield %[[Q]], %{{.*}} : f32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[S]], %[[D]]
func.func @loss_and_gradient(%z: tensor<8x5xf32>, %b: tensor<5xf32>, %x: tensor<8x5xf32>) -> (tensor<f32>, tensor<8x5xf32>) {
  %a = tfc.add %z, %b : (tensor<8x5xf32>, tensor<5xf32>) -> tensor<8x5xf32>
  %y = tfc.sigmoid %a : (tensor<8x5xf32>) -> tensor<8x5xf32>
  %e = tfc.subtract %y, %x : (tensor<8x5xf32>, tensor<8x5xf32>) -> tensor<8x5xf32>
  %q = tfc.square %e : (tensor<8x5xf32>) -> tensor<8x5xf32>
  %s = tfc.reduce_sum %q {keepdims = false} : (tensor<8x5xf32>) -> tensor<f32>
  %one = tfc.constant dense<1.0> : tensor<f32>
  %u = tfc.subtract %one, %y : (tensor<f32>, tensor<8x5xf32>) -> tensor<8x5xf32>
  %v = tfc.multiply %e, %y : (tensor<8x5xf32>, tensor<8x5xf32>) -> tensor<8x5xf32>
  %d = tfc.multiply %v, %u : (tensor<8x5xf32>, tensor<8x5xf32>) -> tensor<8x5xf32>
  func.return %s, %d : tensor<f32>, tensor<8x5xf32>
}

// No merge that would make a cycle: %z reads %e and, through the reshape
// (not elementwise), the sum of %e; the sum's kernel takes %e's instead, and
// %e stays one of its results.
// CHECK-LABEL: func.func @no_cycle
// CHECK-NEXT:    %[[E:.*]], %[[S:.*]] = tfc.fused(%x) {{.*}}reduce = ["none", "sum"]
// CHECK:         %[[R:.*]] = tfc.reshape %[[S]]
// CHECK-NEXT:    tfc.fused(%[[E]], %[[R]])
func.func @no_cycle(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %e = tfc.exp %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %s = tfc.reduce_sum %e {keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  %r = tfc.reshape %s {shape = array<i64: 1, 1>} : (tensor<f32>) -> tensor<1x1xf32>
  %z = tfc.multiply %e, %r : (tensor<4x3xf32>, tensor<1x1xf32>) -> tensor<4x3xf32>
  func.return %z : tensor<4x3xf32>
}

// Elementwise results beside a reduction over some axes only stay apart (a
// row sum beside its rows is not one flat loop).
// CHECK-LABEL: func.func @partial_reduction_apart
// CHECK-NEXT:    %[[E:.*]] = tfc.fused(%x) {shape = array<i64: 4, 3>, broadcast = [array<i64: 0, 1>]} :
// CHECK:         tfc.fused(%[[E]]) {{.*}}reduce = ["sum"], reduce_axes = array<i64: 1>}
func.func @partial_reduction_apart(%x: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>) {
  %e = tfc.exp %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %s = tfc.reduce_sum %e {axis = array<i64: 1>, keepdims = false} : (tensor<4x3xf32>) -> tensor<4xf32>
  func.return %e, %s : tensor<4x3xf32>, tensor<4xf32>
}
