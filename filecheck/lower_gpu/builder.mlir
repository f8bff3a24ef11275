// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s

// The kernel builder (tfc/passes/gpu_builder.py, KernelBuilder) behind every
// kernel: thread/block ids and constants are made once, at the kernel's entry
// before any loop (the block size 256 serves both the start and the step of
// the grid-stride loop); the index helpers fold a multiply by a known 1 (the
// broadcast row's stride) and an add of a known 0 (dot of digits and strides),
// so the [7] operand's index is one remui and the contiguous one's is the
// loop index itself.
func.func @bcast(%x: memref<5x7xf32>, %b: memref<7xf32>, %arena: memref<0xi8>) -> memref<5x7xf32> {
  %0 = loops.alloc : memref<5x7xf32>
  loops.parallel ins(%x, %b : memref<5x7xf32>, memref<7xf32>) outs(%0 : memref<5x7xf32>) attributes {shape = array<i64: 5, 7>, broadcast = [array<i64: 0, 1>, array<i64: 1>]} {
  ^bb0(%v: f32, %w: f32):
    %m = arith.mulf %v, %w : f32
    %a = arith.addf %m, %w : f32
    loops.yield %a : f32
  }
  func.return %0 : memref<5x7xf32>
}

// CHECK:       gpu.func @k0_fused_mul_add(%[[X:.*]]: !tgpu.ptr<f32, global>, %[[B:.*]]: !tgpu.ptr<f32, global>, %[[O:.*]]: !tgpu.ptr<f32, global>) kernel attributes {{.*}}tgpu.index = "i32"
// CHECK-NEXT:    %[[BID:.*]] = gpu.block_id x
// CHECK-NEXT:    %[[BIDI:.*]] = arith.index_cast %[[BID]] : index to i32
// CHECK-NEXT:    %[[BS:.*]] = arith.constant 256 : i32
// CHECK-NEXT:    %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT:    %[[TIDI:.*]] = arith.index_cast %[[TID]] : index to i32
// CHECK-NEXT:    %[[GD:.*]] = gpu.grid_dim x
// CHECK-NEXT:    %[[GDI:.*]] = arith.index_cast %[[GD]] : index to i32
// CHECK-NEXT:    %[[N:.*]] = arith.constant 35 : i32
// CHECK-NEXT:    %[[C7:.*]] = arith.constant 7 : i32
// CHECK-NEXT:    %[[S0:.*]] = arith.muli %[[BIDI]], %[[BS]] : i32
// CHECK-NEXT:    %[[START:.*]] = arith.addi %[[S0]], %[[TIDI]] : i32
// CHECK-NEXT:    %[[STEP:.*]] = arith.muli %[[GDI]], %[[BS]] : i32
// CHECK-NEXT:    scf.for %[[I:.*]] = %[[START]] to %[[N]] step %[[STEP]] : i32 {
// CHECK-NEXT:      %[[J:.*]] = arith.remui %[[I]], %[[C7]] : i32
// CHECK-NEXT:      tgpu.load %[[X]][%[[I]]] {nc}
// CHECK-NEXT:      tgpu.load %[[B]][%[[J]]] {nc}
// CHECK-NOT:       gpu.thread_id
// CHECK-NOT:       arith.constant
// CHECK:           tgpu.store %{{.*}}, %[[O]][%[[I]]]
// CHECK:         gpu.return
