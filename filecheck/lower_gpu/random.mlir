// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s
// RUN: %tfc-opt %s -p tfc-lower-gpu | %tfc-opt - | filecheck %s
// RUN: sed -e 's/7xf32/7xf64/g' -e 's/dtype = f32, mean/dtype = f64, mean/' %s | %tfc-opt - -p tfc-lower-gpu | filecheck %s --check-prefix=F64

// Random ops (tfc/passes/gpu_random.py): one thread per Philox4x32-10 block,
// the key and counter base as i64 parameters. A seeded op passes host
// constants (key = seed, base 0); an unseeded one reserves its blocks of the
// global stream with tgpu.philox_take when the host program runs.

// CHECK: gpu.func @k0_uniform_f32(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !tgpu.ptr<f32, global>) kernel
// Ten rounds: two 32x32->64-bit products each.
// CHECK-COUNT-20: arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: arith.shrui %{{.*}}, %{{.*}} : i32
// CHECK: arith.uitofp %{{.*}} : i32 to f32
// Ten elements: the last Philox block stores elements 8 and 9 only.
// CHECK: scf.if
// CHECK: gpu.func @k1_normal_f32
// CHECK: math.log1p
// CHECK: math.log
// CHECK: math.sqrt
// CHECK: math.cos
// CHECK: math.sin
// CHECK: gpu.func @k2_dropout_mask_f32
// CHECK: arith.cmpi uge, %{{.*}}, %{{.*}} : i32
// CHECK: arith.select
// CHECK: func.func @f
// CHECK: %[[KEY:.*]] = arith.constant 3 : i64
// CHECK: %[[BASE:.*]] = arith.constant 0 : i64
// CHECK: tgpu.launch @k0_uniform_f32 grid({{.*}}) block(256, 1, 1) shared(0) args(%[[KEY]], %[[BASE]], %{{.*}} :
// CHECK: %[[K:.*]], %[[B:.*]] = tgpu.philox_take {blocks = 2}
// CHECK: tgpu.launch @k1_normal_f32 grid({{.*}}) block(256, 1, 1) shared(0) args(%[[K]], %[[B]], %{{.*}} :
// CHECK: tgpu.launch @k2_dropout_mask_f32
// float64 normals: one Box-Muller pair a Philox block from its two 53-bit
// integers, log, sqrt, cos and sin all in float64.
// F64: gpu.func @k1_normal_f64
// F64: arith.shrui %{{.*}}, %{{.*}} : i64
// F64: arith.uitofp %{{.*}} : i64 to f64
// F64: math.log %{{.*}} : f64
// F64: math.sqrt %{{.*}} : f64
// F64: math.cos %{{.*}} : f64
// F64: math.sin %{{.*}} : f64
// F64: tgpu.store %{{.*}} : !tgpu.ptr<f64, global>
func.func @f(%x: memref<5xf32>, %arena: memref<0xi8>) -> (memref<10xf32>, memref<7xf32>, memref<5xf32>) {
  %u = loops.alloc : memref<10xf32>
  loops.library "uniform"() outs(%u : memref<10xf32>) {attrs = {shape = array<i64: 10>, dtype = f32, minval = 0.000000e+00 : f64, seed = 3 : i64}} -> ()
  %n = loops.alloc : memref<7xf32>
  loops.library "normal"() outs(%n : memref<7xf32>) {attrs = {shape = array<i64: 7>, dtype = f32, mean = 0.000000e+00 : f64, stddev = 1.000000e+00 : f64}} -> ()
  %d = loops.alloc : memref<5xf32>
  loops.library "dropout_mask"(%x : memref<5xf32>) outs(%d : memref<5xf32>) {attrs = {rate = 5.000000e-01 : f64, seed = 4 : i64}} -> ()
  func.return %u, %n, %d : memref<10xf32>, memref<7xf32>, memref<5xf32>
}
