// RUN: %tfc-opt %s -p tfc-fuse,tfc-lower-loops | filecheck %s
// A concat piece that an elementwise kernel makes, and that nothing else reads,
// is written straight into its window of the result's buffer (tfc-bufferize,
// concat's lower.windows): no buffer of its own, no copy kernel. Other pieces
// (an argument here) are copied into their windows as before.

func.func @windows(%x: tensor<4x3xf32>, %y: tensor<4x5xf32>) -> tensor<4x8xf32> {
  %a = tfc.exp %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %0 = tfc.concat %a, %y {axis = 1 : i64} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @windows
// CHECK-SAME:      %arena: memref<0xi8>
// CHECK-NEXT:    %[[O:.*]] = loops.alloc : memref<4x8xf32>
// CHECK-NEXT:    %[[W:.*]] = loops.subview %[[O]] [0, 0] [4, 3] [1, 1] : memref<4x8xf32> -> memref<4x3xf32, strided<[8, 1]>>
// CHECK-NEXT:    loops.parallel ins(%x : memref<4x3xf32>) outs(%[[W]] : memref<4x3xf32, strided<[8, 1]>>)
// CHECK:           math.exp
// CHECK:         %[[V:.*]] = loops.subview %[[O]] [0, 3] [4, 5] [1, 1]
// CHECK-NEXT:    loops.parallel ins(%y : memref<4x5xf32>) outs(%[[V]] : {{.*}})
// CHECK-NOT:     loops.parallel
// CHECK:         func.return %[[O]] : memref<4x8xf32>

func.func @piece_read_twice(%x: tensor<4x3xf32>) -> (tensor<4x6xf32>, tensor<4x3xf32>) {
  %a = tfc.exp %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %0 = tfc.concat %a, %x {axis = 1 : i64} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x6xf32>
  func.return %0, %a : tensor<4x6xf32>, tensor<4x3xf32>
}
// a piece that is also returned keeps its buffer and is copied
// CHECK-LABEL: func.func @piece_read_twice
// CHECK:         loops.parallel ins(%x : memref<4x3xf32>) outs(%[[A:.*]] : memref<4x3xf32>)
// CHECK:         loops.parallel ins(%[[A]] : memref<4x3xf32>) outs(%{{.*}} : memref<4x3xf32, strided<[6, 1]>>)
