// RUN: %tfc-ptx %s | filecheck %s
// Shared memory, a barrier, a shuffle, an scf.if with a result (both branches
// write its register), an atomic without result (red) and with one (atom),
// numpy's maximum for maximumf (a where a > b or a is NaN, else b).

builtin.module {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (!tgpu.ptr<f32, global>, !tgpu.ptr<f32, global>) -> (), kernel}> ({
    ^bb0(%x: !tgpu.ptr<f32, global>, %out: !tgpu.ptr<f32, global>):
      %tid0 = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %t = arith.index_cast %tid0 : index to i32
      %v = tgpu.load %x[%t] : !tgpu.ptr<f32, global>, i32
      %s = tgpu.shared {size = 32} : !tgpu.ptr<f32, shared>
      tgpu.store %v, %s[%t] : !tgpu.ptr<f32, shared>, i32
      "gpu.barrier"() : () -> ()
      %c16 = arith.constant 16 : i32
      %w = tgpu.shuffle down %v, %c16 : f32
      %m = arith.maximumf %v, %w : f32
      %c0 = arith.constant 0 : i32
      %first = arith.cmpi eq, %t, %c0 : i32
      %r = scf.if %first -> (f32) {
        %y = tgpu.load %s[%c16] : !tgpu.ptr<f32, shared>, i32
        scf.yield %y : f32
      } else {
        scf.yield %m : f32
      }
      tgpu.atomic add %out[%c0], %r : !tgpu.ptr<f32, global>, i32
      %old = tgpu.atomic add %out[%c0], %r : !tgpu.ptr<f32, global>, i32 -> f32
      tgpu.store %old, %out[%t] : !tgpu.ptr<f32, global>, i32
      "gpu.return"() : () -> ()
    }) {sym_name = "red", gpu.known_block_size = array<i32: 32, 1, 1>} : () -> ()
  }) : () -> ()
}

// CHECK:      .visible .entry red(.param .u64 red_param_0, .param .u64 red_param_1)
// CHECK-NEXT: .reqntid 32, 1, 1
// CHECK:      .shared .align 16 .b8 red_smem_0[128];
// CHECK:      mov.u32 %[[S:r[0-9]+]], red_smem_0;
// CHECK-NEXT: mad.lo.s32 %[[SA:r[0-9]+]], %{{r[0-9]+}}, 4, %[[S]];
// CHECK-NEXT: st.shared.f32 [%[[SA]]], %[[V:f[0-9]+]];
// CHECK-NEXT: bar.sync 0;
// CHECK:      shfl.sync.down.b32 %[[W:f[0-9]+]], %[[V]], %{{r[0-9]+}}, 31, 0xffffffff;
// CHECK-NEXT: setp.gt.f32 %[[GT:p[0-9]+]], %[[V]], %[[W]];
// CHECK-NEXT: testp.notanumber.f32 %[[NAN:p[0-9]+]], %[[V]];
// CHECK-NEXT: or.pred %[[GT]], %[[GT]], %[[NAN]];
// CHECK-NEXT: selp.f32 %[[M:f[0-9]+]], %[[V]], %[[W]], %[[GT]];
// CHECK:      setp.eq.s32 %[[P:p[0-9]+]],
// CHECK-NEXT: @!%[[P]] bra [[ELSE:\$L_red_[0-9]+]];
// CHECK:      ld.shared.f32 %[[Y:f[0-9]+]],
// CHECK-NEXT: mov.f32 %[[R:f[0-9]+]], %[[Y]];
// CHECK-NEXT: bra.uni [[END:\$L_red_[0-9]+]];
// CHECK-NEXT: [[ELSE]]:
// CHECK-NEXT: mov.f32 %[[R]], %[[M]];
// CHECK-NEXT: [[END]]:
// CHECK:      red.global.add.f32 [%{{rd[0-9]+}}], %[[R]];
// CHECK:      atom.global.add.f32 %{{f[0-9]+}}, [%{{rd[0-9]+}}], %[[R]];
