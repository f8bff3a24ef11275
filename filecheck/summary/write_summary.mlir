// tfc.write_summary (tfc.summary's scalar, histogram, image, text) is stateful:
// folding, CSE and DCE keep every summary, two identical ones included (each
// writes a record when the code runs), though nothing reads their results; at
// L3 each is a loops.library call of its registry kernel, the host call that
// writes the record with the writer that is default when it runs
// (docs/summary.md). Strings stay escaped attributes.
// RUN: %tfc-opt %s -p tfc-fold,tfc-cse,tfc-dce | filecheck %s --check-prefix=L1
// RUN: %tfc-opt %s -p tfc-fold,tfc-cse,tfc-fuse,tfc-dce,tfc-lower-loops | filecheck %s --check-prefix=L3

func.func @f(%x: tensor<4xf32>, %step: tensor<i64>) -> tensor<4xf32> {
  %c = tfc.constant dense<2.000000e+00> : tensor<f32>
  %s = tfc.reduce_sum %x {keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %0 = tfc.write_summary %step, %s {kind = "scalar", tag = "loss", text = "", buckets = 30 : i64, max_outputs = 3 : i64, description = ""} : (tensor<i64>, tensor<f32>) -> tensor<i1>
  %1 = tfc.write_summary %step, %s {kind = "scalar", tag = "loss", text = "", buckets = 30 : i64, max_outputs = 3 : i64, description = ""} : (tensor<i64>, tensor<f32>) -> tensor<i1>
  %2 = tfc.write_summary %step, %x {kind = "histogram", tag = "x", text = "", buckets = 30 : i64, max_outputs = 3 : i64, description = ""} : (tensor<i64>, tensor<4xf32>) -> tensor<i1>
  %3 = tfc.write_summary %step {kind = "text", tag = "note", text = "say \22hi\22", buckets = 30 : i64, max_outputs = 3 : i64, description = ""} : (tensor<i64>) -> tensor<i1>
  %4 = tfc.multiply %x, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %4 : tensor<4xf32>
}
// L1-LABEL: func.func @f
// L1:         %[[S:.*]] = tfc.reduce_sum %x
// L1-NEXT:    tfc.write_summary %step, %[[S]] {kind = "scalar", tag = "loss"
// L1-NEXT:    tfc.write_summary %step, %[[S]] {kind = "scalar", tag = "loss"
// L1-NEXT:    tfc.write_summary %step, %x {kind = "histogram", tag = "x"
// L1-NEXT:    tfc.write_summary %step {kind = "text", tag = "note", text = "say \22hi\22"
// L1-NEXT:    tfc.multiply

// L3-LABEL: func.func @f
// L3-SAME:    (%x: memref<4xf32>, %step: i64
// L3:         %[[V:.*]] = loops.load
// L3-NEXT:    loops.library "write_summary"(%step, %[[V]] : i64, f32) {attrs = {kind = "scalar", tag = "loss"
// L3-SAME:    -> (i1)
// L3-NEXT:    loops.library "write_summary"(%step, %[[V]] : i64, f32) {attrs = {kind = "scalar", tag = "loss"
// L3-NEXT:    loops.library "write_summary"(%step, %x : i64, memref<4xf32>) {attrs = {kind = "histogram"
// L3-NEXT:    loops.library "write_summary"(%step : i64) {attrs = {kind = "text", tag = "note", text = "say \22hi\22"
// L3:         func.return
