// RUN: %tfc-opt %s | filecheck %s
// RUN: %tfc-opt %s | %tfc-opt | filecheck %s
// The tgpu ops print in their custom syntax and parse back.

builtin.module {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (!tgpu.ptr<f32, global>, !tgpu.ptr<i1, global>, i64) -> (), kernel}> ({
    ^bb0(%x: !tgpu.ptr<f32, global>, %b: !tgpu.ptr<i1, global>, %i: i64):
      %a0, %a1, %a2, %a3 = "tgpu.load"(%x, %i) <{width = 4 : i64, nc}> : (!tgpu.ptr<f32, global>, i64) -> (f32, f32, f32, f32)
      %s = tgpu.shared {size = 64} : !tgpu.ptr<f32, shared>
      tgpu.store %a0, %a1, %s[%i] : !tgpu.ptr<f32, shared>, i64
      %c1 = arith.constant 1 : i32
      %r = tgpu.shuffle xor %a2, %c1 : f32
      tgpu.atomic add %x[%i], %r : !tgpu.ptr<f32, global>, i64
      %f = tgpu.load %b[%i] : !tgpu.ptr<i1, global>, i64
      "gpu.return"() : () -> ()
    }) {sym_name = "k", gpu.known_block_size = array<i32: 64, 1, 1>} : () -> ()
  }) : () -> ()
  func.func @host(%m: memref<?xf32>, %f: memref<8xi1>, %n: index) {
    %one = arith.constant 1 : index
    tgpu.launch @k grid(%n, %one, %one) block(64, 1, 1) shared(0) args(%m, %f, %n : memref<?xf32>, memref<8xi1>, index)
    func.return
  }
}

// CHECK:      %a0, %a1, %a2, %a3 = tgpu.load %x[%i] {width = 4, nc} : !tgpu.ptr<f32, global>, i64
// CHECK-NEXT: %s = tgpu.shared {size = 64} : !tgpu.ptr<f32, shared>
// CHECK-NEXT: tgpu.store %a0, %a1, %s[%i] : !tgpu.ptr<f32, shared>, i64
// CHECK:      %r = tgpu.shuffle xor %a2, %c1 : f32
// CHECK-NEXT: tgpu.atomic add %x[%i], %r : !tgpu.ptr<f32, global>, i64
// CHECK-NEXT: %f = tgpu.load %b[%i] : !tgpu.ptr<i1, global>, i64
// CHECK:      tgpu.launch @k grid(%n, %one, %one) block(64, 1, 1) shared(0) args(%m, %f, %n : memref<?xf32>, memref<8xi1>, index)
