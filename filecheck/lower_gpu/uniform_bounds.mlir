// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s
// RUN: %tfc-opt %s -p tfc-lower-gpu | %tfc-opt - | filecheck %s

// uniform_bounds (tfc/passes/gpu_random.py): the host checks the bounds
// (minval < maxval, both finite: x - x == 0) and raises eager's error through
// a loops.raise of the op before the draw; the kernel is uniform's, its bounds
// float64 parameters (float32 bounds extended on the host), the values capped
// at the float below maxval from maxval's bits. Seeded: key constant, base 0;
// unseeded: tgpu.philox_take after the check.

// CHECK: gpu.func @k0_uniform_bounds_f32(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !tgpu.ptr<f32, global>, %[[LO:.*]]: f64, %[[HI:.*]]: f64) kernel
// CHECK: %[[SPAN:.*]] = arith.subf %[[HI]], %[[LO]] : f64
// CHECK: %[[HI32:.*]] = arith.truncf %[[HI]] : f64 to f32
// CHECK: arith.bitcast %[[HI32]] : f32 to i32
// CHECK: arith.mulf %{{.*}}, %[[SPAN]] : f64
// CHECK: arith.minimumf %{{.*}} : f32
// CHECK: gpu.func @k1_uniform_bounds_f64(
// CHECK: func.func @f
// CHECK: %[[LT:.*]] = arith.cmpf olt, %a, %b : f32
// CHECK: %[[BAD:.*]] = arith.xori
// CHECK: loops.if %[[BAD]]
// CHECK-NEXT: loops.raise "uniform_bounds"(%a, %b : f32, f32)
// CHECK: %[[A64:.*]] = arith.extf %a : f32 to f64
// CHECK: %[[B64:.*]] = arith.extf %b : f32 to f64
// CHECK: tgpu.launch @k0_uniform_bounds_f32 {{.*}} args(%{{.*}}, %{{.*}}, %{{.*}}, %[[A64]], %[[B64]] :
// CHECK: loops.raise "uniform_bounds"(%c, %d : f64, f64)
// CHECK-NOT: arith.extf
// CHECK: tgpu.philox_take
// CHECK: tgpu.launch @k1_uniform_bounds_f64 {{.*}} args(%{{.*}}, %{{.*}}, %{{.*}}, %c, %d :
builtin.module {
  func.func @f(%a: f32, %b: f32, %c: f64, %d: f64, %arena: memref<0xi8>) -> (memref<5xf32>, memref<7xf64>) attributes {tfc.arena_size = 0 : i64} {
    %0 = loops.alloc : memref<5xf32>
    loops.library "uniform_bounds"(%a, %b : f32, f32) outs(%0 : memref<5xf32>) {attrs = {shape = array<i64: 5>, dtype = f32, seed = 3 : i64}} -> ()
    %1 = loops.alloc : memref<7xf64>
    loops.library "uniform_bounds"(%c, %d : f64, f64) outs(%1 : memref<7xf64>) {attrs = {shape = array<i64: 7>, dtype = f64}} -> ()
    func.return %0, %1 : memref<5xf32>, memref<7xf64>
  }
}
