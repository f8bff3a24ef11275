// RUN: %tfc-opt %s -p tfc-lower-gpu | filecheck %s

// A copy of a transposed view: 32x32 tiles through shared memory (rows padded
// to 33), read along the source's unit stride, written along the
// destination's; the bounds checks inside branches, the barriers outside.
func.func @t(%x: memref<70x45xf32>, %arena: memref<0xi8>) -> memref<45x70xf32> {
  %t = loops.transpose_view %x {permutation = array<i64: 1, 0>} : memref<70x45xf32> -> memref<45x70xf32, strided<[1, 45]>>
  %0 = loops.alloc : memref<45x70xf32>
  loops.parallel ins(%t : memref<45x70xf32, strided<[1, 45]>>) outs(%0 : memref<45x70xf32>) attributes {shape = array<i64: 45, 70>, broadcast = [array<i64: 0, 1>]} {
  ^bb0(%a: f32):
    loops.yield %a : f32
  }
  func.return %0 : memref<45x70xf32>
}

// CHECK:       gpu.func @k0_transpose({{.*}}) kernel attributes {{[{]}}gpu.known_block_size = array<i32: 32, 8, 1>, tgpu.kind = "copy"
// CHECK:         %[[TILE:.*]] = tgpu.shared {size = 1056} : !tgpu.ptr<f32, shared>
// CHECK:         scf.for
// CHECK-COUNT-4:   scf.if
// CHECK:           gpu.barrier
// CHECK:           scf.if
// CHECK:             tgpu.load %[[TILE]]
// CHECK:           gpu.barrier
// CHECK-NEXT:    }
// CHECK-LABEL: func.func @t
// CHECK:         tgpu.launch @k0_transpose grid(%{{.*}}, %{{.*}}, %{{.*}}) block(32, 8, 1) shared(0) args(%t, %0 : memref<45x70xf32, strided<[1, 45]>>, memref<45x70xf32>)
