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
