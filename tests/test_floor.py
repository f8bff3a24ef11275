"""The oldest versions pyproject.toml allows are the ones tfc needs: each floor
with the reason for it. `make test-floor` (run by CI) installs exactly these
floors in a second venv and runs part of the suite there, so a floor stays true.

    python tests/test_floor.py --pins    # the floors as pip pins (numpy==2.3 ...)
"""
import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"

# what tfc relies on, by the version that brought it
NEEDS = {
    "python": ("3.11", "BaseException.add_note (PEP 678): errors name the user's line; tomllib"),
    "numpy": ("2.3", "compiled sums equal eager ones to the bit: the runtime's chunked tree_sum follows "
                     "numpy 2.3's pairwise order over a whole contiguous array (2.0 to 2.2 sum in another "
                     "order: test_numpy_backend's chunked sums and test_fusion's bitwise kernels fail); "
                     "since 2.0: NEP 50 promotion (float32 tensor * 2.0 stays float32), np.bool, "
                     "__array__(dtype, copy)"),
}


def floors() -> dict:
    """{name: oldest allowed version} from pyproject.toml (requires-python, dependencies' >= or ==)."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    out = {"python": re.fullmatch(r">=\s*([\d.]+)", project["requires-python"]).group(1)}
    for dep in project["dependencies"]:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(>=|==)\s*([\d.]+)", dep)
        assert m, f"dependency {dep!r} has no floor (name>=version or name==version)"
        out[m.group(1).lower()] = m.group(3)
    return out


def _key(version: str) -> tuple:
    return tuple(int(p) for p in version.split("."))


def test_floors_are_what_tfc_needs():
    declared = floors()
    for name, (needed, why) in NEEDS.items():
        assert name in declared, f"pyproject.toml declares no floor for {name} (needs {needed}: {why})"
        assert _key(declared[name]) >= _key(needed), f"{name}>={declared[name]}, but tfc needs {needed}: {why}"
        assert _key(declared[name]) == _key(needed), (
            f"{name}>={declared[name]} is above what tfc needs ({needed}); lower it, or record the new need in NEEDS")


def test_running_versions_meet_the_floors():
    import numpy as np

    assert _key(re.match(r"\d+(\.\d+)*", np.__version__).group()) >= _key(floors()["numpy"])
    assert sys.version_info[:2] >= _key(floors()["python"])


def test_what_the_numpy_floor_provides():
    """The NEP 50 features named in NEEDS, as tfc uses them (fails on numpy 1.26); the
    summation order is checked bitwise by test_numpy_backend and test_fusion."""
    import numpy as np

    assert (np.float32(1) * 2.0).dtype == np.float32  # a Python float is weak
    assert (np.ones(2, np.float32) * np.float64(2)).dtype == np.float64  # a numpy scalar is not (NEP 50)
    assert np.bool is np.bool_

    class HasArray:
        def __array__(self, dtype=None, copy=None):
            return np.zeros(2, dtype)

    assert np.asarray(HasArray(), np.float32).dtype == np.float32


if __name__ == "__main__" and sys.argv[1:] == ["--pins"]:
    pins = {name: v for name, v in floors().items() if name != "python"}
    print(" ".join(f"{name}=={v}" for name, v in pins.items()))
