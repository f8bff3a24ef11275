// Random ops are stateful: folding, CSE and DCE keep every draw (an unused
// unseeded draw still advances the global stream, eager and compiled alike),
// and they lower to loops.library calls of their registry kernels (docs/random.md).
// A seed of 2^63 or more is held as its i64 two's complement and survives as is.
// RUN: %tfc-opt %s -p tfc-fold,tfc-cse,tfc-dce | filecheck %s --check-prefix=L1
// RUN: %tfc-opt %s -p tfc-fold,tfc-cse,tfc-fuse,tfc-dce,tfc-lower-loops | filecheck %s --check-prefix=L3

func.func @f(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = tfc.uniform {shape = array<i64: 4, 3>, dtype = f32, minval = 0.000000e+00 : f64, seed = -9223372036854775803 : i64} : () -> tensor<4x3xf32>
  %1 = tfc.normal {shape = array<i64: 4, 3>, dtype = f32, mean = 0.000000e+00 : f64, stddev = 1.000000e+00 : f64} : () -> tensor<4x3xf32>
  %2 = tfc.normal {shape = array<i64: 4, 3>, dtype = f32, mean = 0.000000e+00 : f64, stddev = 1.000000e+00 : f64} : () -> tensor<4x3xf32>
  %unused = tfc.uniform {shape = array<i64: 8>, dtype = i64, minval = -9.2233720368547758E+18 : f64, maxval = 9.2233720368547758E+18 : f64} : () -> tensor<8xi64>
  %3 = tfc.add %0, %1 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %4 = tfc.add %3, %2 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %5 = tfc.dropout_mask %x {rate = 5.000000e-01 : f64, seed = 3 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %6 = tfc.multiply %5, %x : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %7 = tfc.add %4, %6 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %7 : tensor<4x3xf32>
}

// L1-LABEL: func.func @f
// L1:         tfc.uniform {{.*}}seed = -9223372036854775803 : i64
// L1:         tfc.normal
// L1:         tfc.normal
// L1:         tfc.uniform {{.*}}dtype = i64
// L1:         tfc.dropout_mask %x {{.*}}seed = 3 : i64

// L3-LABEL: func.func @f
// L3:         loops.library "uniform"{{.*}}seed = -9223372036854775803 : i64
// L3:         loops.library "normal"
// L3:         loops.library "normal"
// L3:         loops.library "uniform"{{.*}}dtype = i64
// L3:         loops.library "dropout_mask"(%x{{.*}}seed = 3 : i64
// L3-NOT:     loops.library
// L3:         loops.parallel
