// RUN: %tfc-opt %s -p tfc-fuse,tfc-bufferize,tfc-plan-memory,tfc-lower-loops | filecheck %s
// Where scalars live: a 0-d value a kernel makes stays a 0-d buffer (memref<f32>) that later
// kernels read; 0-d scalar code on such values is a loops.parallel over shape () writing a
// 0-d buffer; scalar code on host values (arguments, constants) stays inline arith. The host
// reads a buffer with loops.load only where it needs the value: a function result, a
// loops.if predicate (and loops.while conditions, print, assert, variables, library calls).

func.func @f(%x: tensor<4x3xf32>, %a: tensor<f32>) -> (tensor<4x3xf32>, tensor<f32>, tensor<f32>) {
  %s = tfc.reduce_sum %x {keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  %m = tfc.reduce_max %x {keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  %q = tfc.divide %s, %m : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %y = tfc.multiply %x, %q : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %b = tfc.multiply %a, %a : (tensor<f32>, tensor<f32>) -> tensor<f32>
  func.return %y, %q, %b : tensor<4x3xf32>, tensor<f32>, tensor<f32>
}

func.func @g(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %z = tfc.constant dense<0.000000e+00> : tensor<f32>
  %s = tfc.reduce_sum %x {keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  %p = tfc.greater %s, %z : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %c = tfc.cond %p : (tensor<i1>) -> tensor<4x3xf32> {
    %e = tfc.exp %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
    tfc.yield %e : tensor<4x3xf32>
  } else {
    tfc.yield %x : tensor<4x3xf32>
  }
  func.return %c : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @f(%x: memref<4x3xf32>, %a: f32, %arena: memref<128xi8>) -> (memref<4x3xf32>, f32, f32)
// CHECK:         %[[S:.*]] = loops.view %arena {offset = 0 : i64} : memref<128xi8> -> memref<f32>
// CHECK:         %[[M:.*]] = loops.view %arena {offset = 64 : i64} : memref<128xi8> -> memref<f32>
// CHECK-NOT:     loops.load
// CHECK:         loops.parallel ins(%x : memref<4x3xf32>) outs(%[[S]] : memref<f32>) {{.*}}reduce = ["sum"]
// CHECK-NOT:     loops.load
// CHECK:         loops.parallel ins(%x : memref<4x3xf32>) outs(%[[M]] : memref<f32>) {{.*}}reduce = ["max"]
// CHECK-NOT:     loops.load
// the quotient: a 0-d kernel (in place over the sum's buffer)
// CHECK:         loops.parallel ins(%[[S]], %[[M]] : memref<f32>, memref<f32>) outs(%[[S]] : memref<f32>) attributes {shape = array<i64>, broadcast = [array<i64>, array<i64>]}
// CHECK:           arith.divf
// CHECK-NOT:     loops.load
// CHECK:         loops.parallel ins(%x, %[[S]] : memref<4x3xf32>, memref<f32>) outs(%{{.*}} : memref<4x3xf32>) attributes {shape = array<i64: 4, 3>, broadcast = [array<i64: 0, 1>, array<i64>]}
// host scalar code on an argument: inline
// CHECK:         %[[B:.*]] = arith.mulf %a, %a : f32
// CHECK-NEXT:    %[[Q:.*]] = loops.load %[[S]] : memref<f32> -> f32
// CHECK-NEXT:    func.return %{{.*}}, %[[Q]], %[[B]] : memref<4x3xf32>, f32, f32

// CHECK-LABEL: func.func @g
// CHECK:         %[[S:.*]] = loops.view %arena {offset = 0 : i64} : memref<128xi8> -> memref<f32>
// CHECK:         %[[P:.*]] = loops.view %arena {offset = 64 : i64} : memref<128xi8> -> memref<i1>
// CHECK:         loops.parallel ins(%x : memref<4x3xf32>) outs(%[[S]] : memref<f32>)
// CHECK:         loops.parallel ins(%[[S]] : memref<f32>) outs(%[[P]] : memref<i1>) attributes {shape = array<i64>
// CHECK:           arith.cmpf ogt
// CHECK:         %[[H:.*]] = loops.load %[[P]] : memref<i1> -> i1
// CHECK-NEXT:    loops.if %[[H]] : (i1) -> memref<4x3xf32> {
