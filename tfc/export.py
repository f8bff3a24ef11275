"""``tfc.save(compiled, path)`` / ``tfc.load(path)``: an exported function.

The artifact is a directory of plain data, so loading it runs no code from it:

- ``function.mlir``: the L1 tensor IR after passes (with locations), parseable by
  the ``tfc`` dialect. Large constants are replaced by a zero splat of the same
  type tagged ``{tfc.weight = "const_N"}``; their values are in the weights file.
- ``weights.npz``: plain arrays (``np.load(allow_pickle=False)``): variables by
  their key, large constants as ``const_N``.
- ``manifest.json``: format version, function name, input signature, output
  structure, target, variables (key, checkpoint path, shape, dtype, trainable),
  constants, and a SHA-256 of the IR text and every weight.

``tfc.save`` writes the directory beside ``path`` and moves it in whole, so a
failed save leaves an earlier artifact at ``path`` as it was.
``tfc.load`` checks the manifest against the files (format version, the type of
every entry, files present, weight shapes and dtypes, the hash, the IR's function
type) before it builds anything, and raises ``ArtifactError`` naming the file and
the problem (a damaged file included).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
import zlib

import numpy as np

from tfc.backends.plain_arrays import refusal
from tfc.core import dtypes
from tfc.nn.module import Module

FORMAT_VERSION = 1
MANIFEST, IR_FILE, WEIGHTS_FILE = "manifest.json", "function.mlir", "weights.npz"
LARGE_CONSTANT = 256  # elements: constants at least this big go to the weights file


class ArtifactError(ValueError):
    """An exported function directory that cannot be loaded as it is."""


def _digest(ir_text: str, weights: dict) -> str:
    h = hashlib.sha256(ir_text.encode())
    for key in sorted(weights):
        a = np.ascontiguousarray(weights[key])
        h.update(f"\0{key}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


# -- output structure <-> JSON -----------------------------------------------------------


# outputs nested deeper are not exported (nor loaded: a manifest is read by
# recursion, and hostile nesting must be an ArtifactError, not a RecursionError)
MAX_NESTING = 100


def _encode_structure(s, mask_it, static_it, depth=0):
    from tfc.core import nest

    if depth > MAX_NESTING:
        raise TypeError(f"tfc.save: outputs nested deeper than {MAX_NESTING} levels cannot be exported")
    if isinstance(s, dict):
        items = sorted(s.items(), key=lambda kv: repr(kv[0]))  # nest.flatten's order
        for k, _ in items:
            if not isinstance(k, str):
                raise TypeError(f"tfc.save: output dict keys must be strings to export, got {k!r}")
        enc = {k: _encode_structure(v, mask_it, static_it, depth + 1) for k, v in items}
        return {"dict": [[k, enc[k]] for k in s]}  # the user's key order
    if isinstance(s, (list, tuple)):
        return {"list" if isinstance(s, list) else "tuple": [_encode_structure(x, mask_it, static_it, depth + 1)
                                                             for x in s]}
    is_tensor, value = next(mask_it), next(static_it)
    if is_tensor:
        return {"tensor": True}
    if value is not None and not isinstance(value, (bool, int, float, str)) or nest.is_nested(value):
        raise TypeError(f"tfc.save: cannot export an output of type {type(value).__name__} "
                        "(outputs are tensors, None, bools, numbers or strings)")
    return {"value": value}


def _decode_structure(d, mask, static, where, depth=0):
    """(structure with placeholder leaves, mask, static) as ConcreteFunction keeps
    them; ``where`` (the manifest's path) names it in errors."""
    if depth > MAX_NESTING:
        raise ArtifactError(f"{where}: outputs nested deeper than {MAX_NESTING} levels")
    bad = ArtifactError(f"{where}: bad output entry {d!r}")
    if not isinstance(d, dict) or len(d) != 1:
        raise bad
    if "dict" in d:
        if not isinstance(d["dict"], list) or not all(
                isinstance(kv, list) and len(kv) == 2 and isinstance(kv[0], str) for kv in d["dict"]):
            raise bad
        dec = {k: _decode_structure(v, mask, static, where, depth + 1)
               for k, v in sorted(d["dict"], key=lambda kv: repr(kv[0]))}
        return {k: dec[k] for k, _ in d["dict"]}
    if "list" in d or "tuple" in d:
        items = d.get("list", d.get("tuple"))
        if not isinstance(items, list):
            raise bad
        items = [_decode_structure(x, mask, static, where, depth + 1) for x in items]
        return items if "list" in d else tuple(items)
    if d.get("tensor") is True:
        mask.append(True)
        static.append(None)
        return 0
    if "value" not in d or not isinstance(d["value"], (type(None), bool, int, float, str)):
        raise bad
    mask.append(False)
    static.append(d["value"])
    return d["value"]


# -- save ----------------------------------------------------------------------------


def _variable_paths(variables, root):
    """Checkpoint paths of the variables: their paths in ``root`` (a tfc.Module),
    else their names made unique."""
    by_id = {}
    if root is not None:
        by_id = {id(v): p for p, v in root.variables_with_paths()}
    paths, used = [], set()
    for v in variables:
        p = by_id.get(id(v)) or v.name.split(":")[0]
        base, n = p, 1
        while p in used:
            n += 1
            p = f"{base}_{n}"
        used.add(p)
        paths.append(p)
    return paths


def save(compiled, path, root=None) -> str:
    """Write the compiled function (``tfc.compile`` or ``get_concrete_function``)
    to the directory ``path``; returns ``path``. ``root``, a tfc.Module owning the
    variables, gives them their checkpoint paths in the artifact, so
    ``tfc.train.Checkpoint(model=tfc.load(path))`` reads and writes the same
    checkpoints as ``tfc.train.Checkpoint(model=root)``."""
    from xdsl.dialects.builtin import BytesAttr, DenseIntOrFPElementsAttr, StringAttr

    from tfc.dialects.tensor import ConstantOp, print_ir

    from tfc.frontend.function import ConcreteFunction

    if not isinstance(compiled, ConcreteFunction):
        raise TypeError(f"tfc.save: expected a compiled function (tfc.compile(...) or "
                        f"f.get_concrete_function(...)), got {type(compiled).__name__}")
    module = compiled.module.clone()
    weights, constants = {}, []
    for op in list(module.walk()):
        if isinstance(op, ConstantOp):
            value = op.numpy()
            if value.size >= LARGE_CONSTANT:
                key = f"const_{len(constants)}"
                weights[key] = value
                constants.append({"key": key, "shape": list(value.shape), "dtype": str(value.dtype)})
                zero = np.zeros(1, value.dtype).tobytes()
                op.properties["value"] = DenseIntOrFPElementsAttr(op.value.type, BytesAttr(zero))
                op.attributes["tfc.weight"] = StringAttr(key)
    variables = []
    for i, (v, p) in enumerate(zip(compiled.variables, _variable_paths(compiled.variables, root))):
        key = f"var_{i}"
        weights[key] = np.asarray(v)
        variables.append({"key": key, "path": p, "name": v.name, "shape": list(v.shape),
                          "dtype": v.dtype.name, "trainable": v.trainable})
    ir_text = print_ir(module, debuginfo=True)
    mask, static = compiled._out_mask, compiled._out_static
    manifest = {
        "format": "tfc-function",
        "format_version": FORMAT_VERSION,
        "name": compiled.name,
        "target": getattr(compiled, "target", "cpu"),
        "passes": list(getattr(compiled, "passes", ())),
        "signature": [{"shape": list(s.shape), "dtype": s.dtype.name} for s in compiled.input_specs],
        "outputs": _encode_structure(compiled._out_structure, iter(mask), iter(static)),
        "variables": variables,
        "constants": constants,
        "files": {"ir": IR_FILE, "weights": WEIGHTS_FILE},
        "sha256": _digest(ir_text, weights),
    }
    path = os.fspath(path)
    target = os.path.realpath(path)  # a link to a directory: replaced through the link
    _check_replaceable(path)  # before writing anything
    # written whole beside ``path``, then moved in: a crash or a full disk never
    # leaves a half artifact (nor half replaces an earlier one) at ``path``
    tmp = make_dir_beside(target, ".tfc-save-")
    try:
        with open(os.path.join(tmp, IR_FILE), "w") as f:
            f.write(ir_text)
        np.savez(os.path.join(tmp, WEIGHTS_FILE), **weights)
        with open(os.path.join(tmp, MANIFEST), "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
        _replace_dir(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def make_dir_beside(path: str, prefix: str) -> str:
    """A new empty directory in ``path``'s directory (created if need be), to
    be renamed to ``path``: with the mode a plain mkdir gives (mkdtemp's 0700
    would stay on the export)."""
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=prefix, dir=parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    return tmp


def _is_export(path: str) -> bool:
    """``path`` is a directory tfc.save wrote: its manifest says so and it
    holds nothing but an export's files."""
    try:
        entries = list(os.scandir(path))
        with open(os.path.join(path, MANIFEST), "rb") as f:
            m = json.load(f)
    except (OSError, ValueError):
        return False
    return (isinstance(m, dict) and m.get("format") == "tfc-function"
            and all(e.name in (MANIFEST, IR_FILE, WEIGHTS_FILE) and e.is_file(follow_symlinks=False)
                    for e in entries))


def _check_replaceable(path: str) -> None:
    """Raise FileExistsError unless ``path`` is free for an export: absent, an
    empty directory, or an earlier export (never a directory of the user's)."""
    if not os.path.lexists(path):
        return
    if not os.path.isdir(path):
        raise FileExistsError(f"{path} exists and is not a directory")
    if os.listdir(path) and not _is_export(path):
        raise FileExistsError(f"{path} is a directory that is not a tfc export (it holds other files); "
                              "not replacing it: remove it or choose another path")


def _replace_dir(new: str, path: str) -> None:
    """Move directory ``new`` to ``path``, replacing an empty directory or an
    earlier artifact there (moved aside first, then deleted: ``path`` is always
    whole); anything else at ``path`` is refused and left as it is."""
    _check_replaceable(path)
    if not os.path.exists(path) or not os.listdir(path):
        os.replace(new, path)  # rename(2) replaces an empty directory
        return
    old = tempfile.mkdtemp(prefix=".tfc-old-", dir=os.path.dirname(os.path.abspath(path)))
    os.rmdir(old)
    os.rename(path, old)
    try:
        os.rename(new, path)
    except BaseException:
        os.rename(old, path)
        raise
    shutil.rmtree(old, ignore_errors=True)


# -- load ----------------------------------------------------------------------------


@contextlib.contextmanager
def _reading(fpath):
    """Errors reading (or decoding) a file of the artifact -> ArtifactError naming it."""
    try:
        yield
    except ArtifactError:
        raise
    except (OSError, EOFError, ValueError, RecursionError, zipfile.BadZipFile, zlib.error) as e:  # (json nesting)
        why = refusal(e) or f"damaged or unreadable ({type(e).__name__}: {e})"
        raise ArtifactError(f"{fpath}: {why}") from None


_DTYPE_NAMES = frozenset(d.name for d in dtypes.ALL)
_SHAPE = (lambda v: isinstance(v, list) and all(d is None or type(d) is int and d >= 0 for d in v),
          "a list of dimensions")
_DTYPE = (lambda v: isinstance(v, str) and v in _DTYPE_NAMES, f"one of {', '.join(sorted(_DTYPE_NAMES))}")
_STR = (lambda v: isinstance(v, str) and v != "", "a string")
_SPEC_FIELDS = {"shape": _SHAPE, "dtype": _DTYPE}
# the lists of the manifest and the fields of their entries that load reads
_LIST_FIELDS = {
    "signature": _SPEC_FIELDS,
    "variables": {"key": _STR, "path": _STR, "name": _STR, **_SPEC_FIELDS,
                  "trainable": (lambda v: isinstance(v, bool), "true or false")},
    "constants": {"key": _STR, **_SPEC_FIELDS},
}


def _check_manifest(m, mpath):
    """Every entry load reads, of the type it needs: a damaged manifest is an
    ArtifactError naming the entry, not a TypeError deep inside load."""
    if not _STR[0](m["name"]):
        raise ArtifactError(f"{mpath}: name is {m['name']!r}, expected {_STR[1]}")
    for entry, fields in _LIST_FIELDS.items():
        if not isinstance(m[entry], list):
            raise ArtifactError(f"{mpath}: {entry} is {m[entry]!r}, expected a list")
        for i, e in enumerate(m[entry]):
            if not isinstance(e, dict):
                raise ArtifactError(f"{mpath}: {entry}[{i}] is {e!r}, expected an object")
            for field, (ok, want) in fields.items():
                if field not in e:
                    raise ArtifactError(f"{mpath}: {entry}[{i}] has no {field!r}")
                if not ok(e[field]):
                    raise ArtifactError(f"{mpath}: {entry}[{i}].{field} is {e[field]!r}, expected {want}")
    _decode_structure(m["outputs"], [], [], mpath)


def _read_manifest(path):
    mpath = os.path.join(path, MANIFEST)
    if not os.path.isdir(path):
        raise ArtifactError(f"{path}: no such exported function directory")
    if not os.path.isfile(mpath):
        raise ArtifactError(f"{path}: missing {MANIFEST} (not an exported tfc function?)")
    with _reading(mpath), open(mpath, "rb") as f:
        m = json.load(f)
    if not isinstance(m, dict) or m.get("format") != "tfc-function":
        raise ArtifactError(f"{mpath}: not a tfc exported-function manifest")
    if "format_version" not in m:
        raise ArtifactError(f"{mpath}: format_version is missing")
    version = m["format_version"]
    if type(version) is not int:
        raise ArtifactError(f"{mpath}: format_version must be an integer, got {version!r}")
    if version > FORMAT_VERSION:
        raise ArtifactError(f"{path}: written in format version {version} by a newer tfc; this tfc "
                            f"reads up to version {FORMAT_VERSION} (upgrade tfc)")
    if version < 1:
        raise ArtifactError(f"{mpath}: format_version {version} is not a version tfc ever wrote")
    for key in ("name", "signature", "outputs", "variables", "constants", "sha256"):
        if key not in m:
            raise ArtifactError(f"{mpath}: missing entry {key!r}")
    _check_manifest(m, mpath)
    return m


def _read_weights(path, m):
    wpath = os.path.join(path, WEIGHTS_FILE)
    if not os.path.isfile(wpath):
        raise ArtifactError(f"{path}: missing {WEIGHTS_FILE}")
    with _reading(wpath):
        z = np.load(wpath, allow_pickle=False)  # object arrays need pickle: refused
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ArtifactError(f"{wpath}: a single .npy array, not the weights of an exported function")
        with z:
            weights = {k: z[k] for k in z.files}
    expected = {e["key"]: e for e in m["variables"] + m["constants"]}
    missing = sorted(set(expected) - set(weights))
    extra = sorted(set(weights) - set(expected))
    if missing or extra:
        raise ArtifactError(f"{wpath}: weights disagree with the manifest: "
                            f"missing {missing}, unexpected {extra}")
    for key, e in expected.items():
        a = weights[key]
        want_dtype = np.dtype(e["dtype"])  # tfc dtype names are numpy's
        if list(a.shape) != list(e["shape"]) or a.dtype != want_dtype:
            raise ArtifactError(f"{wpath}: weight {key} ({e.get('path', key)}) is {a.dtype}{list(a.shape)}, "
                                f"the manifest says {np.dtype(want_dtype)}{list(e['shape'])}")
    return weights


def load(path) -> "LoadedFunction":
    """The exported function at ``path``, callable like the compiled one."""
    path = os.fspath(path)
    m = _read_manifest(path)
    ipath = os.path.join(path, IR_FILE)
    if not os.path.isfile(ipath):
        raise ArtifactError(f"{path}: missing {IR_FILE}")
    with _reading(ipath), open(ipath, encoding="utf-8") as f:
        ir_text = f.read()
    weights = _read_weights(path, m)
    if _digest(ir_text, weights) != m["sha256"]:
        raise ArtifactError(f"{path}: the IR or the weights have changed since export "
                            "(SHA-256 mismatch with the manifest)")
    return LoadedFunction(m, ir_text, weights, path)


def _said(e: Exception, typed: bool = False) -> str:
    """What ``e`` says (after its class if ``typed``), never empty: a
    MemoryError has no message."""
    text = str(e)
    if not text:
        return type(e).__name__
    return f"{type(e).__name__}: {text}" if typed else text


def _check_ops(module, path):
    """The IR holds tensor-level (L1) ops only, as tfc.save writes: the
    backend's own ops (loops, arith outside a fused body) are not for files."""
    from tfc.dialects.tensor import loc_str

    for op in module.walk():  # parsed with tfc's context: every tfc.* op is one of its dialect's
        parent = op.parent_op()
        if op.name.startswith("tfc.") or op.name in ("builtin.module", "func.func", "func.return"):
            continue
        if op.name.startswith(("arith.", "math.")) and parent is not None and parent.name == "tfc.fused":
            continue
        raise ArtifactError(f"{path}: {IR_FILE} holds {op.name} at {loc_str(op)}, which is not an op "
                            "of tfc's tensor IR")


def _tree(pairs):
    """{'a': {'b': var}} from [('a/b', var)]: paths a tfc.Module walk reproduces."""
    root: dict = {}
    for p, v in pairs:
        node = root
        *parents, leaf = p.split("/")
        for k in parents:
            node = node.setdefault(k, {})
        node[leaf] = v
    return root


class LoadedFunction(Module):
    """An exported function: call it like the compiled function. Its
    variables (``.variables``) sit at their exported checkpoint paths, so
    ``tfc.train.Checkpoint(model=loaded)`` saves and restores them."""

    def __init__(self, manifest, ir_text, weights, path):
        super().__init__(name=manifest["name"])
        from tfc.core.registry import Spec
        from tfc.core.variable import Variable
        from tfc.dialects.tensor import ConstantOp, RefType, dense_from_numpy, loc_str, parse_module, spec_of
        from tfc.frontend.function import ConcreteFunction
        from xdsl.dialects import func
        from xdsl.dialects.builtin import StringAttr

        try:
            module = parse_module(ir_text, os.path.join(path, IR_FILE))
        except Exception as e:
            raise ArtifactError(f"{path}: {IR_FILE} does not parse or verify: {_said(e)}") from None
        _check_ops(module, path)
        funcs = {op.sym_name.data: op for op in module.walk() if isinstance(op, func.FuncOp)}
        name = manifest["name"]
        if name not in funcs:
            raise ArtifactError(f"{path}: {IR_FILE} has no function @{name}")
        specs = [Spec(tuple(s["shape"]), dtypes.as_dtype(s["dtype"])) for s in manifest["signature"]]
        var_specs = [Spec(tuple(v["shape"]), dtypes.as_dtype(v["dtype"])) for v in manifest["variables"]]
        arg_types = list(funcs[name].function_type.inputs.data)
        got = [("variable " if isinstance(t, RefType) else "") + str(spec_of(t)) for t in arg_types]
        want = [str(s) for s in specs] + [f"variable {s}" for s in var_specs]
        if got != want:
            raise ArtifactError(f"{path}: the IR's arguments ({', '.join(got)}) disagree with the "
                                f"manifest ({', '.join(want)})")
        for op in module.walk():
            if isinstance(op, ConstantOp) and "tfc.weight" in op.attributes:
                key = op.attributes["tfc.weight"]
                if not isinstance(key, StringAttr):
                    raise ArtifactError(f"{path}: {IR_FILE}: the constant at {loc_str(op)} has tfc.weight = "
                                        f"{key}, not a string naming a weight")
                key = key.data
                if key not in weights:
                    raise ArtifactError(f"{path}: the IR names weight {key!r}, which the manifest lacks")
                value = weights[key]
                if spec_of(op.value.type).shape != value.shape:
                    raise ArtifactError(f"{path}: weight {key} has shape {value.shape}, the IR "
                                        f"says {op.value.type}")
                op.properties["value"] = dense_from_numpy(value, spec_of(op.value.type).dtype)
                del op.attributes["tfc.weight"]
        self.manifest = manifest
        self.path = path
        self._vars = [Variable(weights[v["key"]], trainable=v["trainable"], name=v["name"])
                      for v in manifest["variables"]]
        self._paths = [v["path"] for v in manifest["variables"]]
        mask, static = [], []
        structure = _decode_structure(manifest["outputs"], mask, static, os.path.join(path, MANIFEST))
        returns = len(funcs[name].function_type.outputs.data)
        if sum(mask) != returns:
            raise ArtifactError(f"{path}: the manifest's outputs hold {sum(mask)} tensors, the IR's "
                                f"@{name} returns {returns}")
        self._concrete = ConcreteFunction(name, module, module, specs, self._vars, structure, mask, static)
        try:  # compiled now: IR that tfc cannot compile is an error of the file, not of a later call
            self._concrete.compiled
        except NotImplementedError as e:  # a limit of tfc, not a fault of the file
            e.add_note(f"  while loading {path}")
            raise
        except Exception as e:
            raise ArtifactError(f"{path}: {IR_FILE} does not compile ({_said(e, typed=True)})") from e

    # Checkpoint paths: the exported variables at their paths (Module walks this).
    def _tracked_attributes(self):
        return list(_tree(zip(self._paths, self._vars)).items())

    @property
    def signature(self):
        """The input TensorSpecs."""
        return self._concrete.structured_input_signature

    @property
    def concrete_function(self):
        return self._concrete

    def ir(self, stage="tensor", debuginfo=False) -> str:
        return self._concrete.ir(stage, debuginfo)

    def __call__(self, *args):
        """One argument per input TensorSpec; Python numbers and lists are
        converted to the signature's dtype."""
        from tfc.core.tensor import Tensor, constant

        specs = self._concrete.input_specs
        if len(args) != len(specs):
            raise TypeError(f"{self.manifest['name']}: takes {len(specs)} tensor arguments "
                            f"({', '.join(str(s) for s in specs)}), got {len(args)}")
        args = [a if isinstance(a, (Tensor, np.ndarray)) else constant(a, s.dtype) for a, s in zip(args, specs)]
        return self._concrete(*args)

    def __repr__(self):
        sig = ", ".join(str(s) for s in self._concrete.input_specs)
        return f"<tfc exported function {self.manifest['name']}({sig}) from {self.path!r}>"

