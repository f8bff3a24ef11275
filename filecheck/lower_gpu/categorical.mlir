// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s

// categorical (tfc/passes/gpu_random.py): a check kernel (one block; threads
// stride over the rows, an atomic count of rows without a distribution), the
// host reads the count (the one sync) and raises eager's error through a
// loops.raise of the op; then the sampling kernel: the seeded key and base,
// one thread per Philox block, per sample its row's max, sum of exp and the
// running sum's first value above v = min(u total, the float64 below total).

// CHECK: gpu.func @k0_categorical_check(%{{.*}}: !tgpu.ptr<f64, global>, %{{.*}}: !tgpu.ptr<i32, global>) kernel
// CHECK: gpu.barrier
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: tgpu.atomic add
// CHECK: gpu.func @k1_categorical(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !tgpu.ptr<i64, global>, %{{.*}}: !tgpu.ptr<f64, global>) kernel
// CHECK: arith.bitcast %{{.*}} : f64 to i64
// CHECK: arith.minimumf
// CHECK: arith.cmpf ogt
// CHECK: func.func @f
// CHECK: %[[COUNT:.*]] = loops.alloc : memref<i32>
// CHECK: tgpu.launch @k0_categorical_check {{.*}} args(%x, %[[COUNT]] :
// CHECK: %[[SEEN:.*]] = loops.load %[[COUNT]] : memref<i32> -> i32
// CHECK: %[[BAD:.*]] = arith.cmpi ne, %[[SEEN]], %{{.*}} : i32
// CHECK: loops.if %[[BAD]]
// CHECK-NEXT: loops.raise "categorical"(%x : memref<3x4xf64>)
// CHECK: %[[KEY:.*]] = arith.constant 7 : i64
// CHECK: %[[BASE:.*]] = arith.constant 0 : i64
// CHECK: %[[OUT:.*]] = loops.alloc : memref<3x5xi64>
// CHECK: tgpu.launch @k1_categorical {{.*}} args(%[[KEY]], %[[BASE]], %[[OUT]], %x :
func.func @f(%x: memref<3x4xf64>, %arena: memref<0xi8>) -> memref<3x5xi64> {
  %0 = loops.library "categorical"(%x : memref<3x4xf64>) {attrs = {num_samples = 5 : i64, dtype = i64, seed = 7 : i64}} -> (memref<3x5xi64>)
  func.return %0 : memref<3x5xi64>
}
