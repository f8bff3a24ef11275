// RUN: %tfc-opt %s -p tfc-dce | filecheck %s

// CHECK-LABEL: func.func @f
// CHECK-NOT:     tfc.exp
// CHECK:         tfc.assign_variable
// CHECK:         tfc.print
// CHECK-NEXT:    func.return %x
func.func @f(%x: tensor<f32>, %v: !tfc.ref<tensor<f32>>) -> tensor<f32> {
  %dead = tfc.exp %x : (tensor<f32>) -> tensor<f32>
  %r = tfc.read_variable %v : !tfc.ref<tensor<f32>> -> tensor<f32>
  tfc.assign_variable %v, %x : !tfc.ref<tensor<f32>>, tensor<f32>
  tfc.print %x {format = "{}\n"} : tensor<f32>
  func.return %x : tensor<f32>
}
