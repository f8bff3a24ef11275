// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s
// RUN: %tfc-opt %s -p tfc-lower-gpu | %tfc-opt - | filecheck %s

// A loop gradient's state lists (tfc/passes/gpu_lists.py HOST_LIST_OPS): results
// of run-time size, left as library calls of the host program (which runs them
// as device-to-device copies: tfc/backends/cuda/lists.py); no kernel for them.
// The loop body's arithmetic becomes a kernel as usual.

// CHECK-NOT: gpu.func @{{.*}}state_list
// CHECK: gpu.func @k0_fused_mul
// CHECK-NOT: gpu.func @{{.*}}state_list
// CHECK: func.func @f
// CHECK: loops.while
// CHECK: loops.library "state_list_push"(%{{.*}}, %{{.*}}, %{{.*}} : memref<?xf64>, memref<?x1xi64>, memref<2xf64>)
// CHECK: tgpu.launch @k0_fused_mul
// CHECK: loops.library "state_list_get"(%{{.*}}, %{{.*}}, %{{.*}}, %x : memref<?xf64>, memref<?x1xi64>, i32, memref<2xf64>)
builtin.module {
  func.func @f(%x: memref<2xf64>, %n: i32, %arena: memref<0xi8>) -> memref<2xf64> attributes {tfc.arena_size = 0 : i64} {
    %c0 = arith.constant 0 : i32
    %e = loops.constant dense<> : tensor<0xf64> -> memref<0xf64>
    %s = loops.constant dense<> : tensor<0x1xi64> -> memref<0x1xi64>
    %r, %i, %fl, %sh = loops.while %x, %c0, %e, %s : (memref<2xf64>, i32, memref<0xf64>, memref<0x1xi64>) -> (memref<2xf64>, i32, memref<?xf64>, memref<?x1xi64>) cond {
    ^bb0(%a: memref<2xf64>, %k: i32, %b: memref<?xf64>, %c: memref<?x1xi64>):
      %lt = arith.cmpi slt, %k, %n : i32
      loops.condition %lt : i1
    } do {
    ^bb0(%a2: memref<2xf64>, %k2: i32, %b2: memref<?xf64>, %c2: memref<?x1xi64>):
      %p0, %p1 = loops.library "state_list_push"(%b2, %c2, %a2 : memref<?xf64>, memref<?x1xi64>, memref<2xf64>) {attrs = {}} -> (memref<?xf64>, memref<?x1xi64>)
      %y = loops.alloc : memref<2xf64>
      loops.parallel ins(%a2 : memref<2xf64>) outs(%y : memref<2xf64>) attributes {shape = array<i64: 2>, broadcast = [array<i64: 0>]} {
      ^bb0(%v: f64):
        %w = arith.mulf %v, %v : f64
        loops.yield %w : f64
      }
      %one = arith.constant 1 : i32
      %k3 = arith.addi %k2, %one : i32
      loops.yield %y, %k3, %p0, %p1 : memref<2xf64>, i32, memref<?xf64>, memref<?x1xi64>
    }
    %last = arith.subi %i, %n : i32
    %g = loops.library "state_list_get"(%fl, %sh, %last, %x : memref<?xf64>, memref<?x1xi64>, i32, memref<2xf64>) {attrs = {}} -> (memref<2xf64>)
    func.return %g : memref<2xf64>
  }
}
