// RUN: %tfc opt --help | filecheck %s
// RUN: %tfc --version | filecheck %s --check-prefix=VERSION
// CHECK: usage: tfc opt
// CHECK: tfc passes:
// CHECK-NEXT: tfc-fold {{.+}}
// CHECK-NOT: canonicalize
// VERSION: tfc {{[0-9]+\.[0-9]+}}
