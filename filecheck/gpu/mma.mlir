// RUN: %tfc-opt %s | filecheck %s
// RUN: %tfc-opt %s | %tfc-opt | filecheck %s
// RUN: %tfc-opt %s | %tfc-ptx - | filecheck %s --check-prefix=PTX
// tgpu.mma (a warp's m16n8k16 tensor-core product, f16 in, f32 accumulate)
// prints and parses back; the printer packs each pair of float16 fragment
// values into a .b32 register (the first element low) and emits one mma.sync.
// tgpu.philox_take (host side) round-trips too.

// CHECK: %d0, %d1, %d2, %d3 = tgpu.mma m16n8k16 a(%a, %b, %a, %b, %a, %b, %a, %b) b(%b, %a, %b, %a) c(%z, %z, %z, %z) : f16 -> f32
// CHECK: %key, %base = tgpu.philox_take {blocks = 8}

// PTX: .reg .b32 %hh<7>;
// PTX: mov.b32 %hh1, {%h{{[0-9]+}}, %h{{[0-9]+}}};
// PTX: mov.b32 %hh6, {%h{{[0-9]+}}, %h{{[0-9]+}}};
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}}, {%hh1, %hh2, %hh3, %hh4}, {%hh5, %hh6}, {%f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}, %f{{[0-9]+}}};
builtin.module {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (!tgpu.ptr<f16, global>, !tgpu.ptr<f32, global>) -> (), kernel}> ({
    ^bb0(%x: !tgpu.ptr<f16, global>, %y: !tgpu.ptr<f32, global>):
      %tid0 = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %i = arith.index_cast %tid0 : index to i32
      %a = tgpu.load %x[%i] : !tgpu.ptr<f16, global>, i32
      %b = tgpu.load %x[%i] : !tgpu.ptr<f16, global>, i32
      %z = arith.constant 0.0 : f32
      %d0, %d1, %d2, %d3 = tgpu.mma m16n8k16 a(%a, %b, %a, %b, %a, %b, %a, %b) b(%b, %a, %b, %a) c(%z, %z, %z, %z) : f16 -> f32
      tgpu.store %d0, %y[%i] : !tgpu.ptr<f32, global>, i32
      "gpu.return"() : () -> ()
    }) {sym_name = "k", gpu.known_block_size = array<i32: 32, 1, 1>} : () -> ()
  }) : () -> ()
  func.func @host() -> (i64, i64) {
    %key, %base = tgpu.philox_take {blocks = 8}
    func.return %key, %base : i64, i64
  }
}
