"""Devices: where tensors live and ops run (docs/gpu-eager.md).

Two devices: the CPU ("/device:CPU:0": numpy arrays, the numpy kernels) and,
where a CUDA driver is usable, one GPU ("/device:GPU:0": tensors held in device
memory, ops run as single-op kernels compiled by the cuda backend). The names
follow TensorFlow's ("cpu:0", "/device:GPU:0",
"/job:localhost/replica:0/task:0/device:CPU:0").

Core does not know the GPU: tfc.frontend.eager_gpu registers the runtime that
runs ops there (``set_gpu_runtime``), so importing tfc imports no CUDA library
and no backend until a GPU tensor is made.

Placement of an eager op:

- inside ``with tfc.device("gpu:0")`` it runs on the GPU; host inputs are
  copied there (TensorFlow's rule: the scope names the op's device). New
  tensors (constants, creation and random ops) are made there;
- inside ``with tfc.device("cpu:0")`` it runs on the CPU; GPU inputs are
  copied to the host;
- outside any scope it runs where its tensor inputs are: the GPU if one is a
  GPU tensor. Mixing a GPU tensor with a host tensor that has dimensions raises
  ``DeviceMismatchError`` naming the op, both devices and the fix; 0-d host
  tensors (Python scalars, which ops convert to 0-d tensors) travel with the
  launch as kernel arguments (soft placement of scalars).
"""
from __future__ import annotations

import contextlib
import re
import threading
from typing import NamedTuple

_DEVICE = re.compile(r"^(?:/job:[^/]+)?(?:/replica:\d+)?(?:/task:\d+)?/?(?:device:)?(cpu|gpu)(?::(\d+))?$",
                     re.IGNORECASE)

CPU = "/device:CPU:0"
GPU = "/device:GPU:0"


class PhysicalDevice(NamedTuple):
    name: str          # "/physical_device:CPU:0"
    device_type: str   # "CPU"


class DeviceMismatchError(ValueError):
    """An op's inputs are on different devices (and no device scope copies them)."""


class _Placement(threading.local):
    # the innermost device scope of this thread: its canonical name, and the
    # same name in ``gpu`` when it is the GPU (the one field the eager hot path reads)
    name = None
    gpu = None


PLACEMENT = _Placement()

_runtime = None  # set by tfc.frontend.eager_gpu (set_gpu_runtime)


def set_gpu_runtime(runtime) -> None:
    """Register what runs eager ops on the GPU (tfc.frontend.eager_gpu.Runtime):
    ``run(op, tensors, attrs, scope)``, ``to_gpu(tensor)``, ``devices()``, ``check()``."""
    global _runtime
    _runtime = runtime


def gpu_runtime():
    if _runtime is None:  # tfc/config.py imports tfc.frontend.eager_gpu, which registers it
        raise RuntimeError("the GPU runtime is not registered: import tfc (tfc.frontend.eager_gpu registers it)")
    return _runtime


def canonical(name: str) -> str:
    """"/device:CPU:0" or "/device:GPU:0" for any spelling of a device; ValueError for others."""
    m = _DEVICE.match(name.strip()) if isinstance(name, str) else None
    if m is None:
        raise ValueError(f"tfc.device: {name!r} is not a device name (expected e.g. 'cpu:0' or 'gpu:0')")
    kind, index = m.group(1).upper(), int(m.group(2) or 0)
    if index != 0:
        raise ValueError(f"tfc.device({name!r}): there is one {kind} device, /device:{kind}:0")
    return f"/device:{kind}:0"


@contextlib.contextmanager
def device(name: str):
    """``with tfc.device("gpu:0"):`` runs the block's ops on that device and
    makes its new tensors there (see the module docstring). Entering a GPU
    scope asks for the CUDA driver: none raises tfc.errors.UnavailableError."""
    dev = canonical(name)
    if dev == GPU:
        gpu_runtime().check()
    with placed(dev):
        yield


@contextlib.contextmanager
def placed(dev: str | None):
    """The scope of ``device`` for a canonical name (None: no scope), unchecked:
    the tape runs the gradient rule of an op that ran on the GPU in a GPU scope,
    so the constants the rule makes and its host inputs go there too."""
    prev = PLACEMENT.name, PLACEMENT.gpu
    PLACEMENT.name, PLACEMENT.gpu = dev, (dev if dev == GPU else None)
    try:
        yield
    finally:
        PLACEMENT.name, PLACEMENT.gpu = prev


def run_placed(op, tensors, attrs):
    """Run an eager op that involves the GPU (a GPU input, or a device scope:
    tfc.core.registry.run_eager sends it here)."""
    return (_runtime or gpu_runtime()).run(op, tensors, attrs, PLACEMENT.name)


def list_devices(device_type: str | None = None) -> list:
    """The devices tfc can run on, optionally of one type ("CPU" or "GPU"). The
    GPU is listed where a CUDA driver is usable: pycuda or cuda-bindings on a
    machine with a device, or the PTX simulator (TFC_CUDA_DRIVER=simulator,
    which runs the same kernels without one)."""
    want = None if device_type is None else device_type.upper()
    found = []
    if want in (None, "CPU"):
        found.append(PhysicalDevice("/physical_device:CPU:0", "CPU"))
    if want in (None, "GPU") and _runtime is not None:
        found += _runtime.devices()
    return found
