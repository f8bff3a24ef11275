// RUN: %tfc-opt %s -p tfc-fuse,tfc-bufferize,tfc-plan-memory,tfc-lower-loops | filecheck %s
// loops.while carries each tensor loop variable of static shape in planned arena buffers:
// nothing is allocated in the loop. Where the kernel making the next value reads the
// variable at the same index after every other read of it, it writes the variable's buffer
// in place (@f); else the variable has two buffers, its value's and a spare passed as one
// more loop variable: the body writes the spare and the yield swaps the two (@g, @h). An init
// that is an argument is copied in (the loop never writes it); an init made by a kernel that
// dies at the loop is the first buffer itself. A returned result is copied once into a fresh
// buffer after the loop (never a view of the arena); one read by a kernel is read in place.

func.func @f(%x: tensor<4x3xf32>, %n: tensor<i32>) -> tensor<4x3xf32> {
  %z = tfc.constant dense<0> : tensor<i32>
  %one = tfc.constant dense<1> : tensor<i32>
  %h = tfc.constant dense<5.000000e-01> : tensor<f32>
  %i, %w = tfc.while %z, %x : (tensor<i32>, tensor<4x3xf32>) -> (tensor<i32>, tensor<4x3xf32>) cond {
  ^bb0(%k: tensor<i32>, %y: tensor<4x3xf32>):
    %c = tfc.less %k, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    tfc.condition %c : tensor<i1>
  } do {
  ^bb0(%k: tensor<i32>, %y: tensor<4x3xf32>):
    %k1 = tfc.add %k, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %m = tfc.multiply %y, %h : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %s = tfc.sin %y : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %y1 = tfc.add %m, %s : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    tfc.yield %k1, %y1 : tensor<i32>, tensor<4x3xf32>
  }
  func.return %w : tensor<4x3xf32>
}

// CHECK-LABEL: func.func @f
// CHECK:         %[[A:.*]] = loops.view %arena {offset = 0 : i64} : memref<64xi8> -> memref<4x3xf32>
// CHECK:         loops.copy %x, %[[A]] : memref<4x3xf32>, memref<4x3xf32>
// CHECK:         %{{.*}}, %[[R:.*]] = loops.while %{{.*}}, %[[A]] : (i32, memref<4x3xf32>) -> (i32, memref<4x3xf32>) cond {
// CHECK:         } do {
// CHECK-NEXT:    ^bb0(%[[K:.*]]: i32, %[[CUR:.*]]: memref<4x3xf32>):
// CHECK-NOT:       loops.alloc
// CHECK:           loops.parallel ins(%[[CUR]] : memref<4x3xf32>) outs(%[[CUR]] : memref<4x3xf32>)
// CHECK-NOT:       loops.alloc
// CHECK:           loops.yield %{{.*}}, %[[CUR]] : i32, memref<4x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[O:.*]] = loops.alloc : memref<4x3xf32>
// CHECK-NEXT:    loops.copy %[[R]], %[[O]] : memref<4x3xf32>, memref<4x3xf32>
// CHECK-NEXT:    func.return %[[O]] : memref<4x3xf32>

func.func @g(%x: tensor<3x3xf32>, %n: tensor<i32>) -> tensor<3xf32> {
  %z = tfc.constant dense<0> : tensor<i32>
  %one = tfc.constant dense<1> : tensor<i32>
  %e = tfc.exp %x : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %i, %w = tfc.while %z, %e : (tensor<i32>, tensor<3x3xf32>) -> (tensor<i32>, tensor<3x3xf32>) cond {
  ^bb0(%k: tensor<i32>, %y: tensor<3x3xf32>):
    %c = tfc.less %k, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    tfc.condition %c : tensor<i1>
  } do {
  ^bb0(%k: tensor<i32>, %y: tensor<3x3xf32>):
    %k1 = tfc.add %k, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %s = tfc.sin %y : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %t = tfc.transpose %y : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %y1 = tfc.add %s, %t : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    tfc.yield %k1, %y1 : tensor<i32>, tensor<3x3xf32>
  }
  %r = tfc.reduce_sum %w {axis = array<i64: 1>, keepdims = false} : (tensor<3x3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// The body reads y transposed (at other indices than it writes): two buffers, swapped.
// CHECK-LABEL: func.func @g
// CHECK:         %[[A:.*]] = loops.view %arena {offset = 0 : i64}
// CHECK:         %[[B:.*]] = loops.view %arena {offset = 64 : i64}
// CHECK:         loops.parallel ins(%x : memref<3x3xf32>) outs(%[[A]] : memref<3x3xf32>)
// CHECK-NOT:     loops.copy
// CHECK:         %{{.*}}, %[[R:.*]], %{{.*}} = loops.while %{{.*}}, %[[A]], %[[B]] :
// CHECK:         } do {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[CUR:.*]]: memref<3x3xf32>, %[[SPARE:.*]]: memref<3x3xf32>):
// CHECK-NOT:       loops.alloc
// CHECK:           loops.transpose_view %[[CUR]]
// CHECK:           loops.parallel ins(%[[CUR]], %{{.*}} : memref<3x3xf32>, memref<3x3xf32, {{.*}}>) outs(%[[SPARE]] : memref<3x3xf32>)
// CHECK-NOT:       loops.alloc
// CHECK:           loops.yield %{{.*}}, %[[SPARE]], %[[CUR]] : i32, memref<3x3xf32>, memref<3x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[S:.*]] = loops.alloc : memref<3xf32>
// CHECK-NEXT:    loops.parallel ins(%[[R]] : memref<3x3xf32>) outs(%[[S]] : memref<3xf32>)

func.func @h(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %n: tensor<i32>) -> tensor<2x3xf32> {
  %z = tfc.constant dense<0> : tensor<i32>
  %one = tfc.constant dense<1> : tensor<i32>
  %i, %u, %v = tfc.while %z, %a, %b : (tensor<i32>, tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<i32>, tensor<2x3xf32>, tensor<2x3xf32>) cond {
  ^bb0(%k: tensor<i32>, %p: tensor<2x3xf32>, %q: tensor<2x3xf32>):
    %c = tfc.less %k, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    tfc.condition %c : tensor<i1>
  } do {
  ^bb0(%k: tensor<i32>, %p: tensor<2x3xf32>, %q: tensor<2x3xf32>):
    %k1 = tfc.add %k, %one : (tensor<i32>, tensor<i32>) -> tensor<i32>
    %r = tfc.add %p, %q : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    tfc.yield %k1, %q, %r : tensor<i32>, tensor<2x3xf32>, tensor<2x3xf32>
  }
  %o = tfc.add %u, %v : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %o : tensor<2x3xf32>
}

// (a, b) -> (b, a + b): a + b is written into b's spare; b's old value is copied into a's
// spare at the yield (the loop does not permute its variables).
// CHECK-LABEL: func.func @h
// CHECK:         loops.copy %a, %[[A0:.*]] :
// CHECK-NEXT:    loops.copy %b, %[[B0:.*]] :
// CHECK-NEXT:    loops.while %{{.*}}, %[[A0]], %[[B0]], %{{.*}}, %{{.*}} :
// CHECK:         } do {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[P:.*]]: memref<2x3xf32>, %[[Q:.*]]: memref<2x3xf32>, %[[PS:.*]]: memref<2x3xf32>, %[[QS:.*]]: memref<2x3xf32>):
// CHECK:           loops.parallel ins(%[[P]], %[[Q]] : memref<2x3xf32>, memref<2x3xf32>) outs(%[[QS]] : memref<2x3xf32>)
// CHECK:           loops.copy %[[Q]], %[[PS]] :
// CHECK-NEXT:      loops.yield %{{.*}}, %[[PS]], %[[QS]], %[[P]], %[[Q]] :
