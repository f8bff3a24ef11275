// Collective ops (tfc.distribute, docs/distributed.md) are stateful: CSE never
// merges two all-reduces of one value (each is a transfer every rank makes),
// DCE keeps an unused one (the other ranks wait for it), folding leaves them;
// they lower to loops.library calls of their registry kernels, which the
// numpy backend's module calls on the host (MPI underneath). Each records the
// world size it was made for.
// RUN: %tfc-opt %s -p tfc-fold,tfc-cse,tfc-dce | filecheck %s --check-prefix=L1
// RUN: %tfc-opt %s -p tfc-fold,tfc-cse,tfc-fuse,tfc-dce,tfc-lower-loops | filecheck %s --check-prefix=L3

func.func @f(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %c = tfc.constant dense<2.000000e+00> : tensor<4x3xf32>
  %0 = tfc.all_reduce %x {reduction = "sum", ranks = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = tfc.all_reduce %x {reduction = "sum", ranks = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %2 = tfc.all_reduce %c {reduction = "mean", ranks = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %unused = tfc.all_gather %x {ranks = 2 : i64} : (tensor<4x3xf32>) -> tensor<8x3xf32>
  %3 = tfc.broadcast %x {root = 1 : i64, ranks = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %4 = tfc.add %0, %1 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %5 = tfc.add %4, %2 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %6 = tfc.add %5, %3 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %6 : tensor<4x3xf32>
}

// L1-LABEL: func.func @f
// L1:         tfc.all_reduce %x {reduction = "sum", ranks = 2 : i64}
// L1:         tfc.all_reduce %x {reduction = "sum", ranks = 2 : i64}
// L1:         tfc.all_reduce {{%.*}} {reduction = "mean", ranks = 2 : i64}
// L1:         tfc.all_gather %x {ranks = 2 : i64} : (tensor<4x3xf32>) -> tensor<8x3xf32>
// L1:         tfc.broadcast %x {root = 1 : i64, ranks = 2 : i64}

// L3-LABEL: func.func @f
// L3:         loops.library "all_reduce"(%x{{.*}}reduction = "sum"
// L3:         loops.library "all_reduce"(%x{{.*}}reduction = "sum"
// L3:         loops.library "all_reduce"{{.*}}reduction = "mean"
// L3:         loops.library "all_gather"(%x
// L3:         loops.library "broadcast"(%x{{.*}}root = 1
// L3-NOT:     loops.library
// L3:         loops.parallel
