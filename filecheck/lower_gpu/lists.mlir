// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s
// RUN: %tfc-opt %s -p tfc-lower-gpu | %tfc-opt - | filecheck %s

// tensor_array_write (tfc/passes/gpu_lists.py): the host checks the index
// first (a loops.raise of the op, which raises eager's error, where it is
// outside [0, 3)); the result is a fresh buffer, one thread per element: the
// value's element in the written row, else the buffer's.

// CHECK: gpu.func @k0_tensor_array_write(%{{.*}}: !tgpu.ptr<f32, global>, %{{.*}}: !tgpu.ptr<f32, global>, %[[I:.*]]: i32, %{{.*}}: !tgpu.ptr<f32, global>) kernel
// CHECK: scf.for
// CHECK: %[[ROW:.*]] = arith.divui
// CHECK: %[[MINE:.*]] = arith.cmpi eq, %[[ROW]], %[[I]] : i32
// CHECK: %[[NEW:.*]] = tgpu.load
// CHECK: %[[OLD:.*]] = tgpu.load
// CHECK: %[[V:.*]] = arith.select %[[MINE]], %[[NEW]], %[[OLD]] : f32
// CHECK: tgpu.store %[[V]]
// CHECK: func.func @f
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK: %[[END:.*]] = arith.constant 3 : i32
// CHECK: %[[LT:.*]] = arith.cmpi slt, %i, %[[ZERO]] : i32
// CHECK: %[[GE:.*]] = arith.cmpi sge, %i, %[[END]] : i32
// CHECK: %[[BAD:.*]] = arith.ori %[[LT]], %[[GE]] : i1
// CHECK: loops.if %[[BAD]]
// CHECK-NEXT: loops.raise "tensor_array_write"(%buf, %i, %v :
// CHECK: %[[OUT:.*]] = loops.alloc : memref<3x2xf32>
// CHECK: tgpu.launch @k0_tensor_array_write {{.*}} args(%buf, %v, %i, %[[OUT]] :
// CHECK: func.return %[[OUT]]
func.func @f(%buf: memref<3x2xf32>, %v: memref<2xf32>, %i: i32, %arena: memref<0xi8>) -> memref<3x2xf32> {
  %0 = loops.library "tensor_array_write"(%buf, %i, %v : memref<3x2xf32>, i32, memref<2xf32>) {attrs = {grow = false}} -> (memref<3x2xf32>)
  func.return %0 : memref<3x2xf32>
}
