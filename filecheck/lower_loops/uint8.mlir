// RUN: %tfc-opt %s -p tfc-fuse,tfc-dce,tfc-lower-loops | filecheck %s

// uint8 keeps its signedness in the types (memref<...xui8>); arith.constant is
// signless, so a ui8 constant is the signless one of its bits bitcast to ui8
// (255 is -1 : i8)
func.func @pad(%a: tensor<2x3xui8>) -> (tensor<3x4xui8>, tensor<ui8>) {
  %p = tfc.pad %a {paddings = array<i64: 1, 0, 0, 1>, mode = "CONSTANT", constant_values = 255 : i64} : (tensor<2x3xui8>) -> tensor<3x4xui8>
  %c = tfc.constant dense<200> : tensor<ui8>
  func.return %p, %c : tensor<3x4xui8>, tensor<ui8>
}

// CHECK-LABEL: func.func @pad(%a: memref<2x3xui8>, %arena: memref<0xi8>) -> (memref<3x4xui8>, ui8)
// CHECK:         %[[P:.*]] = loops.alloc : memref<3x4xui8>
// CHECK:         loops.parallel ins() outs(%[[P]] : memref<3x4xui8>)
// CHECK-NEXT:      %[[C:.*]] = arith.constant -1 : i8
// CHECK-NEXT:      %[[U:.*]] = arith.bitcast %[[C]] : i8 to ui8
// CHECK-NEXT:      loops.yield %[[U]] : ui8
// CHECK:         loops.subview %[[P]] [1, 0] [2, 3] [1, 1] : memref<3x4xui8> -> memref<2x3xui8, strided<[4, 1], offset: 4>>
// CHECK:         %[[K:.*]] = arith.constant -56 : i8
// CHECK-NEXT:    %[[V:.*]] = arith.bitcast %[[K]] : i8 to ui8
// CHECK:         func.return %[[P]], %[[V]] : memref<3x4xui8>, ui8
