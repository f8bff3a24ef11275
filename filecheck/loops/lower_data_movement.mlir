// RUN: %tfc-opt %s -p tfc-fuse,tfc-lower-loops | filecheck %s
// RUN: %tfc-opt %s -p tfc-fuse,tfc-lower-loops | filecheck %s --check-prefix=NOLIB
// NOLIB-NOT: loops.library
// Data movement lowers through the ops' declarations (OpDef.lower): views of
// the inputs (loops.subview / transpose_view / reshape) and copy kernels into
// planned buffers; no loops.library.


func.func @transpose(%x: tensor<4x6xf32>) -> tensor<6x4xf32> {
  %0 = tfc.transpose %x : (tensor<4x6xf32>) -> tensor<6x4xf32>
  func.return %0 : tensor<6x4xf32>
}
// CHECK-LABEL: func.func @transpose
// CHECK:         %[[O:.*]] = loops.alloc : memref<6x4xf32>
// CHECK:         %[[T:.*]] = loops.transpose_view %x {permutation = array<i64: 1, 0>} : memref<4x6xf32> -> memref<6x4xf32, strided<[1, 6]>>
// CHECK:         loops.parallel ins(%[[T]] : memref<6x4xf32, strided<[1, 6]>>) outs(%[[O]] : memref<6x4xf32>)
// CHECK-NEXT:    ^{{.*}}(%[[E:.*]]: f32):
// CHECK-NEXT:      loops.yield %[[E]] : f32

func.func @slices(%x: tensor<4x6xf32>) -> (tensor<2x6xf32>, tensor<6xf32>, tensor<2x6xf32>) {
  %1 = tfc.getitem %x {index = ["1:3:", "::-1"]} : (tensor<4x6xf32>) -> tensor<2x6xf32>
  %5 = tfc.getitem %x {index = [2 : i64]} : (tensor<4x6xf32>) -> tensor<6xf32>
  %6 = tfc.getitem %x {index = ["1:3:"]} : (tensor<4x6xf32>) -> tensor<2x6xf32>
  func.return %1, %5, %6 : tensor<2x6xf32>, tensor<6xf32>, tensor<2x6xf32>
}
// a reversed window is copied; a contiguous one (a row, a range of rows) is an alias
// CHECK-LABEL: func.func @slices
// CHECK:         %[[O:.*]] = loops.alloc : memref<2x6xf32>
// CHECK:         %[[V:.*]] = loops.subview %x [1, 5] [2, 6] [1, -1] : memref<4x6xf32> -> memref<2x6xf32, strided<[6, -1], offset: 11>>
// CHECK:         loops.parallel ins(%[[V]] : {{.*}}) outs(%[[O]] : memref<2x6xf32>)
// CHECK:         %[[R:.*]] = loops.subview %x [2, 0] [1, 6] [1, 1] : memref<4x6xf32> -> memref<6xf32, strided<[1], offset: 12>>
// CHECK:         %[[RA:.*]] = loops.reshape %[[R]] : memref<6xf32, strided<[1], offset: 12>> -> memref<6xf32>
// CHECK:         %[[W:.*]] = loops.subview %x [1, 0] [2, 6] [1, 1] : memref<4x6xf32> -> memref<2x6xf32, strided<[6, 1], offset: 6>>
// CHECK:         %[[WA:.*]] = loops.reshape %[[W]] : {{.*}} -> memref<2x6xf32>
// CHECK:         func.return %[[O]], %[[RA]], %[[WA]]

func.func @concat(%x: tensor<4x6xf32>, %y: tensor<4x2xf32>) -> tensor<4x8xf32> {
  %2 = tfc.concat %x, %y {axis = 1 : i64} : (tensor<4x6xf32>, tensor<4x2xf32>) -> tensor<4x8xf32>
  func.return %2 : tensor<4x8xf32>
}
// each piece is copied into its window of the result
// CHECK-LABEL: func.func @concat
// CHECK:         %[[O:.*]] = loops.alloc : memref<4x8xf32>
// CHECK:         %[[A:.*]] = loops.subview %[[O]] [0, 0] [4, 6] [1, 1] : memref<4x8xf32> -> memref<4x6xf32, strided<[8, 1]>>
// CHECK:         loops.parallel ins(%x : memref<4x6xf32>) outs(%[[A]] : memref<4x6xf32, strided<[8, 1]>>)
// CHECK:         %[[B:.*]] = loops.subview %[[O]] [0, 6] [4, 2] [1, 1] : memref<4x8xf32> -> memref<4x2xf32, strided<[8, 1], offset: 6>>
// CHECK:         loops.parallel ins(%y : memref<4x2xf32>) outs(%[[B]] : memref<4x2xf32, strided<[8, 1], offset: 6>>)

func.func @slice_grad(%g: tensor<2x6xf32>) -> tensor<4x6xf32> {
  %3 = tfc.slice_grad %g {shape = array<i64: 4, 6>, index = ["1:3:", "::-1"]} : (tensor<2x6xf32>) -> tensor<4x6xf32>
  func.return %3 : tensor<4x6xf32>
}
// a box window: zeros in the slabs around it (rows 0 and 3), then the gradient written into it
// CHECK-LABEL: func.func @slice_grad
// CHECK:         %[[O:.*]] = loops.alloc : memref<4x6xf32>
// CHECK:         %[[A:.*]] = loops.subview %[[O]] [0, 0] [1, 6] [1, 1]
// CHECK:         loops.parallel ins() outs(%[[A]] : memref<1x6xf32>)
// CHECK:           %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      loops.yield %[[Z]] : f32
// CHECK:         %[[B:.*]] = loops.subview %[[O]] [3, 0] [1, 6] [1, 1]
// CHECK:         loops.parallel ins() outs(%[[B]] : memref<1x6xf32, strided<[6, 1], offset: 18>>)
// CHECK:         %[[W:.*]] = loops.subview %[[O]] [1, 5] [2, 6] [1, -1]
// CHECK:         loops.parallel ins(%g : memref<2x6xf32>) outs(%[[W]] : memref<2x6xf32, strided<[6, -1], offset: 11>>)

func.func @slice_grad_strided(%g: tensor<2x3xf32>) -> tensor<4x6xf32> {
  %3 = tfc.slice_grad %g {shape = array<i64: 4, 6>, index = ["1:3:", "::2"]} : (tensor<2x3xf32>) -> tensor<4x6xf32>
  func.return %3 : tensor<4x6xf32>
}
// a strided window: zeros everywhere first
// CHECK-LABEL: func.func @slice_grad_strided
// CHECK:         %[[O:.*]] = loops.alloc : memref<4x6xf32>
// CHECK:         loops.parallel ins() outs(%[[O]] : memref<4x6xf32>)
// CHECK:         %[[W:.*]] = loops.subview %[[O]] [1, 0] [2, 3] [1, 2]
// CHECK:         loops.parallel ins(%g : memref<2x3xf32>) outs(%[[W]] : memref<2x3xf32, strided<[6, 2], offset: 6>>)

func.func @aliases(%x: tensor<4x6xf32>, %y: tensor<4x2xf32>) -> (tensor<24xf32>, tensor<1x4x2xf32>) {
  %4 = tfc.reshape %x {shape = array<i64: 24>} : (tensor<4x6xf32>) -> tensor<24xf32>
  %8 = tfc.expand_dims %y {axis = 0 : i64} : (tensor<4x2xf32>) -> tensor<1x4x2xf32>
  func.return %4, %8 : tensor<24xf32>, tensor<1x4x2xf32>
}
// CHECK-LABEL: func.func @aliases
// CHECK-NEXT:    %[[A:.*]] = loops.reshape %x : memref<4x6xf32> -> memref<24xf32>
// CHECK-NEXT:    %[[B:.*]] = loops.reshape %y : memref<4x2xf32> -> memref<1x4x2xf32>
// CHECK-NEXT:    func.return %[[A]], %[[B]]

func.func @pad(%x: tensor<4x6xf32>) -> tensor<5x8xf32> {
  %7 = tfc.pad %x {paddings = array<i64: 1, 0, 0, 2>, mode = "CONSTANT", constant_values = 1.500000e+00 : f64} : (tensor<4x6xf32>) -> tensor<5x8xf32>
  func.return %7 : tensor<5x8xf32>
}
// CHECK-LABEL: func.func @pad
// CHECK:         %[[O:.*]] = loops.alloc : memref<5x8xf32>
// CHECK:         loops.parallel ins() outs(%[[O]] : memref<5x8xf32>)
// CHECK:           arith.constant 1.500000e+00 : f32
// CHECK:         %[[W:.*]] = loops.subview %[[O]] [1, 0] [4, 6] [1, 1] : memref<5x8xf32> -> memref<4x6xf32, strided<[8, 1], offset: 8>>
// CHECK:         loops.parallel ins(%x : memref<4x6xf32>) outs(%[[W]] : {{.*}})

func.func @one_hot(%i: tensor<3xi32>) -> tensor<3x4xf32> {
  %6 = tfc.one_hot %i {depth = 4 : i64, on_value = 1.000000e+00 : f64, off_value = 0.000000e+00 : f64, axis = -1 : i64, dtype = f32} : (tensor<3xi32>) -> tensor<3x4xf32>
  func.return %6 : tensor<3x4xf32>
}
// CHECK-LABEL: func.func @one_hot
// CHECK:         loops.parallel ins(%i : memref<3xi32>) outs(%{{.*}} : memref<3x4xf32>) attributes {shape = array<i64: 3, 4>, broadcast = [array<i64: 0>]}
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: i32):
// CHECK-NEXT:      %[[J:.*]] = loops.index 1 : index
// CHECK-NEXT:      %[[P:.*]] = arith.index_cast %[[J]] : index to i64
// CHECK-NEXT:      %[[W:.*]] = arith.extsi %[[X]] : i32 to i64
// CHECK-NEXT:      %[[H:.*]] = arith.cmpi eq, %[[W]], %[[P]] : i64
// CHECK:           arith.select %[[H]]

func.func @eye() -> tensor<3x5xf32> {
  %e = tfc.eye {num_rows = 3 : i64, num_columns = 5 : i64, dtype = f32} : () -> tensor<3x5xf32>
  func.return %e : tensor<3x5xf32>
}
// zeros, then ones on the diagonal: a strided view of the flat buffer
// CHECK-LABEL: func.func @eye
// CHECK:         %[[O:.*]] = loops.alloc : memref<3x5xf32>
// CHECK:         %[[F:.*]] = loops.reshape %[[O]] : memref<3x5xf32> -> memref<15xf32>
// CHECK:         %[[D:.*]] = loops.subview %[[F]] [0] [3] [6] : memref<15xf32> -> memref<3xf32, strided<[6]>>
// CHECK:         loops.parallel ins() outs(%[[D]] : memref<3xf32, strided<[6]>>)

func.func @gather(%p: tensor<5x4xf32>, %i: tensor<2x3xi32>) -> tensor<2x3x4xf32> {
  %g = tfc.gather %p, %i {axis = 0 : i64} : (tensor<5x4xf32>, tensor<2x3xi32>) -> tensor<2x3x4xf32>
  func.return %g : tensor<2x3x4xf32>
}
// a check of the indices (any outside [0, 5)?) into a planned flag whose error path is
// loops.raise, then the loads
// CHECK-LABEL: func.func @gather
// CHECK:         %[[F:.*]] = loops.view %arena {offset = 0 : i64} : memref<64xi8> -> memref<i1>
// CHECK:         %[[O:.*]] = loops.alloc : memref<2x3x4xf32>
// CHECK:         loops.parallel ins(%i : memref<2x3xi32>) outs(%[[F]] : memref<i1>) {{.*}}reduce = ["any"], reduce_axes = array<i64: 0, 1>}
// CHECK:           arith.cmpi slt
// CHECK:           arith.constant 5 : i64
// CHECK:           arith.cmpi sge
// CHECK:         %[[B:.*]] = loops.load %[[F]] : memref<i1> -> i1
// CHECK:         loops.if %[[B]] : (i1) -> () {
// CHECK-NEXT:      loops.raise "gather"(%p, %i : memref<5x4xf32>, memref<2x3xi32>) {attrs = {axis = 0 : i64}}
// CHECK:         loops.parallel ins(%i : memref<2x3xi32>) outs(%[[O]] : memref<2x3x4xf32>) attributes {shape = array<i64: 2, 3, 4>, broadcast = [array<i64: 0, 1>]}
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: i32):
// CHECK-NEXT:      %[[I:.*]] = arith.index_cast %[[X]] : i32 to index
// CHECK-NEXT:      %[[J:.*]] = loops.index 2 : index
// CHECK-NEXT:      %[[V:.*]] = loops.load_at %p[%[[I]], %[[J]]] : memref<5x4xf32> -> f32
// CHECK-NEXT:      loops.yield %[[V]] : f32

func.func @pad_reflect(%x: tensor<4x6xf32>) -> tensor<5x8xf32> {
  %7 = tfc.pad %x {paddings = array<i64: 1, 0, 0, 2>, mode = "REFLECT", constant_values = 0.0 : f64} : (tensor<4x6xf32>) -> tensor<5x8xf32>
  func.return %7 : tensor<5x8xf32>
}
// each element read at its mirrored index: j = i - lo, -j where negative, 2(n - 1) - j past the end
// CHECK-LABEL: func.func @pad_reflect
// CHECK:         loops.parallel ins() outs(%{{.*}} : memref<5x8xf32>) attributes {shape = array<i64: 5, 8>, broadcast = []}
// CHECK-NEXT:      %[[I:.*]] = loops.index 0 : index
// CHECK-NEXT:      %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %[[J:.*]] = arith.subi %[[I]], %[[C1]] : index
// CHECK:           %[[R:.*]] = arith.select
// CHECK:           %[[K:.*]] = loops.index 1 : index
// CHECK:           %[[C6:.*]] = arith.constant 6 : index
// CHECK-NEXT:      %[[P:.*]] = arith.cmpi sge, %[[K]], %[[C6]] : index
// CHECK-NEXT:      %[[C10:.*]] = arith.constant 10 : index
// CHECK-NEXT:      %[[M:.*]] = arith.subi %[[C10]], %[[K]] : index
// CHECK-NEXT:      %[[S:.*]] = arith.select %[[P]], %[[M]], %[[K]] : index
// CHECK-NEXT:      %[[V:.*]] = loops.load_at %x[%[[R]], %[[S]]] : memref<4x6xf32> -> f32
// CHECK-NEXT:      loops.yield %[[V]] : f32

func.func @views_into_kernels(%x: tensor<4x6xf32>) -> (tensor<6x4xf32>, tensor<2x6xf32>) {
  %t = tfc.transpose %x : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %e = tfc.exp %t : (tensor<6x4xf32>) -> tensor<6x4xf32>
  %s = tfc.getitem %x {index = ["1:3:", "::-1"]} : (tensor<4x6xf32>) -> tensor<2x6xf32>
  %n = tfc.negative %s : (tensor<2x6xf32>) -> tensor<2x6xf32>
  func.return %e, %n : tensor<6x4xf32>, tensor<2x6xf32>
}
// a transpose or strided slice that only kernels read is no copy: the kernel reads the view
// CHECK-LABEL: func.func @views_into_kernels
// CHECK:         %[[T:.*]] = loops.transpose_view %x {permutation = array<i64: 1, 0>} : memref<4x6xf32> -> memref<6x4xf32, strided<[1, 6]>>
// CHECK:         loops.parallel ins(%[[T]] : memref<6x4xf32, strided<[1, 6]>>) outs(%{{.*}} : memref<6x4xf32>)
// CHECK:           math.exp
// CHECK:         %[[S:.*]] = loops.subview %x [1, 5] [2, 6] [1, -1]
// CHECK:         loops.parallel ins(%[[S]] : memref<2x6xf32, strided<[6, -1], offset: 11>>) outs(%{{.*}} : memref<2x6xf32>)
// CHECK:           arith.negf
