// RUN: %tfc-opt %s -p tfc-fuse,tfc-lower-loops | filecheck %s
// A strided view (a getitem with steps, a transpose) that a kernel and another
// reader use: the other reader gets the copy, the kernel reads the view in place
// (as eager's ufuncs read numpy's views: expm1 gives other last bits on a copy).

func.func @returned_and_read(%x: tensor<1x5xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>) {
  %v = tfc.getitem %x {index = [":", "::-2"]} : (tensor<1x5xf32>) -> tensor<1x3xf32>
  %e = tfc.expm1 %v : (tensor<1x3xf32>) -> tensor<1x3xf32>
  func.return %v, %e : tensor<1x3xf32>, tensor<1x3xf32>
}
// CHECK-LABEL: func.func @returned_and_read
// CHECK:         %[[C:.*]] = loops.alloc : memref<1x3xf32>
// CHECK:         %[[S:.*]] = loops.subview %x [0, 4] [1, 3] [1, -2] : memref<1x5xf32> -> memref<1x3xf32, strided<[5, -2], offset: 4>>
// CHECK:         loops.parallel ins(%[[S]] : {{.*}}) outs(%[[C]] : memref<1x3xf32>)
// CHECK:         %[[S2:.*]] = loops.subview %x [0, 4] [1, 3] [1, -2] : memref<1x5xf32> -> memref<1x3xf32, strided<[5, -2], offset: 4>>
// CHECK:         %[[E:.*]] = loops.alloc : memref<1x3xf32>
// CHECK:         loops.parallel ins(%[[S2]] : memref<1x3xf32, strided<[5, -2], offset: 4>>) outs(%[[E]] : memref<1x3xf32>)
// CHECK:           math.expm1
// CHECK:         func.return %[[C]], %[[E]]

func.func @chain(%x: tensor<4x6xf32>) -> (tensor<6x4xf32>, tensor<2x4xf32>) {
  %t = tfc.transpose %x : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %g = tfc.getitem %t {index = ["::-3"]} : (tensor<6x4xf32>) -> tensor<2x4xf32>
  %e = tfc.exp %g : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %t, %e : tensor<6x4xf32>, tensor<2x4xf32>
}
// a view of a copied view is made from the view: the kernel reads x itself
// CHECK-LABEL: func.func @chain
// CHECK:         %[[T:.*]] = loops.transpose_view %x {permutation = array<i64: 1, 0>} : memref<4x6xf32> -> memref<6x4xf32, strided<[1, 6]>>
// CHECK:         loops.parallel ins(%[[T]] : {{.*}}) outs(%{{.*}} : memref<6x4xf32>)
// CHECK:         %[[T2:.*]] = loops.transpose_view %x {permutation = array<i64: 1, 0>}
// CHECK:         %[[G:.*]] = loops.subview %[[T2]] [5, 0] [2, 4] [-3, 1] : memref<6x4xf32, strided<[1, 6]>> -> memref<2x4xf32, strided<[-3, 6], offset: 5>>
// CHECK:         loops.parallel ins(%[[G]] : memref<2x4xf32, strided<[-3, 6], offset: 5>>)
// CHECK:           math.exp

func.func @alias_of_view(%x: tensor<1x6xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>) {
  %v = tfc.getitem %x {index = [":", "::-1"]} : (tensor<1x6xf32>) -> tensor<1x6xf32>
  %a = tfc.getitem %v {index = [":", "2:"]} : (tensor<1x6xf32>) -> tensor<1x4xf32>
  %e = tfc.expm1 %a : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %a, %e : tensor<1x4xf32>, tensor<1x4xf32>
}
// a contiguous getitem of the copy is an alias for the returned value; the
// kernel reads the same window of the view (negative steps, as eagerly)
// CHECK-LABEL: func.func @alias_of_view
// CHECK:         %[[S:.*]] = loops.subview %x [0, 5] [1, 6] [1, -1]
// CHECK:         loops.parallel ins(%[[S]] : {{.*}}) outs(%[[C:.*]] : memref<1x6xf32>)
// CHECK:         %[[S2:.*]] = loops.subview %x [0, 5] [1, 6] [1, -1]
// CHECK:         %[[K:.*]] = loops.subview %[[S2]] [0, 2] [1, 4] [1, 1] : memref<1x6xf32, strided<[6, -1], offset: 5>> -> memref<1x4xf32, strided<[6, -1], offset: 3>>
// CHECK:         %[[W:.*]] = loops.subview %[[C]] [0, 2] [1, 4] [1, 1]
// CHECK:         %[[A:.*]] = loops.reshape %[[W]]
// CHECK:         loops.parallel ins(%[[K]] : memref<1x4xf32, strided<[6, -1], offset: 3>>)
// CHECK:           math.expm1
