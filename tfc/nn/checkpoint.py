"""``tfc.train.Checkpoint``: variables saved by object path in an ``.npz`` file.

Keys are the paths of the variables from the objects given to the Checkpoint
(``model/layer1/kernel``); optimizer state is keyed by the optimizer's name, the
slot, and the path of the variable it belongs to (``optimizer/m/model/layer1/kernel``,
``optimizer/iterations``). The file holds plain arrays only, so loading it runs
no code (``allow_pickle=False``).

``restore`` checks everything (keys, shapes, dtypes) before it assigns anything:
on any problem it raises one error listing them all, and no variable changes.

Lazy layers: restoring into a layer that has not created its variables yet (a
``Dense`` never called) is *deferred*: the values wait on the layer and are
checked and assigned right after it builds, on its first call (restore-on-
create, as in TensorFlow). ``restore`` returns a status whose
``assert_consumed()`` raises while any layer still waits. (Not handled: a layer
whose ``build`` creates unbuilt sublayers; call such a model once before restoring.)

A layer's variables named in its ``_restore_optional`` (a seeded Dropout's
``seed_calls``, added after checkpoints of such layers existed) may be missing
from the file: they keep their value rather than make older checkpoints
unloadable.
"""
from __future__ import annotations

import os
import tempfile
import zipfile
import zlib

import numpy as np

from tfc.backends.plain_arrays import refusal
from tfc.core.variable import Variable
from tfc.nn.layers import Layer
from tfc.nn.module import Module
from tfc.nn.optimizers import Optimizer

FORMAT_KEY = "__tfc_checkpoint__"
FORMAT = "tfc-checkpoint-1"


def _npz_path(path) -> str:
    path = os.fspath(path)
    return path if path.endswith(".npz") else path + ".npz"


def _check(key, var, array, problems) -> bool:
    want_dtype = var.dtype.as_numpy_dtype
    if tuple(array.shape) != tuple(var.shape):
        problems.append(f"shape mismatch for {key}: the checkpoint has {tuple(array.shape)}, "
                        f"the variable has {tuple(var.shape)}")
        return False
    if array.dtype != want_dtype:
        problems.append(f"dtype mismatch for {key}: the checkpoint has {array.dtype}, the variable has {want_dtype}")
        return False
    return True


def _optional_ids(modules) -> set:
    """ids of the variables that a checkpoint may lack (each layer's ``_restore_optional``)."""
    ids = set()
    for module in modules:
        for m in [module] + [m for _, m in module.modules_with_paths()]:
            for attr in getattr(m, "_restore_optional", ()):
                var = vars(m).get(attr)
                if isinstance(var, Variable):
                    ids.add(id(var))
    return ids


def _raise(where, problems):
    raise ValueError(f"{where}: the checkpoint does not match the objects (nothing was restored):\n  "
                     + "\n  ".join(problems))


class Checkpoint:
    """Saves and restores the variables of Modules, optimizers and Variables
    passed as keyword arguments: ``Checkpoint(model=model, optimizer=opt)``."""

    def __init__(self, **objects):
        for name, obj in objects.items():
            if "/" in name:
                raise ValueError(f"Checkpoint: object name {name!r} must not contain '/'")
            if not isinstance(obj, (Module, Optimizer, Variable)):
                raise TypeError(f"Checkpoint: {name}={type(obj).__name__} is not a tfc.Module, optimizer or Variable")
        # Optimizers last: their slot keys use the paths of the other objects' variables.
        self._objects = sorted(objects.items(), key=lambda kv: isinstance(kv[1], Optimizer))

    def _collect(self, for_save=False):
        """(key -> Variable, id(var) -> key, [(prefix, unbuilt Layer)])."""
        entries, keys, unbuilt = {}, {}, []

        def add(key, var):
            if id(var) not in keys:
                keys[id(var)] = key
                entries[key] = var

        for name, obj in self._objects:
            if isinstance(obj, Variable):
                add(name, obj)
            elif isinstance(obj, Module):
                for path, m in [("", obj)] + obj.modules_with_paths():
                    if isinstance(m, Layer) and not m.built:
                        unbuilt.append((f"{name}/{path}" if path else name, m))
                for path, v in obj.variables_with_paths():
                    add(f"{name}/{path}", v)
            else:
                add(f"{name}/iterations", obj.iterations)
                for var, slot, sv in obj.slot_variables():
                    vkey = keys.get(id(var))
                    if vkey is None:
                        if for_save:
                            raise ValueError(
                                f"Checkpoint.save: optimizer {name!r} has state for variable {var.name}, which is "
                                "not part of the checkpoint; pass the model that owns it to the Checkpoint too")
                        continue
                    add(f"{name}/{slot}/{vkey}", sv)
        return entries, keys, unbuilt

    def save(self, path) -> str:
        """Write every variable to ``path`` (``.npz`` appended if missing); returns the path."""
        entries, _, _ = self._collect(for_save=True)
        path = _npz_path(path)
        directory = os.path.dirname(os.path.abspath(path))
        try:
            fd, tmp = tempfile.mkstemp(suffix=".npz", dir=directory)
        except OSError as e:  # a missing or read-only directory: name the user's path, not the temp file
            raise type(e)(e.errno, f"Checkpoint.save: cannot write {path!r} ({e.strerror})") from None
        try:
            with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
                arrays = [(FORMAT_KEY, np.array(FORMAT))] + [(k, np.asarray(v)) for k, v in entries.items()]
                for key, array in arrays:
                    with z.open(key + ".npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, np.asarray(array), allow_pickle=False)
            os.replace(tmp, path)  # a crash mid-write never leaves a half checkpoint at path
        except BaseException:
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
        return path

    def restore(self, path) -> "RestoreStatus":
        """Load ``path`` into the objects; see the module docstring for the checks."""
        data = _read(path)
        entries, keys, unbuilt = self._collect()
        optimizers = {name: obj for name, obj in self._objects if isinstance(obj, Optimizer)}
        problems, assigns, new_slots = [], [], []
        deferred = {}  # id(layer) -> (prefix, layer, {rel: (key, array)}, [(opt, slot, rel, key, array)])

        def unbuilt_owner(key):
            """The deepest unbuilt layer whose path is a prefix of key."""
            best = None
            for prefix, layer in unbuilt:
                if key.startswith(prefix + "/") and (best is None or len(prefix) > len(best[0])):
                    best = (prefix, layer)
            return best

        def defer(owner):
            prefix, layer = owner
            return deferred.setdefault(id(layer), (prefix, layer, {}, []))

        optional = _optional_ids(obj for _, obj in self._objects if isinstance(obj, Module))
        for key, var in entries.items():
            if key not in data:
                if id(var) not in optional:
                    problems.append(f"missing from the checkpoint: {key}")
            elif _check(key, var, data[key], problems):
                assigns.append((var, data[key]))
        for key, array in data.items():
            if key in entries:
                continue
            name, _, rest = key.partition("/")
            slot, _, vkey = rest.partition("/")
            opt = optimizers.get(name)
            if opt is not None and slot in opt.slot_names and vkey:
                var = entries.get(vkey)
                if var is not None:
                    if _check(key, var, array, problems):
                        new_slots.append((opt, var, slot, array))
                    continue
                owner = unbuilt_owner(vkey)
                if owner is not None:
                    defer(owner)[3].append((opt, slot, vkey[len(owner[0]) + 1:], key, array))
                    continue
            else:
                owner = unbuilt_owner(key)
                if owner is not None:
                    defer(owner)[2][key[len(owner[0]) + 1:]] = (key, array)
                    continue
            problems.append(f"not in the objects: {key} (shape {tuple(array.shape)})")
        if problems:
            _raise(f"Checkpoint.restore({os.fspath(path)!r})", problems)
        for var, array in assigns:
            var.assign(array)
        for opt, var, slot, array in new_slots:
            opt.get_slot(var, slot).assign(array)
        for prefix, layer, values, slots in deferred.values():
            layer._deferred_restore = _DeferredRestore(prefix, values, slots)
        return RestoreStatus([layer for _, layer, _, _ in deferred.values()])


class _DeferredRestore:
    """Values waiting for a layer to build; checked, then assigned, right after."""

    def __init__(self, prefix, values, slots):
        self.prefix, self.values, self.slots = prefix, values, slots

    def __call__(self, layer):
        current = dict(layer.variables_with_paths())
        optional = _optional_ids([layer])
        problems, assigns = [], []
        for rel, var in current.items():
            if rel not in self.values:
                if id(var) not in optional:
                    problems.append(f"missing from the checkpoint: {self.prefix}/{rel}")
            elif _check(self.values[rel][0], var, self.values[rel][1], problems):
                assigns.append((var, self.values[rel][1]))
        for rel, (key, array) in self.values.items():
            if rel not in current:
                problems.append(f"not in the objects: {key} (shape {tuple(array.shape)})")
        for opt, slot, rel, key, array in self.slots:
            var = current.get(rel)
            if var is None:
                problems.append(f"not in the objects: {key} (no variable {self.prefix}/{rel})")
            elif _check(key, var, array, problems):
                assigns.append(((opt, var, slot), array))
        if problems:
            _raise(f"deferred checkpoint restore into {self.prefix} (on its first call)", problems)
        for target, array in assigns:
            if isinstance(target, tuple):
                opt, var, slot = target
                opt.get_slot(var, slot).assign(array)
            else:
                target.assign(array)


class RestoreStatus:
    """What ``Checkpoint.restore`` left pending: layers that restore on creation."""

    def __init__(self, layers):
        self._layers = layers

    def pending(self) -> list:
        """Layers whose values wait for their first call."""
        return [layer for layer in self._layers if layer._deferred_restore is not None]

    def assert_consumed(self) -> "RestoreStatus":
        waiting = self.pending()
        if waiting:
            raise AssertionError(
                "checkpoint values still wait for layers that have not been built (call the model once): "
                + ", ".join(repr(layer) for layer in waiting))
        return self


def _read(path) -> dict:
    """{key: array} from a checkpoint file, with clear errors for anything else."""
    path = os.fspath(path)
    candidates = [path] if path.endswith(".npz") else [path, path + ".npz"]
    found = next((p for p in candidates if os.path.isfile(p)), None)
    if found is None:
        raise FileNotFoundError(f"Checkpoint.restore: no checkpoint file at {path!r}")
    try:
        f = np.load(found, allow_pickle=False)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise ValueError(f"Checkpoint.restore: {found!r} is not a tfc checkpoint ({refusal(e) or e})") from None
    if not isinstance(f, np.lib.npyio.NpzFile):
        raise ValueError(f"Checkpoint.restore: {found!r} is a single .npy array, not a tfc checkpoint")
    with f:
        if FORMAT_KEY not in f.files:
            raise ValueError(f"Checkpoint.restore: {found!r} is an .npz file but not a tfc checkpoint "
                             f"(no {FORMAT_KEY!r} marker)")
        marker = str(_member(f, found, FORMAT_KEY))
        if marker != FORMAT:
            raise ValueError(f"Checkpoint.restore: {found!r} has checkpoint format {marker!r}; "
                             f"this tfc reads {FORMAT!r}")
        return {k: _member(f, found, k) for k in f.files if k != FORMAT_KEY}


def _member(f, found, key):
    """One array of an open checkpoint: a damaged one (bad CRC, truncated) or
    one that is not plain data (an object array) names the file and the key."""
    try:
        return f[key]
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, zlib.error) as e:
        raise ValueError(f"Checkpoint.restore: cannot read {key} from {found!r} ({refusal(e) or e}); the file is damaged "
                         "or not a tfc checkpoint (nothing was restored)") from None
