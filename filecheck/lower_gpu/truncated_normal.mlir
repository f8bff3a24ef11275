// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s

// truncated_normal (tfc/passes/gpu_random.py): a result the op allocates (a
// fresh device buffer), one thread per Philox block, two elements a block
// (two words each, a float64 uniform); the numpy kernel's inverse transform
// in float64: Winitzki's guess (log1p, two sqrt, copysign), three Newton steps
// on tfc's erf formula (an exp each, and exp(-w^2) for the slope), the clip to
// [-2, 2] and one rounding to float32.

// CHECK: gpu.func @k0_truncated_normal_f32(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !tgpu.ptr<f32, global>) kernel
// CHECK: arith.uitofp %{{.*}} : i64 to f64
// CHECK: math.log1p %{{.*}} : f64
// CHECK: math.sqrt
// CHECK: math.sqrt
// CHECK: math.copysign
// CHECK-COUNT-6: math.exp %{{.*}} : f64
// CHECK: arith.maximumf
// CHECK-NEXT: arith.minimumf
// CHECK-NEXT: arith.truncf %{{.*}} : f64 to f32
// CHECK: func.func @f
// CHECK: %[[OUT:.*]] = loops.alloc : memref<5xf32>
// CHECK: %[[KEY:.*]] = arith.constant 3 : i64
// CHECK: %[[BASE:.*]] = arith.constant 0 : i64
// CHECK: tgpu.launch @k0_truncated_normal_f32 grid({{.*}}) block(256, 1, 1) shared(0) args(%[[KEY]], %[[BASE]], %[[OUT]] :
// CHECK: func.return %[[OUT]]
func.func @f(%arena: memref<0xi8>) -> memref<5xf32> {
  %0 = loops.library "truncated_normal"() {attrs = {shape = array<i64: 5>, dtype = f32, mean = 0.000000e+00 : f64, stddev = 1.000000e+00 : f64, seed = 3 : i64}} -> (memref<5xf32>)
  func.return %0 : memref<5xf32>
}
