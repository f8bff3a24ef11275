"""Public namespaces show public names only: dir() of tfc and of its user-facing
modules lists no imported modules (np, math), no ``from __future__ import
annotations`` and no private helpers, and still lists what the module defines."""
import __future__
import inspect
import types

import pytest

import tfc

# (namespace, names it must show, the submodules it may show)
NAMESPACES = {
    "tfc": (tfc, {"Tensor", "Variable", "function", "GradientTape", "clip_by_global_norm", "Module", "float32",
                  "reduce_sum", "matmul"}, None),
    "tfc.layers": (tfc.layers, {"Dense", "Conv2D", "MaxPool2D", "Flatten", "Dropout", "Sequential", "Embedding",
                                "LayerNormalization", "BatchNormalization", "AveragePooling2D",
                                "GlobalAveragePooling2D", "MultiHeadAttention", "Layer"}, set()),
    "tfc.optimizers": (tfc.optimizers, {"SGD", "Adam", "AdamW", "RMSprop", "Optimizer", "schedules",
                                        "clip_by_global_norm"}, {"schedules"}),
    "tfc.optimizers.schedules": (tfc.optimizers.schedules, {"ExponentialDecay", "PiecewiseConstantDecay",
                                                            "CosineDecay", "LearningRateSchedule"}, set()),
    "tfc.nn": (tfc.nn, {"relu", "softmax", "log_softmax", "sparse_softmax_cross_entropy_with_logits", "conv2d",
                        "max_pool2d", "avg_pool2d", "dropout"}, set()),
    "tfc.train": (tfc.train, {"Checkpoint"}, set()),
    "tfc.random": (tfc.random, {"uniform", "normal", "set_seed"}, set()),
    "tfc.config": (tfc.config, {"list_devices", "list_physical_devices"}, set()),
    "tfc.errors": (tfc.errors, {"InvalidArgumentError", "UnavailableError"}, set()),
}

IMPORTED_HELPERS = {"np", "numpy", "math", "annotations", "inspect", "os", "sys", "types", "tempfile", "zipfile",
                    "zlib", "dtypes"}


@pytest.fixture(params=sorted(NAMESPACES))
def namespace(request):
    return request.param, *NAMESPACES[request.param]


def _is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_dir_shows_no_imported_modules_future_flags_or_private_helpers(namespace):
    label, module, _, allowed_modules = namespace
    listed = dir(module)
    assert not IMPORTED_HELPERS & set(listed), f"dir({label}) lists {sorted(IMPORTED_HELPERS & set(listed))}"
    assert not [n for n in listed if _is_private(n)], f"dir({label}) lists private names"
    for name in listed:
        value = getattr(module, name)  # every listed name resolves
        assert not isinstance(value, __future__._Feature), f"dir({label}) lists the future flag {name}"
        if isinstance(value, types.ModuleType):
            assert value.__name__.startswith("tfc."), f"dir({label}) lists the imported module {name}"
            if allowed_modules is not None:
                assert name in allowed_modules, f"dir({label}) lists the implementation module {name}"


def test_dir_of_tfc_leaves_out_the_implementation_packages():
    listed = set(dir(tfc))
    assert not {"core", "ops", "passes", "backends", "dialects", "frontend", "compiler", "export"} & listed
    assert {"layers", "optimizers", "nn", "train", "random", "config", "autograph"} <= listed
    assert tfc.ops is not None and tfc.core is not None  # still importable by name


def test_dir_keeps_the_public_names(namespace):
    label, module, required, _ = namespace
    missing = required - set(dir(module))
    assert not missing, f"dir({label}) misses {sorted(missing)}"


def test_every_public_class_and_function_a_namespace_defines_is_listed(namespace):
    """A new layer or optimizer left out of __all__ would vanish from dir()."""
    label, module, _, _ = namespace
    listed = set(dir(module))
    defined = {n for n, v in vars(module).items()
               if not n.startswith("_") and (inspect.isclass(v) or inspect.isfunction(v))
               and getattr(v, "__module__", None) == module.__name__}
    assert defined <= listed, f"dir({label}) misses what it defines: {sorted(defined - listed)}"
    if hasattr(module, "__all__"):
        assert set(module.__all__) <= set(vars(module)), f"{label}.__all__ names what it does not have"
