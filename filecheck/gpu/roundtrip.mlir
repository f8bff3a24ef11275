// RUN: %tfc-opt %s | filecheck %s
// RUN: %tfc-opt %s | %tfc-opt | filecheck %s
// RUN: %tfc-opt %s | %tfc-ptx - | filecheck %s --check-prefix=PTX
// The tgpu ops print in their custom syntax, and xDSL's gpu.module, gpu.func,
// ids, barrier and return in MLIR's (the generic form, read here, still
// parses); that text parses back (here through the PTX printer's command line,
// which reads L4 text: `tfc opt` reads it once tfc/cli.py imports
// tfc.dialects.gpu before parsing).

builtin.module {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (!tgpu.ptr<f32, global>, !tgpu.ptr<i1, global>, i64) -> (), kernel}> ({
    ^bb0(%x: !tgpu.ptr<f32, global>, %b: !tgpu.ptr<i1, global>, %i: i64):
      %tid = "gpu.thread_id"() <{dimension = #gpu<dim y>}> : () -> index
      %a0, %a1, %a2, %a3 = "tgpu.load"(%x, %i) <{width = 4 : i64, nc}> : (!tgpu.ptr<f32, global>, i64) -> (f32, f32, f32, f32)
      %s = tgpu.shared {size = 64} : !tgpu.ptr<f32, shared>
      tgpu.store %a0, %a1, %s[%i] : !tgpu.ptr<f32, shared>, i64
      "gpu.barrier"() : () -> ()
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

// CHECK:      gpu.module @kernels {
// CHECK-NEXT:   gpu.func @k(%x: !tgpu.ptr<f32, global>, %b: !tgpu.ptr<i1, global>, %i: i64) kernel attributes {gpu.known_block_size = array<i32: 64, 1, 1>} {
// CHECK-NEXT:     %tid = gpu.thread_id y
// CHECK-NEXT:     %a0, %a1, %a2, %a3 = tgpu.load %x[%i] {width = 4, nc} : !tgpu.ptr<f32, global>, i64
// CHECK-NEXT:     %s = tgpu.shared {size = 64} : !tgpu.ptr<f32, shared>
// CHECK-NEXT:     tgpu.store %a0, %a1, %s[%i] : !tgpu.ptr<f32, shared>, i64
// CHECK-NEXT:     gpu.barrier
// CHECK:          %r = tgpu.shuffle xor %a2, %c1 : f32
// CHECK-NEXT:     tgpu.atomic add %x[%i], %r : !tgpu.ptr<f32, global>, i64
// CHECK-NEXT:     %f = tgpu.load %b[%i] : !tgpu.ptr<i1, global>, i64
// CHECK-NEXT:     gpu.return
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK:      tgpu.launch @k grid(%n, %one, %one) block(64, 1, 1) shared(0) args(%m, %f, %n : memref<?xf32>, memref<8xi1>, index)

// PTX:      .visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1, .param .u64 k_param_2)
// PTX-NEXT: .reqntid 64, 1, 1
// PTX:      mov.u32 %{{r[0-9]+}}, %tid.y;
// PTX:      ld.global.nc.v4.f32
// PTX:      bar.sync 0;
// PTX:      shfl.sync.bfly.b32
// PTX:      red.global.add.f32
// PTX:      ld.global.u8
