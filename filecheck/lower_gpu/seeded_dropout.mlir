// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s
// RUN: %tfc-opt %s -p tfc-lower-gpu | %tfc-opt - | filecheck %s

// seeded_dropout_mask (tfc/passes/gpu_random.py): dropout_mask's kernel, one
// thread per Philox4x32-10 block; its key parameter is the int64 seed operand
// (a host scalar when the call runs), its counter base the constant 0. One
// kernel per mask shape and rate, whatever the seed; an empty mask launches
// nothing.

// CHECK: gpu.func @k0_seeded_dropout_mask_f32(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !tgpu.ptr<f32, global>) kernel
// CHECK-COUNT-20: arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: arith.cmpi uge, %{{.*}}, %{{.*}} : i32
// CHECK: arith.select
// 63 elements: the last Philox block stores three of its four.
// CHECK: scf.if
// CHECK: gpu.func @k1_seeded_dropout_mask_f32
// CHECK-NOT: gpu.func
// CHECK: func.func @f(%[[X:.*]]: memref<9x7xf32>, %[[S:.*]]: i64,
// CHECK-NOT: tgpu.philox_take
// CHECK: %[[BASE:.*]] = arith.constant 0 : i64
// CHECK: tgpu.launch @k0_seeded_dropout_mask_f32 grid({{.*}}) block(256, 1, 1) shared(0) args(%[[S]], %[[BASE]], %{{.*}} : i64, i64, memref<9x7xf32>)
// CHECK: %[[BASE1:.*]] = arith.constant 0 : i64
// CHECK: tgpu.launch @k1_seeded_dropout_mask_f32 grid({{.*}}) block(256, 1, 1) shared(0) args(%[[S]], %[[BASE1]], %{{.*}} : i64, i64, memref<9x1xf32>)
// CHECK-NOT: tgpu.launch
// CHECK: func.return

builtin.module {
  func.func @f(%x: memref<9x7xf32>, %s: i64, %arena: memref<0xi8>) -> (memref<9x7xf32>, memref<9x1xf32>, memref<0x7xf32>) attributes {tfc.arena_size = 0 : i64} {
    %0 = loops.alloc : memref<9x7xf32>
    loops.library "seeded_dropout_mask"(%x, %s : memref<9x7xf32>, i64) outs(%0 : memref<9x7xf32>) {attrs = {rate = 2.500000e-01 : f64}} -> ()
    %1 = loops.alloc : memref<9x1xf32>
    loops.library "seeded_dropout_mask"(%x, %s : memref<9x7xf32>, i64) outs(%1 : memref<9x1xf32>) {attrs = {rate = 5.000000e-01 : f64, noise_shape = array<i64: 9, 1>}} -> ()
    %2 = loops.subview %x [0, 0] [0, 7] [1, 1] : memref<9x7xf32> -> memref<0x7xf32>
    %3 = loops.alloc : memref<0x7xf32>
    loops.library "seeded_dropout_mask"(%2, %s : memref<0x7xf32>, i64) outs(%3 : memref<0x7xf32>) {attrs = {rate = 5.000000e-01 : f64}} -> ()
    func.return %0, %1, %3 : memref<9x7xf32>, memref<9x1xf32>, memref<0x7xf32>
  }
}
