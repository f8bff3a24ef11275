// RUN: %tfc-opt %s -p tfc-expand | filecheck %s --check-prefix=EXPAND
// RUN: %tfc-opt %s -p tfc-expand,tfc-cse,tfc-fuse,tfc-dce | filecheck %s --check-prefix=FUSED
// RUN: %tfc-opt %s -p tfc-expand,tfc-cse,tfc-fuse,tfc-dce,tfc-lower-loops | filecheck %s --check-prefix=LOOPS
// RUN: %tfc-opt %s -p tfc-expand,tfc-cse,tfc-fuse,tfc-dce,tfc-lower-loops | filecheck %s --check-prefix=NOLIB
// NOLIB-NOT: loops.library
// The ops of tfc/ops/sorting.py, reductions.py (cumsum) and nn.py (normalize,
// gelu) in L3: sort's data movement is a kernel of indexed loads, cumsum a scan
// of slices, pads and adds, layer normalization reductions and elementwise
// kernels into which gelu's scalar body fuses; no library call.

func.func @permute(%x: tensor<2x3xf32>, %p: tensor<2x3xi32>) -> tensor<2x3xf32> {
  %0 = tfc.permute_along_axis %x, %p {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// out[i, j] = x[i, p[i, j]]
// LOOPS-LABEL: func.func @permute
// LOOPS:         %[[O:.*]] = loops.alloc : memref<2x3xf32>
// LOOPS-NEXT:    loops.parallel ins(%p : memref<2x3xi32>) outs(%[[O]] : memref<2x3xf32>) attributes {shape = array<i64: 2, 3>, broadcast = [array<i64: 0, 1>]}
// LOOPS-NEXT:    ^{{.*}}(%[[P:.*]]: i32):
// LOOPS-NEXT:      %[[I:.*]] = loops.index 0 : index
// LOOPS-NEXT:      %{{.*}} = loops.index 1 : index
// LOOPS-NEXT:      %[[J:.*]] = arith.index_cast %[[P]] : i32 to index
// LOOPS-NEXT:      %[[V:.*]] = loops.load_at %x[%[[I]], %[[J]]] : memref<2x3xf32> -> f32
// LOOPS-NEXT:      loops.yield %[[V]] : f32

func.func @cumsum(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = tfc.cumsum %x {axis = 1 : i64, exclusive = true, reverse = false} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}
// exclusive: shifted by one (0 in front); then steps of 1, 2 and 4 (-0.0 shifted in: x + -0.0 is x)
// EXPAND-LABEL: func.func @cumsum
// EXPAND-NEXT:    %[[A:.*]] = tfc.getitem %x {index = ["::", "0:4:"]}
// EXPAND-NEXT:    %[[S:.*]] = tfc.pad %[[A]] {paddings = array<i64: 0, 0, 1, 0>, mode = "CONSTANT", constant_values = 0.000000e+00 : f64}
// EXPAND-NEXT:    %[[B:.*]] = tfc.getitem %[[S]] {index = ["::", "0:4:"]}
// EXPAND-NEXT:    %[[C:.*]] = tfc.pad %[[B]] {paddings = array<i64: 0, 0, 1, 0>, mode = "CONSTANT", constant_values = -0.000000e+00 : f64}
// EXPAND-NEXT:    %[[Y1:.*]] = tfc.add %[[S]], %[[C]]
// EXPAND-NEXT:    %[[D:.*]] = tfc.getitem %[[Y1]] {index = ["::", "0:3:"]}
// EXPAND-NEXT:    %[[E:.*]] = tfc.pad %[[D]] {paddings = array<i64: 0, 0, 2, 0>, {{.*}}constant_values = -0.000000e+00 : f64}
// EXPAND-NEXT:    %[[Y2:.*]] = tfc.add %[[Y1]], %[[E]]
// EXPAND-NEXT:    %[[F:.*]] = tfc.getitem %[[Y2]] {index = ["::", "0:1:"]}
// EXPAND-NEXT:    %[[G:.*]] = tfc.pad %[[F]] {paddings = array<i64: 0, 0, 4, 0>, {{.*}}constant_values = -0.000000e+00 : f64}
// EXPAND-NEXT:    %[[Y3:.*]] = tfc.add %[[Y2]], %[[G]]
// EXPAND-NEXT:    func.return %[[Y3]]
// LOOPS-LABEL: func.func @cumsum
// LOOPS:         loops.subview %x [0, 0] [2, 4] [1, 1]
// LOOPS:         arith.addf
// LOOPS:         arith.addf
// LOOPS:         arith.addf
// LOOPS:         func.return

func.func @layer_norm_gelu(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = tfc.normalize %x {axes = array<i64: -1>, epsilon = 5.000000e-01 : f64} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = tfc.gelu %0 {approximate = true} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %1 : tensor<2x4xf32>
}
// (x - mean) * rsqrt(mean((x - mean)^2) + epsilon), then gelu
// EXPAND-LABEL: func.func @layer_norm_gelu
// EXPAND-NEXT:    %[[M:.*]] = tfc.reduce_mean %x {axis = array<i64: -1>, keepdims = true}
// EXPAND-NEXT:    %[[D:.*]] = tfc.subtract %x, %[[M]]
// EXPAND-NEXT:    %[[Q:.*]] = tfc.square %[[D]]
// EXPAND-NEXT:    %[[V:.*]] = tfc.reduce_mean %[[Q]] {axis = array<i64: -1>, keepdims = true}
// EXPAND-NEXT:    %[[E:.*]] = tfc.constant dense<5.000000e-01> : tensor<f32>
// EXPAND-NEXT:    %[[VE:.*]] = tfc.add %[[V]], %[[E]]
// EXPAND-NEXT:    %[[R:.*]] = tfc.rsqrt %[[VE]]
// EXPAND-NEXT:    %[[Y:.*]] = tfc.multiply %[[D]], %[[R]]
// EXPAND-NEXT:    tfc.gelu %[[Y]] {approximate = true}
// Four kernels: the mean, the variance (the difference recomputed in its body),
// the rsqrt of the [2, 1] variance, and one elementwise kernel for the
// normalization and gelu (its tanh in the same body)
// FUSED-LABEL: func.func @layer_norm_gelu
// FUSED:         %[[M:.*]] = tfc.fused(%x) {{.*}}reduce = ["mean"]
// FUSED:         %[[V:.*]] = tfc.fused(%x, %[[M]]) {{.*}}reduce = ["mean"]
// FUSED:         %[[R:.*]] = tfc.fused(%[[V]]) {shape = array<i64: 2, 1>
// FUSED:         tfc.fused(%x, %[[M]], %[[R]]) {shape = array<i64: 2, 4>
// FUSED:           math.tanh
// FUSED:         func.return
// FUSED-NOT:     tfc.gelu
