// RUN: %tfc-opt %s | filecheck %s
// RUN: %tfc-opt %s | %tfc-opt | filecheck %s
// RUN: %tfc-opt %s | %tfc-ptx - | filecheck %s --check-prefix=PTX
// RUN: sed -e 's/%c : i32/%c : i64/' %s | not %tfc-opt - 2>&1 | filecheck %s --check-prefix=ERR
// tgpu.dp4a (four signed-byte products plus an int32, wrapping) prints and
// parses back, and prints as one dp4a.s32.s32 on .u32 registers.

builtin.module {
  gpu.module @kernels {
    gpu.func @dot(%a: i32, %b: i32, %c: i32, %out: !tgpu.ptr<i32, global>) kernel attributes {gpu.known_block_size = array<i32: 32, 1, 1>, tgpu.kind = "elementwise", tgpu.index = "i32"} {
      %i = arith.constant 0 : i32
      %d = tgpu.dp4a %a, %b, %c : i32
      tgpu.store %d, %out[%i] : !tgpu.ptr<i32, global>, i32
      gpu.return
    }
  }
}

// CHECK: %d = tgpu.dp4a %a, %b, %c : i32

// PTX:      ld.param.u32 %[[A:r[0-9]+]], [dot_param_0];
// PTX-NEXT: ld.param.u32 %[[B:r[0-9]+]], [dot_param_1];
// PTX-NEXT: ld.param.u32 %[[C:r[0-9]+]], [dot_param_2];
// PTX:      dp4a.s32.s32 %[[D:r[0-9]+]], %[[A]], %[[B]], %[[C]];
// PTX:      st.global.u32 [%{{rd[0-9]+}}], %[[D]];

// ERR: operands are i32
