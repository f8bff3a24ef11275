// RUN: %tfc-ptx %s | filecheck %s
// An elementwise kernel with an i32 grid-stride loop: the header, typed
// registers, one cvta per pointer, an exact multiply-add (never contracted),
// the loop as a head label, a predicated exit and a back branch.

builtin.module {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (!tgpu.ptr<f32, global>, !tgpu.ptr<f32, global>, i32) -> (), kernel}> ({
    ^bb0(%x: !tgpu.ptr<f32, global>, %out: !tgpu.ptr<f32, global>, %n: i32):
      %tid0 = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %bid0 = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
      %bdim0 = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index
      %gdim0 = "gpu.grid_dim"() <{dimension = #gpu<dim x>}> : () -> index
      %tid = arith.index_cast %tid0 : index to i32
      %bid = arith.index_cast %bid0 : index to i32
      %bdim = arith.index_cast %bdim0 : index to i32
      %gdim = arith.index_cast %gdim0 : index to i32
      %b = arith.muli %bid, %bdim : i32
      %start = arith.addi %b, %tid : i32
      %step = arith.muli %gdim, %bdim : i32
      %two = arith.constant 2.0 : f32
      scf.for %i = %start to %n step %step : i32 {
        %v = tgpu.load %x[%i] {nc} : !tgpu.ptr<f32, global>, i32
        %m = arith.mulf %v, %two : f32
        %r = arith.addf %m, %v : f32
        tgpu.store %r, %out[%i] : !tgpu.ptr<f32, global>, i32
      }
      "gpu.return"() : () -> ()
    }) {sym_name = "axpy", gpu.known_block_size = array<i32: 256, 1, 1>} : () -> ()
  }) : () -> ()
}

// CHECK:      .version 8.0
// CHECK-NEXT: .target sm_80
// CHECK-NEXT: .address_size 64
// CHECK:      .visible .entry axpy(.param .u64 axpy_param_0, .param .u64 axpy_param_1, .param .u32 axpy_param_2)
// CHECK-NEXT: .reqntid 256, 1, 1
// CHECK-NEXT: {
// CHECK-DAG:  .reg .pred %p<2>;
// CHECK-DAG:  .reg .u32 %r<
// CHECK-DAG:  .reg .u64 %rd<
// CHECK-DAG:  .reg .f32 %f<
// CHECK:      ld.param.u64 %[[X0:rd[0-9]+]], [axpy_param_0];
// CHECK-NEXT: cvta.to.global.u64 %[[X:rd[0-9]+]], %[[X0]];
// CHECK:      ld.param.u64 %[[O0:rd[0-9]+]], [axpy_param_1];
// CHECK-NEXT: cvta.to.global.u64 %[[O:rd[0-9]+]], %[[O0]];
// CHECK:      mov.u32 %[[TID:r[0-9]+]], %tid.x;
// CHECK:      mov.u32 %{{r[0-9]+}}, %ctaid.x;
// CHECK:      mov.u32 %{{r[0-9]+}}, %ntid.x;
// CHECK:      mov.u32 %{{r[0-9]+}}, %nctaid.x;
// CHECK:      mov.f32 %[[TWO:f[0-9]+]], 0f40000000;
// CHECK:      mov.u32 %[[I:r[0-9]+]], %{{r[0-9]+}};
// CHECK-NEXT: [[HEAD:\$L_axpy_[0-9]+]]:
// CHECK-NEXT: setp.ge.s32 %[[P:p[0-9]+]], %[[I]], %{{r[0-9]+}};
// CHECK-NEXT: @%[[P]] bra [[END:\$L_axpy_[0-9]+]];
// CHECK-NEXT: mul.wide.s32 %[[OFF:rd[0-9]+]], %[[I]], 4;
// CHECK-NEXT: add.s64 %[[A:rd[0-9]+]], %[[X]], %[[OFF]];
// CHECK-NEXT: ld.global.nc.f32 %[[V:f[0-9]+]], [%[[A]]];
// CHECK-NEXT: mul.rn.f32 %[[M:f[0-9]+]], %[[V]], %[[TWO]];
// CHECK-NEXT: add.rn.f32 %[[R:f[0-9]+]], %[[M]], %[[V]];
// CHECK:      st.global.f32 [%{{rd[0-9]+}}], %[[R]];
// CHECK-NEXT: add.s32 %[[I]], %[[I]], %{{r[0-9]+}};
// CHECK-NEXT: bra.uni [[HEAD]];
// CHECK-NEXT: [[END]]:
// CHECK-NEXT: ret;
// CHECK-NEXT: }
// CHECK-NOT:  fma
// CHECK-NOT:  .ftz
