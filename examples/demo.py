"""`make demo`: tfc's eager mode at a glance (compiled results join as the compiler lands)."""
import numpy as np

import tfc

print("== eager tensors")
x = [[2.0]]
print("matmul([[2.]], [[2.]]) =", tfc.matmul(x, x))
v = tfc.constant([1.0, 2.0, 3.0])
print("v * 2 + 1 =", v * 2 + 1, "  np.square(v) =", np.square(v))

print("\n== gradients")


def square(x):
    return x**2


grad = tfc.gradients_function(square)
gradgrad = tfc.gradients_function(lambda x: grad(x)[0])
print("square(3.) =", square(3.0), " d/dx =", grad(3.0)[0], " d2/dx2 =", gradgrad(3.0)[0])

w = tfc.Variable(2.0)
loss = lambda y: (y - w**2) ** 2  # noqa: E731
print("implicit gradient of (7 - w**2)**2 at w=2:", tfc.implicit_gradients(loss)(7.0)[0][0])
