// RUN: %tfc-opt %s | %tfc-opt | filecheck %s
// RUN: %tfc-opt %s --print-op-generic | %tfc-opt | filecheck %s

// CHECK-LABEL: func.func @f
// CHECK:         %[[S:.*]] = tfc.reduce_sum %a {axis = array<i64: 0>, keepdims = false} : (tensor<?x3xf32>) -> tensor<3xf32>
// CHECK:         tfc.cond %{{.*}} : (tensor<i1>) -> tensor<3xf32> {
// CHECK:         } else {
// CHECK:         tfc.while %[[S]] {max_iterations = 4 : i64} : (tensor<3xf32>) -> tensor<3xf32> cond {
// CHECK:           tfc.condition
// CHECK:         } do {
// CHECK:         tfc.getitem %a {index = [0 : i64, "1::2"]}
func.func @f(%a: tensor<?x3xf32>, %v: !tfc.ref<tensor<3xf32>>) -> tensor<3xf32> {
  %s = tfc.reduce_sum %a {axis = array<i64: 0>, keepdims = false} : (tensor<?x3xf32>) -> tensor<3xf32>
  %r = tfc.read_variable %v : !tfc.ref<tensor<3xf32>> -> tensor<3xf32>
  %p0 = tfc.greater %s, %r : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %p = tfc.reduce_any %p0 {keepdims = false} : (tensor<3xi1>) -> tensor<i1>
  %c = tfc.cond %p : (tensor<i1>) -> tensor<3xf32> {
    tfc.yield %s : tensor<3xf32>
  } else {
    tfc.yield %r : tensor<3xf32>
  }
  %w = tfc.while %s {max_iterations = 4 : i64} : (tensor<3xf32>) -> tensor<3xf32> cond {
  ^bb0(%x: tensor<3xf32>):
    %b = tfc.less %x, %c : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %q = tfc.reduce_all %b {keepdims = false} : (tensor<3xi1>) -> tensor<i1>
    tfc.condition %q : tensor<i1>
  } do {
  ^bb0(%x: tensor<3xf32>):
    %d = tfc.add %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    tfc.yield %d : tensor<3xf32>
  }
  %g = tfc.getitem %a {index = [0 : i64, "1::2"]} : (tensor<?x3xf32>) -> tensor<1xf32>
  tfc.assign_variable %v, %w : !tfc.ref<tensor<3xf32>>, tensor<3xf32>
  func.return %w : tensor<3xf32>
}
