import os

import tempfile

os.environ.setdefault("TFC_VERIFY_IR", "1")  # verify IR after tracing and every pass
# generated modules are cached in a fresh directory per test session, never ~/.cache/tfc
os.environ["TFC_CACHE_DIR"] = tempfile.mkdtemp(prefix="tfc-cache-")

import numpy as np
import pytest

import tfc


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def pytest_configure(config):
    np.seterr(all="ignore")


@pytest.fixture(params=["simulator", pytest.param("gpu", marks=pytest.mark.gpu)])
def cuda_driver(request, monkeypatch):
    """A CUDA test runs on the simulated driver (TFC_CUDA_DRIVER=simulator), and
    (marked gpu) on the real driver where there is one: pycuda, else
    cuda-bindings; it skips with the reason where there is none."""
    if request.param == "simulator":
        monkeypatch.setenv("TFC_CUDA_DRIVER", "simulator")
        return
    monkeypatch.delenv("TFC_CUDA_DRIVER", raising=False)
    from tfc.backends.cuda.driver import available

    driver, why = available()
    if driver is None:
        pytest.skip(f"no GPU: {why}")
