import os

os.environ.setdefault("TFC_VERIFY_IR", "1")  # verify IR after tracing and every pass

import numpy as np
import pytest

import tfc


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def pytest_configure(config):
    np.seterr(all="ignore")
