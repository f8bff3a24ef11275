"""A library call run on chunks of rows (max_pool2d_grad on the CNN's
[64, 8, 8, 16]) writes each chunk into its planned buffer by the declaration's
kernel_into (tfc/backends/numpy/emitter.py): no result array and copy per
chunk, and eager's bits."""
import re

import numpy as np

import tfc
from tfc.ops.conv import max_pool2d_grad


def test_chunked_pool_gradient_writes_its_buffer():
    rng = np.random.default_rng(0)
    x = tfc.constant(np.maximum(rng.standard_normal((64, 8, 8, 16)), 0).astype(np.float32))
    g = tfc.constant(rng.standard_normal((64, 4, 4, 16)).astype(np.float32))

    def f(x, g):
        return max_pool2d_grad(x, g * 2.0, 2, 2) + 1.0

    fn = tfc.function(f)
    compiled = fn(x, g).numpy()
    source = fn.get_concrete_function(x, g).source
    rows = re.search(r"def (rows\d+)\(.*\n(.*)\n", source)
    assert rows, "max_pool2d_grad is not run on chunks of rows at this size"
    assert re.match(r"\s*into\d+\(i0\[lo:hi\], i1\[lo:hi\], o0\[lo:hi\], \*\*attrs\d+\)$", rows.group(2)), rows.group(2)
    assert f"R.run_chunks({rows.group(1)}," in source
    np.testing.assert_array_equal(compiled.view(np.uint32), f(x, g).numpy().view(np.uint32))
