// RUN: %tfc-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s
// The verifier refuses views that leave their buffer, wrong layouts, and
// reshapes of non-contiguous buffers.

func.func @out_of_bounds(%x: memref<8x4xf32>, %arena: memref<0xi8>) {
  // CHECK: loops.subview: dim 0: offset 6, size 3, stride 1 leave the 8 elements
  %v = loops.subview %x [6, 0][3, 4][1, 1] : memref<8x4xf32> -> memref<3x4xf32, strided<[4, 1], offset: 24>>
  func.return
}

// -----

func.func @wrong_layout(%x: memref<8x4xf32>, %arena: memref<0xi8>) {
  // CHECK: is not the view's layout, memref<3x4xf32, strided<[8, 1], offset: 4>>
  %v = loops.subview %x [1, 0][3, 4][2, 1] : memref<8x4xf32> -> memref<3x4xf32, strided<[4, 1], offset: 4>>
  func.return
}

// -----

func.func @reshape_strided(%x: memref<8x4xf32>, %arena: memref<0xi8>) {
  %t = loops.transpose_view %x {permutation = array<i64: 1, 0>} : memref<8x4xf32> -> memref<4x8xf32, strided<[1, 4]>>
  // CHECK: loops.reshape: needs a contiguous source
  %r = loops.reshape %t : memref<4x8xf32, strided<[1, 4]>> -> memref<32xf32>
  func.return
}

// -----

func.func @reshape_count(%x: memref<8x4xf32>, %arena: memref<0xi8>) {
  // CHECK: must have the same static number of elements
  %r = loops.reshape %x : memref<8x4xf32> -> memref<30xf32>
  func.return
}

// -----

func.func @index_outside(%arena: memref<0xi8>) {
  // CHECK: loops.index: must be in the body of a loops.parallel
  %i = loops.index 0 : index
  func.return
}
