// RUN: %tfc-opt %s -p tfc-simplify,tfc-dce | filecheck %s

// CHECK-LABEL: func.func @identities
// CHECK-NEXT:    func.return %x
func.func @identities(%x: tensor<3xf32>) -> tensor<3xf32> {
  %one = tfc.constant dense<1.0> : tensor<f32>
  %zero = tfc.constant dense<0.0> : tensor<3xf32>
  %negzero = tfc.constant dense<-0.0> : tensor<3xf32>
  %a = tfc.multiply %one, %x : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  %b = tfc.add %a, %negzero : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %c = tfc.subtract %b, %zero : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %c : tensor<3xf32>
}

// A float x + 0.0 is +0.0 where x is -0.0, and x - (-0.0) likewise: both stay.
// Integer zeros have no sign.
// CHECK-LABEL: func.func @signed_zeros
// CHECK:         tfc.add %x, %zero
// CHECK:         tfc.subtract %x, %negzero
// CHECK:         func.return %{{.*}}, %{{.*}}, %i
func.func @signed_zeros(%x: tensor<3xf32>, %i: tensor<3xi32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xi32>) {
  %zero = tfc.constant dense<0.0> : tensor<3xf32>
  %negzero = tfc.constant dense<-0.0> : tensor<3xf32>
  %izero = tfc.constant dense<0> : tensor<3xi32>
  %a = tfc.add %x, %zero : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %b = tfc.subtract %x, %negzero : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %c = tfc.add %izero, %i : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  func.return %a, %b, %c : tensor<3xf32>, tensor<3xf32>, tensor<3xi32>
}

// x * 1 that broadcasts keeps its op: the result type differs from x.
// CHECK-LABEL: func.func @broadcast
// CHECK:         tfc.multiply
func.func @broadcast(%x: tensor<f32>) -> tensor<3xf32> {
  %one = tfc.constant dense<1.0> : tensor<3xf32>
  %a = tfc.multiply %x, %one : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %a : tensor<3xf32>
}

// CHECK-LABEL: func.func @int_sub_self
// CHECK-NEXT:    %[[Z:.*]] = tfc.constant dense<0> : tensor<2xi32>
// CHECK-NEXT:    func.return %[[Z]]
func.func @int_sub_self(%x: tensor<2xi32>) -> tensor<2xi32> {
  %a = tfc.subtract %x, %x : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  func.return %a : tensor<2xi32>
}

// Floats keep x - x (NaN and inf give NaN, not 0).
// CHECK-LABEL: func.func @float_sub_self
// CHECK:         tfc.subtract
func.func @float_sub_self(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = tfc.subtract %x, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %a : tensor<2xf32>
}

// x**3 stays a pow: x*x*x rounds differently from np.power (compiled must equal eager)
// CHECK-LABEL: func.func @powers
// CHECK:         %[[C:.*]] = tfc.pow %x, %three
// CHECK-NEXT:    %[[S2:.*]] = tfc.multiply %x, %x
// CHECK-NEXT:    func.return %[[C]], %[[S2]]
func.func @powers(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %three = tfc.constant dense<3.0> : tensor<f32>
  %two = tfc.constant dense<2.0> : tensor<f32>
  %c = tfc.pow %x, %three : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %s = tfc.pow %x, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %c, %s : tensor<4xf32>, tensor<4xf32>
}

// integer_pow(x, 2) is x*x by definition; other exponents stay integer_pow (the
// fused kernel multiplies in the same order as the eager kernel)
// CHECK-LABEL: func.func @integer_powers
// CHECK-NEXT:    %[[S:.*]] = tfc.multiply %x, %x
// CHECK-NEXT:    %[[C:.*]] = tfc.integer_pow %x {n = 3 : i64}
// CHECK-NEXT:    func.return %[[S]], %[[C]]
func.func @integer_powers(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = tfc.integer_pow %x {n = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %c = tfc.integer_pow %x {n = 3 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %s, %c : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @transposes
// CHECK-NEXT:    %[[T:.*]] = tfc.transpose %x {perm = array<i64: 2, 0, 1>}
// CHECK-NEXT:    func.return %x, %[[T]]
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<4x2x3xf32>) {
  %a = tfc.transpose %x : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %b = tfc.transpose %a : (tensor<4x3x2xf32>) -> tensor<2x3x4xf32>
  %c = tfc.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %d = tfc.transpose %c {perm = array<i64: 2, 0, 1>} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  %e = tfc.transpose %c {perm = array<i64: 1, 2, 0>} : (tensor<3x4x2xf32>) -> tensor<4x2x3xf32>
  func.return %b, %e : tensor<2x3x4xf32>, tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @reshapes
// CHECK-NEXT:    %[[R:.*]] = tfc.reshape %x {shape = array<i64: 3, 2>}
// CHECK-NEXT:    func.return %[[R]], %x
func.func @reshapes(%x: tensor<6xf32>) -> (tensor<3x2xf32>, tensor<6xf32>) {
  %a = tfc.reshape %x {shape = array<i64: 2, 3>} : (tensor<6xf32>) -> tensor<2x3xf32>
  %b = tfc.reshape %a {shape = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %c = tfc.reshape %a {shape = array<i64: -1>} : (tensor<2x3xf32>) -> tensor<6xf32>
  func.return %b, %c : tensor<3x2xf32>, tensor<6xf32>
}

// A reshape moves above an elementwise op used only by it (operands of its
// shape, or 0-d), so that fusion sees one shape; reshapes then combine, and a
// reshape to the same type goes.
// CHECK-LABEL: func.func @reshape_sinks
// CHECK-NEXT:    %two = tfc.constant
// CHECK-NEXT:    %[[R:.*]] = tfc.reshape %x {shape = array<i64: 4, 6>}
// CHECK-NEXT:    %[[M:.*]] = tfc.multiply %[[R]], %two
// CHECK-NEXT:    %[[T:.*]] = tfc.tanh %[[M]]
// CHECK-NEXT:    %[[K:.*]] = tfc.reshape %y {shape = array<i64: 24>}
// CHECK-NEXT:    %[[A:.*]] = tfc.add %[[K]], %[[K]]
// CHECK-NEXT:    func.return %[[T]], %x, %[[A]], %[[K]]
func.func @reshape_sinks(%x: tensor<2x12xf32>, %y: tensor<2x12xf32>) -> (tensor<4x6xf32>, tensor<2x12xf32>, tensor<24xf32>, tensor<24xf32>) {
  %two = tfc.constant dense<2.0> : tensor<f32>
  %m = tfc.multiply %x, %two : (tensor<2x12xf32>, tensor<f32>) -> tensor<2x12xf32>
  %r = tfc.reshape %m {shape = array<i64: -1>} : (tensor<2x12xf32>) -> tensor<24xf32>
  %t = tfc.tanh %r : (tensor<24xf32>) -> tensor<24xf32>
  %u = tfc.reshape %t {shape = array<i64: 4, 6>} : (tensor<24xf32>) -> tensor<4x6xf32>
  %same = tfc.reshape %x {shape = array<i64: 2, 12>} : (tensor<2x12xf32>) -> tensor<2x12xf32>
  %k = tfc.reshape %y {shape = array<i64: 24>} : (tensor<2x12xf32>) -> tensor<24xf32>
  %a = tfc.add %k, %k : (tensor<24xf32>, tensor<24xf32>) -> tensor<24xf32>
  func.return %u, %same, %a, %k : tensor<4x6xf32>, tensor<2x12xf32>, tensor<24xf32>, tensor<24xf32>
}

// A matmul of a transpose that swaps the last two axes takes the operand and
// the transpose flag (eager hands BLAS that view: the same transposed product);
// a transpose moving other axes stays.
// CHECK-LABEL: func.func @matmul_of_transpose
// CHECK-NEXT:    %[[P:.*]] = tfc.matmul %a, %b {transpose_a = true, transpose_b = false}
// CHECK-NEXT:    %[[Q:.*]] = tfc.matmul %c, %b {transpose_a = false, transpose_b = false}
// CHECK-NEXT:    %[[T:.*]] = tfc.transpose %d {perm = array<i64: 1, 0, 2>}
// CHECK-NEXT:    %[[R:.*]] = tfc.matmul %[[T]], %e
// CHECK-NEXT:    func.return %[[P]], %[[Q]], %[[R]]
func.func @matmul_of_transpose(%a: tensor<3x4xf32>, %b: tensor<3x5xf32>, %c: tensor<2x3xf32>, %d: tensor<2x4x3xf32>, %e: tensor<4x3x5xf32>) -> (tensor<4x5xf32>, tensor<2x5xf32>, tensor<4x2x5xf32>) {
  %0 = tfc.transpose %a : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %1 = tfc.matmul %0, %b {transpose_a = false, transpose_b = false} : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %2 = tfc.transpose %b {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
  %3 = tfc.matmul %c, %2 {transpose_a = false, transpose_b = true} : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<2x5xf32>
  %4 = tfc.transpose %d {perm = array<i64: 1, 0, 2>} : (tensor<2x4x3xf32>) -> tensor<4x2x3xf32>
  %5 = tfc.matmul %4, %e {transpose_a = false, transpose_b = false} : (tensor<4x2x3xf32>, tensor<4x3x5xf32>) -> tensor<4x2x5xf32>
  func.return %1, %3, %5 : tensor<4x5xf32>, tensor<2x5xf32>, tensor<4x2x5xf32>
}
