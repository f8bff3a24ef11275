"""`make demo`: tfc at a glance: eager tensors, gradients, then one example
(examples/huber.py) compiled ahead of time, run eagerly and compiled, exported
and loaded back. `tfc compile examples/demo.py` compiles its dense_relu
without running the demo."""
import os
import sys
import tempfile

import numpy as np

import tfc


def dense_relu(x, w, b):
    return tfc.relu(x @ w + b)


compiled = tfc.function(dense_relu, input_signature=[tfc.TensorSpec((4, 3)), tfc.TensorSpec((3, 2)),
                                                     tfc.TensorSpec((2,))])


def main():
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

    print("\n== compiled: the same code through tfc.function")

    rng = np.random.default_rng(0)
    x, w, b = (tfc.constant(rng.standard_normal(s).astype(np.float32)) for s in ((4, 3), (3, 2), (2,)))
    eager_out, compiled_out = dense_relu(x, w, b), compiled(x, w, b)
    print("eager == compiled:", np.array_equal(eager_out.numpy(), compiled_out.numpy()))
    print(compiled.get_concrete_function(x, w, b).ir("tensor"))

    print("\n== an example compiled ahead of time: examples/huber.py")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import huber

    x, y = (tfc.constant(a) for a in huber.make_data())
    compiled_step = tfc.compile(huber.train_step)  # traced and optimized now, before any call
    from tfc.compiler import summary

    print(summary(compiled_step, "huber.train_step"), end="")
    for label, fn in (("eager", huber.step), ("compiled", compiled_step)):
        loss, wv, bv, first, per_step = huber.fit(fn, x, y, 100)
        print(f"{label:9s} w={wv:.4f} b={bv:.4f} loss={loss:.4f}  {huber.timing(first, per_step)}")

    loss_fn = tfc.compile(huber.huber_loss)
    with tempfile.TemporaryDirectory() as tmp:
        tfc.save(loss_fn, os.path.join(tmp, "huber_loss"))
        loaded = tfc.load(os.path.join(tmp, "huber_loss"))
        pred = huber.w * x + huber.b
        print("huber loss: eager", float(tfc.reduce_mean(huber.huber(y - pred))),
              " compiled", float(loss_fn(y, pred)), " exported+loaded", float(loaded(y, pred)))


if __name__ == "__main__":
    main()
