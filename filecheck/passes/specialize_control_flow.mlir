// RUN: %tfc-opt %s -p 'tfc-specialize{shapes="3,3"}' | filecheck %s

// tfc.while: loop variables start with the inits' types; %s keeps its shape,
// %t grows each iteration, so it is widened to ? (and the regions' arguments
// with it) at the fixed point. tfc.cond: a result is static where both
// branches agree.
// CHECK-LABEL: func.func @loops(%x: tensor<3xf32>, %y: tensor<3xf32>) -> (tensor<3xf32>, tensor<?xf32>, tensor<?xf32>, tensor<3xf32>)
// CHECK:         tfc.while %{{.*}}, %x, %x : (tensor<i32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>, tensor<?xf32>) cond {
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: tensor<i32>, %{{.*}}: tensor<3xf32>, %{{.*}}: tensor<?xf32>):
// CHECK:         } do {
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: tensor<i32>, %{{.*}}: tensor<3xf32>, %{{.*}}: tensor<?xf32>):
// CHECK-NEXT:      tfc.add %{{.*}}, %y : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT:      tfc.concat %{{.*}}, %y {axis = 0 : i64} : (tensor<?xf32>, tensor<3xf32>) -> tensor<?xf32>
// CHECK:         tfc.cond %{{.*}} : (tensor<i1>) -> (tensor<?xf32>, tensor<3xf32>) {
// CHECK-NEXT:      tfc.concat %x, %x {axis = 0 : i64} : (tensor<3xf32>, tensor<3xf32>) -> tensor<6xf32>
func.func @loops(%x: tensor<?xf32>, %y: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %0 = tfc.constant dense<0> : tensor<i32>
  %1 = tfc.constant dense<3> : tensor<i32>
  %2 = tfc.constant dense<1> : tensor<i32>
  %3 = tfc.constant dense<0.000000e+00> : tensor<f32>
  %4 = tfc.constant dense<2.000000e+00> : tensor<f32>
  %5, %6, %7 = tfc.while %0, %x, %x : (tensor<i32>, tensor<?xf32>, tensor<?xf32>) -> (tensor<i32>, tensor<?xf32>, tensor<?xf32>) cond {
  ^bb0(%8: tensor<i32>, %9: tensor<?xf32>, %10: tensor<?xf32>):
    %11 = tfc.less %8, %1 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    tfc.condition %11 : tensor<i1>
  } do {
  ^bb0(%12: tensor<i32>, %13: tensor<?xf32>, %14: tensor<?xf32>):
    %15 = tfc.add %13, %y : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
    %16 = tfc.concat %14, %y {axis = 0 : i64} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
    %17 = tfc.add %12, %2 : (tensor<i32>, tensor<i32>) -> tensor<i32>
    tfc.yield %17, %15, %16 : tensor<i32>, tensor<?xf32>, tensor<?xf32>
  }
  %18 = tfc.reduce_sum %x {keepdims = false} : (tensor<?xf32>) -> tensor<f32>
  %19 = tfc.greater %18, %3 : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %20, %21 = tfc.cond %19 : (tensor<i1>) -> (tensor<?xf32>, tensor<?xf32>) {
    %22 = tfc.concat %x, %x {axis = 0 : i64} : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
    tfc.yield %22, %x : tensor<?xf32>, tensor<?xf32>
  } else {
    %23 = tfc.multiply %x, %4 : (tensor<?xf32>, tensor<f32>) -> tensor<?xf32>
    tfc.yield %23, %23 : tensor<?xf32>, tensor<?xf32>
  }
  func.return %6, %7, %20, %21 : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
}
