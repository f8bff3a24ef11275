// RUN: %tfc-opt %s -p tfc-expand --print-debuginfo | filecheck %s
// RUN: %tfc-opt %s -p tfc-expand | %tfc-opt | filecheck %s --check-prefix=ROUND
// RUN: %tfc-opt %s -p tfc-expand,tfc-cse,tfc-fuse,tfc-dce | filecheck %s --check-prefix=FUSED
// RUN: %tfc-opt %s -p tfc-expand,tfc-cse,tfc-fuse,tfc-dce,tfc-lower-loops | filecheck %s --check-prefix=LOOPS

// softmax: the max and the sum along its axis (kept, to broadcast back), an
// exp and a divide; every new op has the softmax's location.
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT:    %[[M:.*]] = tfc.reduce_max %x {axis = array<i64: 1>, keepdims = true} : (tensor<8x10xf32>) -> tensor<8x1xf32> loc("m.py":3:0)
// CHECK-NEXT:    %[[Z:.*]] = tfc.subtract %x, %[[M]] : (tensor<8x10xf32>, tensor<8x1xf32>) -> tensor<8x10xf32> loc("m.py":3:0)
// CHECK-NEXT:    %[[E:.*]] = tfc.exp %[[Z]] : (tensor<8x10xf32>) -> tensor<8x10xf32> loc("m.py":3:0)
// CHECK-NEXT:    %[[S:.*]] = tfc.reduce_sum %[[E]] {axis = array<i64: 1>, keepdims = true} : (tensor<8x10xf32>) -> tensor<8x1xf32> loc("m.py":3:0)
// CHECK-NEXT:    %[[Y:.*]] = tfc.divide %[[E]], %[[S]] : (tensor<8x10xf32>, tensor<8x1xf32>) -> tensor<8x10xf32> loc("m.py":3:0)
// CHECK-NEXT:    func.return %[[Y]]

// Four kernels: the max, the exp (kept: the sum and the divide read it), the
// sum of it, the divide.
// FUSED-LABEL: func.func @softmax
// FUSED:         %[[M:.*]] = tfc.fused(%x) {{.*}}reduce = ["max"], reduce_axes = array<i64: 1>}
// FUSED:         %[[E:.*]] = tfc.fused(%x, %[[M]])
// FUSED:           math.exp
// FUSED:         %[[S:.*]] = tfc.fused(%[[E]]) {{.*}}reduce = ["sum"], reduce_axes = array<i64: 1>}
// FUSED:         tfc.fused(%[[E]], %[[S]])
// FUSED-NEXT:    ^{{.*}}
// FUSED-NEXT:      arith.divf
// FUSED-NOT:     tfc.softmax
// FUSED:         func.return

// LOOPS-LABEL: func.func @softmax
// LOOPS-NOT:     loops.library
// LOOPS:         func.return
func.func @softmax(%x: tensor<8x10xf32>) -> tensor<8x10xf32> {
  %y = tfc.softmax %x {axis = -1 : i64} : (tensor<8x10xf32>) -> tensor<8x10xf32> loc("m.py":3:0)
  func.return %y : tensor<8x10xf32>
}

// log_softmax along a middle axis: z - log(sum(exp(z))), z = x - max.
// CHECK-LABEL: func.func @log_softmax
// CHECK-NEXT:    %[[M:.*]] = tfc.reduce_max %x {axis = array<i64: 1>, keepdims = true} : (tensor<3x5x7xf64>) -> tensor<3x1x7xf64>
// CHECK-NEXT:    %[[Z:.*]] = tfc.subtract %x, %[[M]] : (tensor<3x5x7xf64>, tensor<3x1x7xf64>) -> tensor<3x5x7xf64>
// CHECK-NEXT:    %[[E:.*]] = tfc.exp %[[Z]]
// CHECK-NEXT:    %[[S:.*]] = tfc.reduce_sum %[[E]] {axis = array<i64: 1>, keepdims = true} : (tensor<3x5x7xf64>) -> tensor<3x1x7xf64>
// CHECK-NEXT:    %[[L:.*]] = tfc.log %[[S]] : (tensor<3x1x7xf64>) -> tensor<3x1x7xf64>
// CHECK-NEXT:    %{{.*}} = tfc.subtract %[[Z]], %[[L]] : (tensor<3x5x7xf64>, tensor<3x1x7xf64>) -> tensor<3x5x7xf64>

// LOOPS-LABEL: func.func @log_softmax
// LOOPS-NOT:     loops.library
// LOOPS:         func.return
func.func @log_softmax(%x: tensor<3x5x7xf64>) -> tensor<3x5x7xf64> {
  %y = tfc.log_softmax %x {axis = 1 : i64} : (tensor<3x5x7xf64>) -> tensor<3x5x7xf64>
  func.return %y : tensor<3x5x7xf64>
}

// The sparse cross-entropy: log(sum(exp(x - max))) - (x[label] - max), the
// logit at each label picked (and the labels checked) by pick_along_last.
// CHECK-LABEL: func.func @xent
// CHECK-NEXT:    %[[P:.*]] = tfc.pick_along_last %x, %l : (tensor<6x5xf32>, tensor<6xi32>) -> tensor<6xf32> loc("m.py":9:0)
// CHECK-NEXT:    %[[M:.*]] = tfc.reduce_max %x {axis = array<i64: 1>, keepdims = true} : (tensor<6x5xf32>) -> tensor<6x1xf32> loc("m.py":9:0)
// CHECK-NEXT:    %[[Z:.*]] = tfc.subtract %x, %[[M]]
// CHECK-NEXT:    %[[E:.*]] = tfc.exp %[[Z]]
// CHECK-NEXT:    %[[S:.*]] = tfc.reduce_sum %[[E]] {axis = array<i64: 1>, keepdims = true} : (tensor<6x5xf32>) -> tensor<6x1xf32>
// CHECK-NEXT:    %[[SR:.*]] = tfc.reshape %[[S]] {shape = array<i64: 6>} : (tensor<6x1xf32>) -> tensor<6xf32>
// CHECK-NEXT:    %[[LS:.*]] = tfc.log %[[SR]]
// CHECK-NEXT:    %[[MR:.*]] = tfc.reshape %[[M]] {shape = array<i64: 6>} : (tensor<6x1xf32>) -> tensor<6xf32>
// CHECK-NEXT:    %[[ZL:.*]] = tfc.subtract %[[P]], %[[MR]] : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
// CHECK-NEXT:    %{{.*}} = tfc.subtract %[[LS]], %[[ZL]] : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32> loc("m.py":9:0)

// No library call: the pick is a reduction that checks the labels (its error
// path raises eager's error) and a kernel of indexed loads.
// LOOPS-LABEL: func.func @xent
// LOOPS-NOT:     loops.library
// LOOPS:         reduce = ["any"]
// LOOPS:         loops.if
// LOOPS-NEXT:      loops.raise "pick_along_last"(%x, %l : memref<6x5xf32>, memref<6xi32>)
// LOOPS:         loops.load_at %x
// LOOPS-NOT:     loops.library
// LOOPS:         func.return
func.func @xent(%l: tensor<6xi32>, %x: tensor<6x5xf32>) -> tensor<6xf32> {
  %0 = tfc.sparse_softmax_cross_entropy_with_logits %l, %x : (tensor<6xi32>, tensor<6x5xf32>) -> tensor<6xf32> loc("m.py":9:0)
  func.return %0 : tensor<6xf32>
}

// Inside a region too.
// CHECK-LABEL: func.func @in_cond
// CHECK:         tfc.cond %p
// CHECK-NEXT:      tfc.reduce_max %x {axis = array<i64: 0>, keepdims = true} : (tensor<4x3xf64>) -> tensor<1x3xf64>
// CHECK:           tfc.divide
// CHECK-NEXT:      tfc.yield
func.func @in_cond(%p: tensor<i1>, %x: tensor<4x3xf64>) -> tensor<4x3xf64> {
  %0 = tfc.cond %p : (tensor<i1>) -> tensor<4x3xf64> {
    %1 = tfc.softmax %x {axis = 0 : i64} : (tensor<4x3xf64>) -> tensor<4x3xf64>
    tfc.yield %1 : tensor<4x3xf64>
  } else {
    tfc.yield %x : tensor<4x3xf64>
  }
  func.return %0 : tensor<4x3xf64>
}

// A dimension known only at run time: the op stays whole (its kernel runs
// on chunks of rows); specialization gives it static shapes first.
// CHECK-LABEL: func.func @dynamic
// CHECK-NEXT:    tfc.softmax %x {axis = -1 : i64} : (tensor<?x10xf32>) -> tensor<?x10xf32>
// ROUND-LABEL: func.func @dynamic
// ROUND-NEXT:    tfc.softmax %x
func.func @dynamic(%x: tensor<?x10xf32>) -> tensor<?x10xf32> {
  %y = tfc.softmax %x {axis = -1 : i64} : (tensor<?x10xf32>) -> tensor<?x10xf32>
  func.return %y : tensor<?x10xf32>
}
