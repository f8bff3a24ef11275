// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s
// RUN: %tfc-opt %s -p tfc-lower-gpu | %tfc-opt - | filecheck %s

// argsort (tfc/passes/gpu_sort.py): a stable merge sort in ceil(log2 n)
// passes of one thread per element (n = 5: runs of 1, 2, 4). The first pass
// reads the identity permutation (no source buffer); each element finds its
// place in the merged run by a binary search of bit_length(w) steps over the
// partner run, comparing keys read through the indices (NaN above every
// number: cmpf uno). Passes ping-pong between the result and one scratch
// buffer so that the last writes the result.

// CHECK: gpu.func @k0_argsort_w1(%{{.*}}: !tgpu.ptr<f32, global>, %{{.*}}: !tgpu.ptr<i32, global>) kernel
// CHECK-SAME: tgpu.kind = "elementwise"
// CHECK: scf.for
// CHECK: tgpu.load %{{.*}} {nc} : !tgpu.ptr<f32, global>, i32
// CHECK: scf.for {{.*}} iter_args
// CHECK: arith.cmpf olt
// CHECK: arith.cmpf uno
// CHECK: scf.yield
// CHECK: tgpu.store %{{.*}}, %{{.*}}[%{{.*}}] : !tgpu.ptr<i32, global>, i32
// CHECK: gpu.func @k1_argsort_w2(%{{.*}}: !tgpu.ptr<f32, global>, %{{.*}}: !tgpu.ptr<i32, global>, %{{.*}}: !tgpu.ptr<i32, global>) kernel
// CHECK: %[[IDX:.*]] = tgpu.load %{{.*}}[%{{.*}}] : !tgpu.ptr<i32, global>, i32
// CHECK: gpu.func @k2_argsort_w4
// CHECK-NOT: gpu.func
// CHECK: func.func @f
// CHECK: %[[OUT:.*]] = loops.alloc : memref<3x5xi32>
// CHECK: tgpu.launch @k0_argsort_w1 {{.*}} args(%x, %[[OUT]] :
// CHECK: %[[TMP:.*]] = loops.alloc : memref<3x5xi32>
// CHECK: tgpu.launch @k1_argsort_w2 {{.*}} args(%x, %[[OUT]], %[[TMP]] :
// CHECK: tgpu.launch @k2_argsort_w4 {{.*}} args(%x, %[[TMP]], %[[OUT]] :
// CHECK: func.return %[[OUT]]
func.func @f(%x: memref<3x5xf32>, %arena: memref<0xi8>) -> memref<3x5xi32> {
  %0 = loops.library "argsort"(%x : memref<3x5xf32>) {attrs = {axis = -1 : i64, direction = "DESCENDING"}} -> (memref<3x5xi32>)
  func.return %0 : memref<3x5xi32>
}
