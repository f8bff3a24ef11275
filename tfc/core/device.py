"""Devices: where tensors live and ops run. This build has one, the CPU (the
numpy kernels and the numpy backend); the names follow TensorFlow's
("cpu:0", "/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:0")."""
from __future__ import annotations

import contextlib
import re
from typing import NamedTuple

_DEVICE = re.compile(r"^(?:/job:[^/]+)?(?:/replica:\d+)?(?:/task:\d+)?/?(?:device:)?(cpu|gpu)(?::(\d+))?$",
                     re.IGNORECASE)


class PhysicalDevice(NamedTuple):
    name: str          # "/physical_device:CPU:0"
    device_type: str   # "CPU"


def canonical(name: str) -> str:
    """"/device:CPU:0" for any spelling of a device; ValueError for others."""
    m = _DEVICE.match(name.strip()) if isinstance(name, str) else None
    if m is None:
        raise ValueError(f"tfc.device: {name!r} is not a device name (expected e.g. 'cpu:0' or 'gpu:0')")
    kind, index = m.group(1).upper(), int(m.group(2) or 0)
    if kind == "GPU":
        raise NotImplementedError(
            f"tfc.device({name!r}): the GPU backend is not implemented yet; tensors and ops are on the CPU")
    if index != 0:
        raise ValueError(f"tfc.device({name!r}): there is one CPU device, /device:CPU:0")
    return "/device:CPU:0"


@contextlib.contextmanager
def device(name: str):
    """``with tfc.device("cpu:0"):`` runs the block's ops on that device. The
    name is checked on entry (a GPU raises NotImplementedError in this build)."""
    canonical(name)
    yield


def list_devices(device_type: str | None = None) -> list:
    """The devices tfc can run on, optionally of one type ("CPU" or "GPU")."""
    found = [PhysicalDevice("/physical_device:CPU:0", "CPU")]
    return [d for d in found if device_type is None or d.device_type == device_type.upper()]
