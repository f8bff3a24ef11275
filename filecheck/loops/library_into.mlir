// RUN: %tfc-opt %s -p tfc-fuse,tfc-lower-loops | filecheck %s
// The library calls that remain write their planned buffers (outs: the
// declaration's kernel_into): dropout's mask, the _like pooling gradient, an
// integer product; what reads them reads the buffer.

func.func @dropout(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = tfc.dropout_mask %x {rate = 5.000000e-01 : f64, seed = 3 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = tfc.multiply %x, %0 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %1 : tensor<4x3xf32>
}
// the product is computed in place over the mask's buffer, which is returned
// CHECK-LABEL: func.func @dropout
// CHECK:         %[[M:.*]] = loops.alloc : memref<4x3xf32>
// CHECK-NEXT:    loops.library "dropout_mask"(%x : memref<4x3xf32>) outs(%[[M]] : memref<4x3xf32>) {attrs = {rate = 5.000000e-01 : f64, seed = 3 : i64}} -> ()
// CHECK-NEXT:    loops.parallel ins(%x, %[[M]] : memref<4x3xf32>, memref<4x3xf32>) outs(%[[M]] : memref<4x3xf32>)
// CHECK:         func.return %[[M]]

func.func @avg_pool_grad_like(%x: tensor<2x4x4x3xf32>, %g: tensor<2x2x2x3xf32>) -> tensor<2x4x4x3xf32> {
  %0 = tfc.avg_pool2d_grad_like %x, %g {ksize = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = "VALID"} : (tensor<2x4x4x3xf32>, tensor<2x2x2x3xf32>) -> tensor<2x4x4x3xf32>
  func.return %0 : tensor<2x4x4x3xf32>
}
// CHECK-LABEL: func.func @avg_pool_grad_like
// CHECK:         %[[O:.*]] = loops.alloc : memref<2x4x4x3xf32>
// CHECK-NEXT:    loops.library "avg_pool2d_grad_like"(%x, %g : memref<2x4x4x3xf32>, memref<2x2x2x3xf32>) outs(%[[O]] : memref<2x4x4x3xf32>)
// CHECK:         func.return %[[O]]

func.func @int_matmul(%a: tensor<2x3xi32>, %b: tensor<3x4xi32>) -> tensor<2x4xi32> {
  %0 = tfc.matmul %a, %b {transpose_a = false, transpose_b = false} : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  func.return %0 : tensor<2x4xi32>
}
// CHECK-LABEL: func.func @int_matmul
// CHECK:         %[[P:.*]] = loops.alloc : memref<2x4xi32>
// CHECK-NEXT:    loops.library "matmul"(%a, %b : memref<2x3xi32>, memref<3x4xi32>) outs(%[[P]] : memref<2x4xi32>)
