"""float64 transcendental functions in GPU kernels (tfc/backends/cuda/ptx_math.py,
``EMITTERS_F64``), on the PTX simulator (and a GPU where there is one: the
``gpu`` variants) against numpy: exp within 1 ulp over the whole range
(subnormal results included: 1 ulp of the subnormal spacing), its overflow and
underflow edges, infinities, NaN and signed zeros exact; the other float64
functions still raise NotImplementedError naming the op."""
from __future__ import annotations

import numpy as np
import pytest

import tfc

pytest.importorskip("tfc.backends.cuda.simulator", reason="the PTX simulator has not landed")
from test_lower_gpu import check_budgets, l3_of, lower  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, -1e-300, 0.5 * np.log(2), -0.5 * np.log(2),
         709.78, 709.782712893384, 709.7827128933841, 709.79, -708.39, -744.44, -745.13, -745.1332191019412,
         -745.14, -746.0, 1.0, -1.0, 20.0]


def test_exp_f64_within_one_ulp(cuda_driver):
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-750, 715, 1 << 14), rng.standard_normal(1 << 12),
                        rng.uniform(-1e-3, 1e-3, 1 << 10), np.array(EDGES)])
    got = np.asarray(tfc.function(lambda v: tfc.exp(v), target="cuda")(tfc.constant(x)))
    want = np.exp(x)
    finite = np.isfinite(want) & (want != 0)
    ulps = np.abs(got[finite] - want[finite]) / np.spacing(want[finite])
    assert ulps.max() <= 1.0, x[finite][np.argmax(ulps)]
    rest = ~finite
    assert np.array_equal(got[rest], want[rest], equal_nan=True)
    assert np.array_equal(got[x == 0], np.ones((x == 0).sum()))  # exp(+-0) is exactly 1


def test_exp_f64_kernel_budget():
    m = lower(l3_of(lambda v: tfc.exp(v) * 2.0, np.ones(1000)))
    check_budgets(m)


def test_other_f64_functions_raise():
    f = tfc.function(lambda v: tfc.log(v), target="cuda")
    with pytest.raises(NotImplementedError, match="math.log on f64"):
        f(tfc.constant(np.ones(3)))
