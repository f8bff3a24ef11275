// RUN: %tfc-opt %s -p tfc-fuse,tfc-bufferize,tfc-plan-memory | filecheck %s
// tfc-bufferize on lowered ops: aliases (reshape, a contiguous getitem) and views that only
// kernels read (transpose here) get no buffer; a lowered op that writes (concat) gets one of
// the plan, in the arena (it does not escape).

func.func @f(%x: tensor<4x6xf32>) -> tensor<6x4xf32> {
  %e = tfc.exp %x : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %r = tfc.reshape %e {shape = array<i64: 6, 4>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %s = tfc.getitem %e {index = ["1:3:"]} : (tensor<4x6xf32>) -> tensor<2x6xf32>
  %t = tfc.transpose %e : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %v = tfc.transpose %e : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %w = tfc.exp %v : (tensor<6x4xf32>) -> tensor<6x4xf32>
  %c = tfc.concat %s, %s {axis = 0 : i64} : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<4x6xf32>
  %a = tfc.add %r, %t : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  %b = tfc.add %a, %w : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  %z = tfc.reshape %c {shape = array<i64: 6, 4>} : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %y = tfc.add %b, %z : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  func.return %y : tensor<6x4xf32>
}

// CHECK-LABEL: func.func @f
// CHECK-SAME:    tfc.fresh = array<i64: 2>, tfc.offsets = array<i64: 0, 128, -1>
// CHECK:         %e = tfc.fused(%x) {tfc.buffers = array<i64: 0>
// CHECK:         %r = tfc.reshape %e {shape = array<i64: 6, 4>} :
// CHECK-NEXT:    %s = tfc.getitem %e {index = ["1:3:"]} :
// CHECK-NEXT:    %t = tfc.transpose %e :
// CHECK-NEXT:    %v = tfc.transpose %e :
// CHECK-NEXT:    %c = tfc.concat %s, %s {axis = 0 : i64, tfc.buffers = array<i64: 1>}
// CHECK-NEXT:    %z = tfc.reshape %c {shape = array<i64: 6, 4>} :
// CHECK-NEXT:    %y = tfc.fused(%v, %r, %t, %z) {tfc.buffers = array<i64: 2>
