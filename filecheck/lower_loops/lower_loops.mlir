// RUN: %tfc-opt %s -p tfc-fuse,tfc-dce,tfc-lower-loops | filecheck %s
// RUN: %tfc-opt %s -p tfc-fuse,tfc-dce,tfc-bufferize,tfc-plan-memory,tfc-lower-loops --print-ir-after-all 2>&1 | filecheck %s --check-prefix=STAGES

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

// CHECK-LABEL: func.func @f(%x: memref<4x3xf32>, %w: memref<3x3xf32>, %arena: memref<192xi8>) -> memref<4x3xf32>
// CHECK:         %[[SUM:.*]] = loops.view %arena {offset = 128 : i64} : memref<192xi8> -> memref<f32>
// CHECK:         %[[K:.*]] = loops.view %arena {offset = 0 : i64} : memref<192xi8> -> memref<4x3xf32>
// CHECK:         %[[Q:.*]] = loops.view %arena {offset = 64 : i64} : memref<192xi8> -> memref<4x3xf32>
// CHECK:         %[[R:.*]] = loops.alloc : memref<4x3xf32>
// CHECK:         loops.library "matmul"(%x, %w : {{.*}}) outs(%[[R]] : memref<4x3xf32>)
// CHECK:         loops.parallel ins(%[[R]] : memref<4x3xf32>) outs(%[[R]], %[[SUM]] : memref<4x3xf32>, memref<f32>) {{.*}}reduce = ["none", "sum"], reduce_axes = array<i64: 0, 1>}
// CHECK:           math.exp
// CHECK:           %[[T:.*]] = math.tanh
// CHECK:           loops.yield %[[T]], %[[T]] : f32, f32
// the 0-d sum stays a 0-d buffer that the next kernel reads (no loops.load: no host read)
// CHECK-NOT:     loops.load
// CHECK:         loops.parallel ins(%x : memref<4x3xf32>) outs(%[[K]] : memref<4x3xf32>)
// CHECK:         loops.library "matmul"(%[[K]], %w : {{.*}}) outs(%[[Q]] : memref<4x3xf32>)
// CHECK:         loops.parallel ins(%[[R]], %[[SUM]], %[[Q]] : memref<4x3xf32>, memref<f32>, memref<4x3xf32>) outs(%[[R]] : memref<4x3xf32>) {{.*}}broadcast = [array<i64: 0, 1>, array<i64>, array<i64: 0, 1>]
// CHECK:         func.return %[[R]] : memref<4x3xf32>

// STAGES: IR Dump After tfc-bufferize
// STAGES: tfc.buffers
// STAGES: IR Dump After tfc-plan-memory
// STAGES: tfc.offsets
// STAGES: IR Dump After tfc-lower-loops
// STAGES: loops.parallel
