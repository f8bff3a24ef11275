// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s

// One block per output row: threads stride over the row, shuffles in each
// warp, the warps' results through shared memory, thread 0 stores. Every
// barrier is outside the branches (all threads reach it).
func.func @rows(%x: memref<5x301xf32>, %arena: memref<0xi8>) -> memref<5xf32> {
  %0 = loops.alloc : memref<5xf32>
  loops.parallel ins(%x : memref<5x301xf32>) outs(%0 : memref<5xf32>) attributes {shape = array<i64: 5, 301>, broadcast = [array<i64: 0, 1>], reduce = ["sum"], reduce_axes = array<i64: 1>} {
  ^bb0(%a: f32):
    %e = math.exp %a : f32
    loops.yield %e : f32
  }
  func.return %0 : memref<5xf32>
}

// CHECK:       gpu.func @k0_sum_rows({{.*}}) kernel attributes {{[{]}}gpu.known_block_size = array<i32: 256, 1, 1>, tgpu.kind = "reduction", tgpu.index = "i32"} {
// CHECK:         %[[SH:.*]] = tgpu.shared {size = 8} : !tgpu.ptr<f32, shared>
// CHECK:         %[[NEG0:.*]] = arith.constant -0.000000e+00 : f32
// CHECK:         scf.for %[[O:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK:           %[[ROW:.*]] = arith.muli %[[O]], %{{.*}} : i32
// CHECK:           %[[ACC:.*]] = scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A:.*]] = %[[NEG0]]) -> (f32) : i32 {
// CHECK-NEXT:        %[[IDX:.*]] = arith.addi %[[ROW]], %[[R]] : i32
// CHECK-NEXT:        %[[X:.*]] = tgpu.load %{{.*}}[%[[IDX]]] {nc}
// CHECK-NEXT:        %[[E:.*]] = math.exp %[[X]] : f32
// CHECK-NEXT:        %[[S:.*]] = arith.addf %[[A]], %[[E]] : f32
// CHECK-NEXT:        scf.yield %[[S]] : f32
// CHECK:           tgpu.shuffle down %[[ACC]], %{{.*}} : f32
// CHECK-COUNT-4:   tgpu.shuffle down
// CHECK:           scf.if
// CHECK-NEXT:        tgpu.store %{{.*}}, %[[SH]][%{{.*}}] : !tgpu.ptr<f32, shared>, i32
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      %[[W0:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:      scf.if %[[W0]] {
// CHECK:             tgpu.load %[[SH]]
// CHECK-COUNT-5:     tgpu.shuffle down
// CHECK:             scf.if
// CHECK-NEXT:          tgpu.store %{{.*}}, %{{.*}}[%[[O]]] : !tgpu.ptr<f32, global>, i32
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:    }

// A full max over 2^15 elements: two passes, the partial maxima of 16 chunks
// into a fresh buffer, then one block over them; the first pass reads
// 16-byte vectors (a contiguous, aligned input: a planned buffer; a function
// argument may be a view at any offset).
func.func @full(%x: memref<32768xf32>, %arena: memref<131072xi8>) -> memref<f32> {
  %buf = loops.view %arena {offset = 0 : i64} : memref<131072xi8> -> memref<32768xf32>
  loops.copy %x, %buf : memref<32768xf32>, memref<32768xf32>
  %0 = loops.alloc : memref<f32>
  loops.parallel ins(%buf : memref<32768xf32>) outs(%0 : memref<f32>) attributes {shape = array<i64: 32768>, broadcast = [array<i64: 0>], reduce = ["max"], reduce_axes = array<i64: 0>} {
  ^bb0(%a: f32):
    loops.yield %a : f32
  }
  func.return %0 : memref<f32>
}

// CHECK:       gpu.func @k1_copy(
// CHECK:       gpu.func @k2_max_all({{.*}}) kernel attributes {{.*}}tgpu.kind = "reduction"
// CHECK:         arith.constant 0xff800000 : f32
// CHECK:         tgpu.load %{{.*}}[%{{.*}}] {width = 4, nc}
// CHECK-COUNT-4: arith.maximumf
// CHECK:       gpu.func @k3_max_all_final({{.*}}) kernel attributes {{.*}}tgpu.kind = "reduction"
// CHECK:         arith.maximumf

// float64 accumulators reduce through a shared-memory tree of 128 threads
// (1 KiB), one barrier per level, the halving step under a branch.
func.func @wide(%x: memref<3x50xf64>, %arena: memref<0xi8>) -> memref<3xf64> {
  %0 = loops.alloc : memref<3xf64>
  loops.parallel ins(%x : memref<3x50xf64>) outs(%0 : memref<3xf64>) attributes {shape = array<i64: 3, 50>, broadcast = [array<i64: 0, 1>], reduce = ["sum"], reduce_axes = array<i64: 1>} {
  ^bb0(%a: f64):
    loops.yield %a : f64
  }
  func.return %0 : memref<3xf64>
}

// CHECK:       gpu.func @k4_sum_rows({{.*}}) kernel attributes {{[{]}}gpu.known_block_size = array<i32: 128, 1, 1>
// CHECK:         %[[T:.*]] = tgpu.shared {size = 128} : !tgpu.ptr<f64, shared>
// CHECK:         tgpu.store %{{.*}}, %[[T]][%{{.*}}] : !tgpu.ptr<f64, shared>, i32
// CHECK-NEXT:    gpu.barrier
// CHECK-NEXT:    arith.cmpi ult
// CHECK-NEXT:    scf.if
// CHECK-COUNT-2:   tgpu.load %[[T]]
// CHECK:         gpu.barrier
// CHECK-NOT:     tgpu.shuffle

// CHECK:       gpu.func @k5_rows_max_map_sum({{.*}}) kernel attributes {{[{]}}gpu.known_block_size = array<i32: 256, 1, 1>, tgpu.kind = "reduction"
// CHECK:         scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK:           arith.maximumf
// CHECK-COUNT-5:   tgpu.shuffle down
// CHECK:           gpu.barrier
// CHECK:           math.exp
// CHECK:           gpu.barrier
// CHECK:           arith.addf
// CHECK:           gpu.barrier
// CHECK:           arith.divf
// CHECK:           gpu.barrier
// CHECK-NEXT:    }

// CHECK-LABEL: func.func @rows
// CHECK:         tgpu.launch @k0_sum_rows grid(%{{.*}}) block(256, 1, 1)
// CHECK-LABEL: func.func @full
// CHECK:         %[[OUT:.*]] = loops.alloc : memref<f32>
// CHECK-NEXT:    %[[PART:.*]] = loops.alloc : memref<1x16xf32>
// CHECK:         tgpu.launch @k2_max_all {{.*}} args(%{{.*}}, %[[PART]] : memref<32768xf32>, memref<1x16xf32>)
// CHECK:         tgpu.launch @k3_max_all_final {{.*}} args(%[[PART]], %[[OUT]] : memref<1x16xf32>, memref<f32>)
// CHECK-LABEL: func.func @wide
// CHECK:         tgpu.launch @k4_sum_rows grid(%{{.*}}) block(128, 1, 1)
// CHECK-LABEL: func.func @softmax
// CHECK:         loops.alloc : memref<8x16xf32>
// CHECK-NEXT:    arith.constant 8 : index
// CHECK:         tgpu.launch @k5_rows_max_map_sum
// CHECK-NOT:     tgpu.launch
// CHECK:         func.return

// Softmax's four kernels over the same rows, each reading what the one before
// wrote at its own row: one row kernel (one block per row in turn, a barrier
// between stages; the max and the sum share one arena place, as planned).
func.func @softmax(%x: memref<8x16xf32>, %arena: memref<64xi8>) -> memref<8x16xf32> {
  %0 = loops.view %arena {offset = 0 : i64} : memref<64xi8> -> memref<8x1xf32>
  %1 = loops.view %arena {offset = 0 : i64} : memref<64xi8> -> memref<8x1xf32>
  loops.parallel ins(%x : memref<8x16xf32>) outs(%0 : memref<8x1xf32>) attributes {shape = array<i64: 8, 16>, broadcast = [array<i64: 0, 1>], reduce = ["max"], reduce_axes = array<i64: 1>} {
  ^bb0(%2: f32):
    loops.yield %2 : f32
  }
  %3 = loops.alloc : memref<8x16xf32>
  loops.parallel ins(%x, %0 : memref<8x16xf32>, memref<8x1xf32>) outs(%3 : memref<8x16xf32>) attributes {shape = array<i64: 8, 16>, broadcast = [array<i64: 0, 1>, array<i64: 0, -1>]} {
  ^bb0(%4: f32, %5: f32):
    %6 = arith.subf %4, %5 : f32
    %7 = math.exp %6 : f32
    loops.yield %7 : f32
  }
  loops.parallel ins(%3 : memref<8x16xf32>) outs(%1 : memref<8x1xf32>) attributes {shape = array<i64: 8, 16>, broadcast = [array<i64: 0, 1>], reduce = ["sum"], reduce_axes = array<i64: 1>} {
  ^bb0(%8: f32):
    loops.yield %8 : f32
  }
  loops.parallel ins(%3, %1 : memref<8x16xf32>, memref<8x1xf32>) outs(%3 : memref<8x16xf32>) attributes {shape = array<i64: 8, 16>, broadcast = [array<i64: 0, 1>, array<i64: 0, -1>]} {
  ^bb0(%9: f32, %10: f32):
    %11 = arith.divf %9, %10 : f32
    loops.yield %11 : f32
  }
  func.return %3 : memref<8x16xf32>
}
