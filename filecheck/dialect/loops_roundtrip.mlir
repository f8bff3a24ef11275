// RUN: %tfc-opt %s | %tfc-opt | filecheck %s
// The L3 loops dialect prints and parses back.

func.func @f(%x: memref<4x3xf32>, %s: f32, %v: !tfc.ref<tensor<3xf32>>, %arena: memref<256xi8>) -> (memref<4x3xf32>, f32) {
  %b = loops.view %arena {offset = 64 : i64} : memref<256xi8> -> memref<4x3xf32>
  %o = loops.alloc : memref<4x3xf32>
  %c = loops.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32> -> memref<3xf32>
  loops.parallel ins(%x, %c, %s : memref<4x3xf32>, memref<3xf32>, f32) outs(%b : memref<4x3xf32>) attributes {shape = array<i64: 4, 3>, broadcast = [array<i64: 0, 1>, array<i64: 1>, array<i64>]} {
  ^bb0(%a: f32, %cc: f32, %ss: f32):
    %t = arith.addf %a, %cc : f32
    %u = arith.mulf %t, %ss : f32
    loops.yield %u : f32
  }
  %r = loops.view %arena {offset = 0 : i64} : memref<256xi8> -> memref<f32>
  loops.parallel ins(%b : memref<4x3xf32>) outs(%r : memref<f32>) attributes {shape = array<i64: 4, 3>, broadcast = [array<i64: 0, 1>], reduce = ["sum"], reduce_axes = array<i64: 0, 1>} {
  ^bb0(%a: f32):
    loops.yield %a : f32
  }
  %rs = loops.load %r : memref<f32> -> f32
  %m = loops.library "matmul"(%b, %b : memref<4x3xf32>, memref<4x3xf32>) {attrs = {transpose_a = false, transpose_b = true}} -> (memref<4x4xf32>)
  loops.library "exp"(%b : memref<4x3xf32>) outs(%o : memref<4x3xf32>) {attrs = {}} -> ()
  %p = arith.constant 0.0 : f32
  %cnd = arith.cmpf ogt, %rs, %p : f32
  %w = loops.if %cnd : (i1) -> (f32) {
    loops.yield %rs : f32
  } else {
    loops.yield %p : f32
  }
  %w2 = loops.while %w : (f32) -> (f32) cond {
  ^bb0(%q: f32):
    %k = arith.cmpf olt, %q, %p : f32
    loops.condition %k : i1
  } do {
  ^bb0(%q: f32):
    loops.yield %q : f32
  }
  loops.copy %b, %o : memref<4x3xf32>, memref<4x3xf32>
  %rv = loops.read_variable %v : !tfc.ref<tensor<3xf32>> -> memref<3xf32>
  loops.assign_variable %v, %c : !tfc.ref<tensor<3xf32>>, memref<3xf32>
  loops.print %rs {format = "{}"} : f32
  loops.assert %cnd {message = "x"} : i1
  func.return %o, %w2 : memref<4x3xf32>, f32
}
// CHECK: loops.view %arena {offset = 64 : i64}
// CHECK: loops.parallel ins(%x, %c, %s : memref<4x3xf32>, memref<3xf32>, f32) outs(%b : memref<4x3xf32>)
// CHECK: loops.library "matmul"
// CHECK: loops.if
// CHECK: loops.while
// CHECK: loops.condition

// Views, indexed reads: strided layouts in the memref types print and parse back.
func.func @views(%x: memref<8x4xf32>, %n: memref<5xi32>, %arena: memref<256xi8>) -> memref<3x4xf32> {
  %v = loops.subview %x [2, 3][3, 4][2, -1] : memref<8x4xf32> -> memref<3x4xf32, strided<[8, -1], offset: 11>>
  %r = loops.subview %x [1, 0][1, 4][1, 1] : memref<8x4xf32> -> memref<4xf32, strided<[1], offset: 4>>
  %t = loops.transpose_view %x {permutation = array<i64: 1, 0>} : memref<8x4xf32> -> memref<4x8xf32, strided<[1, 4]>>
  %s = loops.reshape %x : memref<8x4xf32> -> memref<2x16xf32>
  %s2 = loops.reshape %r : memref<4xf32, strided<[1], offset: 4>> -> memref<2x2xf32>
  %o = loops.alloc : memref<3x4xf32>
  loops.parallel ins(%v : memref<3x4xf32, strided<[8, -1], offset: 11>>) outs(%o : memref<3x4xf32>) attributes {shape = array<i64: 3, 4>, broadcast = [array<i64: 0, 1>]} {
  ^bb0(%a: f32):
    %i = loops.index 0 : index
    %j = loops.index 1 : index
    %w = loops.load_at %x[%i, %j] : memref<8x4xf32> -> f32
    %k = loops.load_at %n[%j] : memref<5xi32> -> i32
    %u = arith.addf %a, %w : f32
    loops.yield %u : f32
  }
  %true = arith.constant true
  loops.if %true : (i1) -> () {
    loops.raise "gather"(%x, %n : memref<8x4xf32>, memref<5xi32>) {attrs = {axis = 0 : i64}}
    loops.yield
  } else {
    loops.yield
  }
  func.return %o : memref<3x4xf32>
}
// CHECK-LABEL: func.func @views
// CHECK: loops.subview %x [2, 3] [3, 4] [2, -1] : memref<8x4xf32> -> memref<3x4xf32, strided<[8, -1], offset: 11>>
// CHECK: loops.subview %x [1, 0] [1, 4] [1, 1] : memref<8x4xf32> -> memref<4xf32, strided<[1], offset: 4>>
// CHECK: loops.transpose_view %x {permutation = array<i64: 1, 0>} : memref<8x4xf32> -> memref<4x8xf32, strided<[1, 4]>>
// CHECK: loops.reshape %x : memref<8x4xf32> -> memref<2x16xf32>
// CHECK: loops.reshape %r : memref<4xf32, strided<[1], offset: 4>> -> memref<2x2xf32>
// CHECK: %i = loops.index 0 : index
// CHECK: %w = loops.load_at %x[%i, %j] : memref<8x4xf32> -> f32
// CHECK: loops.raise "gather"(%x, %n : memref<8x4xf32>, memref<5xi32>) {attrs = {axis = 0 : i64}}
