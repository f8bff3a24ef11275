// tfc-schedule-collectives moves each collective up to just after the last
// definition of its operands, never above the collective before it (the
// order every rank makes them in), and never out of its block.
// RUN: %tfc-opt %s -p tfc-schedule-collectives | filecheck %s

func.func @f(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = tfc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = tfc.sin %y : (tensor<4xf32>) -> tensor<4xf32>
  %c = tfc.cos %b : (tensor<4xf32>) -> tensor<4xf32>
  %d = tfc.tanh %c : (tensor<4xf32>) -> tensor<4xf32>
  %r1 = tfc.all_reduce %a {reduction = "mean", ranks = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %r2 = tfc.broadcast %x {root = 0 : i64, ranks = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %r3 = tfc.all_reduce %c {reduction = "sum", ranks = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %e = tfc.add %r1, %d : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %f = tfc.add %e, %r2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %g = tfc.add %f, %r3 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %g : tensor<4xf32>
}

// %r1 right after %a; %r2 (an argument's) may not pass %r1; %r3 after %c.
// CHECK-LABEL: func.func @f
// CHECK-NEXT:    %a = tfc.exp %x
// CHECK-NEXT:    %r1 = tfc.all_reduce %a
// CHECK-NEXT:    %r2 = tfc.broadcast %x
// CHECK-NEXT:    %b = tfc.sin %y
// CHECK-NEXT:    %c = tfc.cos %b
// CHECK-NEXT:    %r3 = tfc.all_reduce %c
// CHECK-NEXT:    %d = tfc.tanh %c
// CHECK-NEXT:    %e = tfc.add %r1, %d

func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = tfc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %r = tfc.all_gather %x {ranks = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %s = tfc.add %a, %r : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// An argument's collective goes first.
// CHECK-LABEL: func.func @first
// CHECK-NEXT:    %r = tfc.all_gather %x
// CHECK-NEXT:    %a = tfc.exp %x

// A branch that makes a collective keeps the later collectives after it
// (%r5 reads only %x, yet stays below the tfc.cond holding %r4).
func.func @g(%x: tensor<4xf32>, %p: tensor<i1>) -> tensor<4xf32> {
  %a = tfc.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  %c = tfc.cond %p : (tensor<i1>) -> tensor<4xf32> {
    %r4 = tfc.all_reduce %a {reduction = "sum", ranks = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    tfc.yield %r4 : tensor<4xf32>
  } else {
    tfc.yield %a : tensor<4xf32>
  }
  %b = tfc.sin %c : (tensor<4xf32>) -> tensor<4xf32>
  %r5 = tfc.all_reduce %x {reduction = "sum", ranks = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %e = tfc.add %b, %r5 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}

// CHECK-LABEL: func.func @g
// CHECK:         %r4 = tfc.all_reduce %a
// CHECK:         tfc.yield %r4
// CHECK:         tfc.yield %a
// CHECK-NEXT:    }
// CHECK-NEXT:    %r5 = tfc.all_reduce %x
// CHECK-NEXT:    %b = tfc.sin %c
