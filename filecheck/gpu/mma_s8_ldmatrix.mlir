// RUN: %tfc-opt %s | filecheck %s
// RUN: %tfc-opt %s | %tfc-opt | filecheck %s
// RUN: %tfc-opt %s | %tfc-ptx - | filecheck %s --check-prefix=PTX
// RUN: sed -e 's/b(%w, %w)/b(%w)/' %s | not %tfc-opt - 2>&1 | filecheck %s --check-prefix=ERR
// tgpu.mma m16n8k32 (int8 codes four to an i32, int32 accumulator) prints and
// parses back and prints as one mma.sync ... .s32.s8.s8.s32 on the i32
// registers as they are. tgpu.ldmatrix x2 {trans}: one ldmatrix into .b32
// registers, each unpacked into its two float16 values (mov.b32 {lo, hi});
// an f16 mma of exactly those pairs reuses the registers (no repacking).

// CHECK: %d0, %d1, %d2, %d3 = tgpu.mma m16n8k32 a(%w, %w, %w, %w) b(%w, %w) c(%w, %w, %w, %w) : i8 -> i32
// CHECK: %v0, %v1, %v2, %v3 = tgpu.ldmatrix x2 %s[%i] {trans} : !tgpu.ptr<f16, shared>, i32
// CHECK: %u0, %u1, %u2, %u3, %u4, %u5, %u6, %u7 = tgpu.ldmatrix x4 %s[%i] : !tgpu.ptr<f16, shared>, i32

// PTX: mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}, %r{{[0-9]+}}}, {%[[W:r[0-9]+]], %[[W]], %[[W]], %[[W]]}, {%[[W]], %[[W]]}, {%[[W]], %[[W]], %[[W]], %[[W]]};
// PTX: ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%[[B0:hh[0-9]+]], %[[B1:hh[0-9]+]]}, [%r{{[0-9]+}}];
// PTX-NEXT: mov.b32 {%h{{[0-9]+}}, %h{{[0-9]+}}}, %[[B0]];
// PTX-NEXT: mov.b32 {%h{{[0-9]+}}, %h{{[0-9]+}}}, %[[B1]];
// PTX: ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%[[A0:hh[0-9]+]], %[[A1:hh[0-9]+]], %[[A2:hh[0-9]+]], %[[A3:hh[0-9]+]]}, [%r{{[0-9]+}}];
// PTX-NOT: mov.b32 %hh
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{.*}}, {%[[A0]], %[[A1]], %[[A2]], %[[A3]]}, {%[[B0]], %[[B1]]}, {{.*}};

// ERR: m16n8k32 takes 4 a, 2 b and 4 c values per thread and gives 4

builtin.module {
  gpu.module @kernels {
    gpu.func @k(%w: i32, %out: !tgpu.ptr<i32, global>, %outf: !tgpu.ptr<f32, global>) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>, tgpu.kind = "matmul", tgpu.index = "i32"} {
      %tid0 = gpu.thread_id x
      %i = arith.index_cast %tid0 : index to i32
      %d0, %d1, %d2, %d3 = tgpu.mma m16n8k32 a(%w, %w, %w, %w) b(%w, %w) c(%w, %w, %w, %w) : i8 -> i32
      tgpu.store %d0, %out[%i] : !tgpu.ptr<i32, global>, i32
      %s = tgpu.shared {size = 512} : !tgpu.ptr<f16, shared>
      %v0, %v1, %v2, %v3 = tgpu.ldmatrix x2 %s[%i] {trans} : !tgpu.ptr<f16, shared>, i32
      %u0, %u1, %u2, %u3, %u4, %u5, %u6, %u7 = tgpu.ldmatrix x4 %s[%i] : !tgpu.ptr<f16, shared>, i32
      %z = arith.constant 0.0 : f32
      %e0, %e1, %e2, %e3 = tgpu.mma m16n8k16 a(%u0, %u1, %u2, %u3, %u4, %u5, %u6, %u7) b(%v0, %v1, %v2, %v3) c(%z, %z, %z, %z) : f16 -> f32
      tgpu.store %e0, %outf[%i] : !tgpu.ptr<f32, global>, i32
      gpu.return
    }
  }
}
