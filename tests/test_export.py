"""tfc.compile, tfc.save / tfc.load: round trips, checkpoints both ways, and
artifacts that are incomplete, too new or tampered with."""
import json
import os

import numpy as np
import pytest

import tfc
from tfc.export import ArtifactError

RNG = np.random.default_rng(0)


def mlp():
    hidden = tfc.layers.Dense(16, activation="relu")
    out = tfc.layers.Dense(3)

    class M(tfc.Module):
        def __init__(self):
            super().__init__()
            self.hidden, self.out = hidden, out

        def __call__(self, x):
            return self.out(self.hidden(x))

    m = M()
    m(tfc.zeros((1, 20)))
    return m


def test_compile_matches_get_concrete_function():
    def f(x, y):
        return tfc.tanh(x) * y + 1.0

    x, y = RNG.standard_normal((2, 5)).astype(np.float32), RNG.standard_normal(5).astype(np.float32)
    c = tfc.compile(f, tfc.TensorSpec((2, 5)), tfc.TensorSpec((5,)))
    ref = tfc.function(f).get_concrete_function(x, y)
    assert type(c) is type(ref) and c.ir("tensor") == ref.ir("tensor")
    np.testing.assert_array_equal(c(x, y).numpy(), ref(x, y).numpy())
    assert [n for n, _ in c.compile_times] == ["trace", "tfc-simplify", "tfc-fold", "tfc-cse", "tfc-dce",
                                                      "tfc-schedule-collectives"]


def test_compile_pass_selection():
    def f(x):
        return tfc.exp(x * 1.0)

    none = tfc.compile(f, tfc.TensorSpec((3,)), passes="none")
    assert "tfc.multiply" in none.ir("tensor")
    simplified = tfc.compile(f, tfc.TensorSpec((3,)), passes=["tfc-simplify", "tfc-dce"])
    assert "tfc.multiply" not in simplified.ir("tensor")
    np.testing.assert_allclose(none(tfc.constant([1.0, 2.0, 3.0])).numpy(), np.exp([1.0, 2.0, 3.0]), rtol=1e-6)
    with pytest.raises(ValueError, match="unknown pass 'nope'"):
        tfc.compile(f, tfc.TensorSpec((3,)), passes="tfc-cse,nope")


def test_compile_uses_input_signature_and_rejects_unknowns():
    @tfc.function(input_signature=[tfc.TensorSpec((None,), tfc.int32)])
    def f(x):
        return x + 1

    assert tfc.compile(f)(tfc.constant([1, 2])).numpy().tolist() == [2, 3]
    with pytest.raises(TypeError, match="no input_signature"):
        tfc.compile(lambda x: x)
    assert ".visible .entry" in tfc.compile(f, tfc.TensorSpec([2], tfc.int32), target="cuda").ptx
    with pytest.raises(ValueError, match="static int8 quantization needs calibration data"):
        tfc.compile(f, quantize="int8")


def test_round_trip_structures_dtypes_and_constants(tmp_path):
    table = RNG.standard_normal((40, 10)).astype(np.float32)  # large: goes to weights.npz

    @tfc.function(input_signature=[tfc.TensorSpec((None, 40)), tfc.TensorSpec((), tfc.int32)])
    def f(x, k):
        y = x @ tfc.constant(table)
        return {"y": y, "pos": (y > 0, k * 2), "label": "scores", "n": 3}

    c = tfc.compile(f)
    path = tfc.save(c, tmp_path / "f")
    manifest = json.loads((tmp_path / "f" / "manifest.json").read_text())
    assert manifest["constants"][0]["shape"] == [40, 10]
    assert manifest["signature"] == [{"shape": [None, 40], "dtype": "float32"}, {"shape": [], "dtype": "int32"}]
    assert 'tfc.weight = "const_0"' in open(os.path.join(path, "function.mlir")).read()
    loaded = tfc.load(path)
    x = RNG.standard_normal((3, 40)).astype(np.float32)
    got, want = loaded(x, 5), f(x, tfc.constant(5))
    assert list(got) == ["y", "pos", "label", "n"] and got["label"] == "scores" and got["n"] == 3
    np.testing.assert_array_equal(got["y"].numpy(), want["y"].numpy())
    np.testing.assert_array_equal(got["pos"][0].numpy(), want["pos"][0].numpy())
    assert isinstance(got["pos"], tuple) and int(got["pos"][1]) == 10
    assert [str(s) for s in loaded.signature] == [str(s) for s in c.structured_input_signature]


def test_the_ir_file_parses_with_the_dialect(tmp_path):
    from tfc.dialects.tensor import parse_module

    m = mlp()
    c = tfc.compile(tfc.function(lambda x: m(x)), tfc.TensorSpec((2, 20)))
    path = tfc.save(c, tmp_path / "m", root=m)
    text = open(os.path.join(path, "function.mlir")).read()
    parse_module(text)  # raises if not valid tfc IR
    assert "!tfc.ref<tensor<20x16xf32>>" in text


def test_variables_are_exposed_and_updated_by_calls(tmp_path):
    v = tfc.Variable([1.0, 2.0], name="counter")

    @tfc.function(input_signature=[tfc.TensorSpec((2,))])
    def step(x):
        v.assign_add(x)
        return v * 1.0

    loaded = tfc.load(tfc.save(tfc.compile(step), tmp_path / "s"))
    assert [var.name for var in loaded.variables] == ["counter"]
    loaded([1.0, 1.0])
    out = loaded([1.0, 1.0])
    np.testing.assert_array_equal(out.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(loaded.variables[0].numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])  # the original is untouched


def test_eager_checkpoint_loads_into_exported_function_and_back(tmp_path):
    m = mlp()
    predict = tfc.function(lambda x: m(x), input_signature=[tfc.TensorSpec((None, 20))])
    loaded = tfc.load(tfc.save(tfc.compile(predict), tmp_path / "export", root=m))
    x = RNG.standard_normal((5, 20)).astype(np.float32)

    # train eagerly a little, checkpoint, restore into the exported function
    opt = tfc.optimizers.SGD(0.1)
    for _ in range(3):
        opt.minimize(lambda: tfc.reduce_mean(m(tfc.constant(x)) ** 2), m.trainable_variables)
    ckpt = tfc.train.Checkpoint(model=m).save(str(tmp_path / "eager"))
    before = loaded(x).numpy()
    assert not np.allclose(before, m(x).numpy())
    tfc.train.Checkpoint(model=loaded).restore(ckpt).assert_consumed()
    np.testing.assert_allclose(loaded(x).numpy(), m(x).numpy(), rtol=1e-6)

    # and the other way: change the exported weights, checkpoint them, restore eagerly
    for var in loaded.variables:
        var.assign(var * 0.5)
    ckpt2 = tfc.train.Checkpoint(model=loaded).save(str(tmp_path / "exported"))
    fresh = mlp()
    tfc.train.Checkpoint(model=fresh).restore(ckpt2).assert_consumed()
    np.testing.assert_allclose(fresh(x).numpy(), loaded(x).numpy(), rtol=1e-6)


# -- bad artifacts --------------------------------------------------------------------


@pytest.fixture
def artifact(tmp_path):
    w = tfc.Variable(RNG.standard_normal((3, 2)).astype(np.float32), name="w")

    @tfc.function(input_signature=[tfc.TensorSpec((4, 3))])
    def f(x):
        return x @ w

    return tfc.save(tfc.compile(f), tmp_path / "a")


@pytest.mark.parametrize("name", ["manifest.json", "function.mlir", "weights.npz"])
def test_missing_file(artifact, name):
    os.remove(os.path.join(artifact, name))
    with pytest.raises(ArtifactError, match=f"missing {name}"):
        tfc.load(artifact)


def test_missing_directory(tmp_path):
    with pytest.raises(ArtifactError, match="no such exported function directory"):
        tfc.load(tmp_path / "nothing")


def edit_manifest(artifact, fn):
    p = os.path.join(artifact, "manifest.json")
    m = json.load(open(p))
    fn(m)
    json.dump(m, open(p, "w"))


def test_newer_format_version(artifact):
    edit_manifest(artifact, lambda m: m.update(format_version=99))
    with pytest.raises(ArtifactError, match="format version 99 by a newer tfc"):
        tfc.load(artifact)


def test_weight_shape_disagrees_with_manifest(artifact):
    edit_manifest(artifact, lambda m: m["variables"][0].update(shape=[3, 5]))
    with pytest.raises(ArtifactError, match=r"weight var_0 \(w\) is float32\[3, 2\], the manifest says float32\[3, 5\]"):
        tfc.load(artifact)


def test_signature_disagrees_with_ir(artifact):
    def change(m):
        m["signature"][0]["shape"] = [5, 3]
    edit_manifest(artifact, change)
    with pytest.raises(ArtifactError, match="disagree with the manifest"):
        tfc.load(artifact)


def test_tampered_weights_fail_the_hash(artifact):
    p = os.path.join(artifact, "weights.npz")
    with np.load(p) as z:
        weights = {k: z[k] for k in z.files}
    weights["var_0"] = weights["var_0"] + 1
    np.savez(p, **weights)
    with pytest.raises(ArtifactError, match="SHA-256 mismatch"):
        tfc.load(artifact)


def test_tampered_ir_fails_the_hash(artifact):
    p = os.path.join(artifact, "function.mlir")
    text = open(p).read().replace("tfc.matmul", "tfc.add")
    open(p, "w").write(text)
    with pytest.raises(ArtifactError, match="SHA-256 mismatch"):
        tfc.load(artifact)


def _object_npz(path):
    np.savez(path, var_0=np.array([{"evil": 1}], dtype=object))


def _pickle_file(path):
    import pickle

    with open(path, "wb") as f:
        pickle.dump({"var_0": np.zeros((3, 2), np.float32)}, f)


@pytest.mark.parametrize("write, message", [
    (_object_npz, "an object array (pickled Python objects), which tfc never writes and refuses to load: "
                  "unpickling would run code from the file"),
    (_pickle_file, "not an .npz archive of arrays (numpy would read it as a pickle, which tfc never loads)"),
    (lambda p: open(p, "wb").write(b"junk"), "not an .npz archive of arrays"),
])
def test_pickled_weights_are_refused_saying_what_is_wrong(artifact, write, message):
    """An object array (or a whole pickle) is data tfc never writes: the error
    says so, and never advises numpy's allow_pickle=True."""
    p = os.path.join(artifact, "weights.npz")
    write(p)
    with pytest.raises(ArtifactError) as e:
        tfc.load(artifact)
    assert str(e.value).startswith(f"{p}: {message}")
    assert "allow_pickle" not in str(e.value)


@pytest.mark.parametrize("member", [True, False])
def test_pickled_checkpoint_is_refused_saying_what_is_wrong(tmp_path, member):
    v = tfc.Variable([1.0, 2.0])
    path = tfc.train.Checkpoint(v=v).save(str(tmp_path / "ckpt"))
    if member:  # the checkpoint's own marker and keys, one value an object array
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        key = next(k for k in arrays if "v" in k and arrays[k].dtype == np.float32)
        arrays[key] = np.array([{"evil": 1}], dtype=object)
        np.savez(path, **arrays)
    else:
        _pickle_file(path)
    message = r"\(an object array \(pickled Python objects\), which tfc never writes and refuses to load" if member \
        else r"is not a tfc checkpoint \(not an .npz archive of arrays"
    with pytest.raises(ValueError, match=message) as e:
        tfc.train.Checkpoint(v=v).restore(path)
    assert "allow_pickle" not in str(e.value) and path in str(e.value)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_save_rejects_non_compiled():
    with pytest.raises(TypeError, match="expected a compiled function"):
        tfc.save(lambda x: x, "/tmp/never")


def test_save_is_atomic_and_replaces_an_earlier_artifact(tmp_path, monkeypatch):
    """A failure while writing leaves the earlier artifact whole and no
    temporary directory behind; a later save replaces it."""
    spec = tfc.TensorSpec((3,))
    path = tfc.save(tfc.compile(lambda x: x * 2.0, spec), tmp_path / "a")
    before = sorted(os.listdir(path))

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", full_disk)
    with pytest.raises(OSError, match="No space"):
        tfc.save(tfc.compile(lambda x: x + 10.0, spec), path)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["a"]
    assert sorted(os.listdir(path)) == before
    np.testing.assert_array_equal(tfc.load(path)(np.ones(3, np.float32)).numpy(), [2.0, 2.0, 2.0])
    tfc.save(tfc.compile(lambda x: x + 10.0, spec), path)
    np.testing.assert_array_equal(tfc.load(path)(np.ones(3, np.float32)).numpy(), [11.0, 11.0, 11.0])
    assert sorted(os.listdir(tmp_path)) == ["a"]


def _truncate(name, keep=None):
    def damage(artifact):
        p = os.path.join(artifact, name)
        data = open(p, "rb").read()
        open(p, "wb").write(data[:len(data) // 2 if keep is None else keep])
    return damage


def _manifest(fn):
    return lambda artifact: edit_manifest(artifact, fn)


def _npy_weights(artifact):
    with open(os.path.join(artifact, "weights.npz"), "wb") as f:
        np.save(f, np.zeros(3))


@pytest.mark.parametrize("damage, message", [
    (_truncate("weights.npz"), r"weights.npz: damaged or unreadable \(BadZipFile"),
    (_truncate("weights.npz", 0), r"weights.npz: damaged or unreadable \(EOFError"),
    (_truncate("manifest.json"), r"manifest.json: damaged or unreadable \(JSONDecodeError"),
    (lambda a: open(os.path.join(a, "function.mlir"), "wb").write(b"\xff\xfe"),
     r"function.mlir: damaged or unreadable \(UnicodeDecodeError"),
    (_npy_weights, "weights.npz: a single .npy array"),
    (_manifest(lambda m: m.update(signature=5)), r"manifest.json: signature is 5, expected a list"),
    (_manifest(lambda m: m["signature"][0].update(dtype="complex7")),
     r"manifest.json: signature\[0\].dtype is 'complex7', expected one of bool"),
    (_manifest(lambda m: m["signature"][0].update(shape="4x3")), r"signature\[0\].shape is '4x3'"),
    (_manifest(lambda m: m["variables"][0].update(dtype="bogus")), r"variables\[0\].dtype is 'bogus'"),
    (_manifest(lambda m: m["variables"][0].pop("key")), r"manifest.json: variables\[0\] has no 'key'"),
    (_manifest(lambda m: m["variables"].__setitem__(0, 7)), r"variables\[0\] is 7, expected an object"),
    (_manifest(lambda m: m.update(name=3)), "manifest.json: name is 3, expected a string"),
    (_manifest(lambda m: m.update(format_version=0)), "format_version 0 is not a version tfc ever wrote"),
    (_manifest(lambda m: m.pop("format_version")), "manifest.json: format_version is missing"),
    (_manifest(lambda m: m.update(format_version="abc")), "format_version must be an integer, got 'abc'"),
    (_manifest(lambda m: m.update(format_version="1")), "format_version must be an integer, got '1'"),
    (_manifest(lambda m: m.update(format_version=float("nan"))), "format_version must be an integer, got nan"),
    (_manifest(lambda m: m.update(format_version=1.0)), "format_version must be an integer, got 1.0"),
    (_manifest(lambda m: m.update(format_version=True)), "format_version must be an integer, got True"),
    (_manifest(lambda m: m.update(format_version=None)), "format_version must be an integer, got None"),
    (_manifest(lambda m: m.update(outputs=[])), r"manifest.json: bad output entry \[\]"),
    (_manifest(lambda m: m.update(outputs={"dict": 5})), "manifest.json: bad output entry"),
    (_manifest(lambda m: m.update(outputs={"tuple": [{"tensor": True}, {"tensor": True}]})),
     "the manifest's outputs hold 2 tensors, the IR's @f returns 1"),
])
def test_damaged_artifact_is_an_artifact_error_naming_the_file(artifact, damage, message):
    damage(artifact)
    with pytest.raises(ArtifactError, match=message) as err:
        tfc.load(artifact)
    assert str(err.value).startswith(artifact)


def test_load_compiles_at_once(artifact, monkeypatch):
    """IR that does not compile is an ArtifactError of the file at load (not an
    error of a later call); a limit of tfc stays a NotImplementedError, noted
    with the file."""
    import tfc.backends.numpy as backend

    def fails(exc):
        def compile_module(*args, **kwargs):
            raise exc
        return compile_module

    monkeypatch.setenv("TFC_CACHE_DIR", "")
    monkeypatch.setattr(backend, "compile_module", fails(KeyError("x")))
    with pytest.raises(ArtifactError, match=r"function.mlir does not compile \(KeyError: 'x'\)") as e:
        tfc.load(artifact)
    assert str(e.value).startswith(artifact)
    monkeypatch.setattr(backend, "compile_module", fails(NotImplementedError("conv3d in the numpy backend")))
    with pytest.raises(NotImplementedError, match="conv3d") as e:
        tfc.load(artifact)
    assert e.value.__notes__ == [f"  while loading {artifact}"]


# Floats that xDSL's printer writes as hexadecimal bits (inf, NaN, and values
# with no exact short decimal form): its parser read the bits as the number, so
# a saved function computed with 2139095040.0 where it had inf.
HEX_PRINTED = [np.inf, -np.inf, np.nan, 123456789.0, 16777217.0, 1e-45, 3.4e38, -0.0, 1.0000001]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_every_float_constant_survives_print_and_parse(dtype):
    from tfc.dialects.tensor import numpy_from_dense, parse_module, print_ir

    def f(x):
        return x * tfc.constant(HEX_PRINTED, dtype=dtype) + tfc.constant(np.inf, dtype=dtype)

    text = print_ir(tfc.function(f).get_concrete_function(tfc.TensorSpec([len(HEX_PRINTED)], dtype)).module)
    consts = [numpy_from_dense(op.value) for op in parse_module(text).walk() if op.name == "tfc.constant"]
    want = np.array(HEX_PRINTED, dtype)
    assert any(c.shape == want.shape and np.array_equal(c, want, equal_nan=True) for c in consts), consts
    assert any(c.shape == () and c == np.inf for c in consts), consts


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_saved_function_keeps_non_finite_and_hex_printed_constants(tmp_path, dtype):
    def f(x):
        y = x * tfc.constant(HEX_PRINTED, dtype=dtype)
        return tfc.where(y > float("inf"), y, y + float("-inf")), tfc.reduce_sum(x / 0.0)

    c = tfc.compile(tfc.function(f), tfc.TensorSpec([len(HEX_PRINTED)], dtype))
    x = tfc.constant(np.linspace(-2, 2, len(HEX_PRINTED)), dtype=dtype)
    loaded = tfc.load(tfc.save(c, str(tmp_path / "a")))
    for got, want in zip(loaded(x), f(x)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_hex_float_literal_that_is_not_bits_of_the_type_is_an_error():
    from tfc.dialects.tensor import parse_module

    for lit in ("-0x7f800000", "0x17f800000"):
        text = ("func.func @f() -> tensor<f32> {\n"
                f"  %0 = tfc.constant dense<{lit}> : tensor<f32>\n  func.return %0 : tensor<f32>\n}}\n")
        with pytest.raises(Exception, match="not the bits of a f32"):
            parse_module(text)


def _small():
    return tfc.compile(lambda x: x * 2.0, tfc.TensorSpec((3,)))


def test_save_refuses_a_directory_that_is_not_an_export(tmp_path):
    dest = tmp_path / "proj"
    dest.mkdir()
    (dest / "model.py").write_text("precious")
    with pytest.raises(FileExistsError, match="proj is a directory that is not a tfc export"):
        tfc.save(_small(), str(dest))
    assert sorted(os.listdir(dest)) == ["model.py"] and (dest / "model.py").read_text() == "precious"
    assert sorted(os.listdir(tmp_path)) == ["proj"]  # no staging directory left behind
    tfc.save(_small(), str(dest / "sub"))  # an export beside the user's files is fine
    (dest / "sub" / "notes.txt").write_text("mine")  # an export the user added to is theirs
    with pytest.raises(FileExistsError):
        tfc.save(_small(), str(dest / "sub"))
    assert (dest / "sub" / "notes.txt").read_text() == "mine"


def test_save_replaces_an_empty_directory_or_an_earlier_export(tmp_path):
    dest = tmp_path / "a"
    dest.mkdir()
    tfc.save(_small(), str(dest))
    tfc.save(_small(), str(dest))
    assert sorted(os.listdir(dest)) == ["function.mlir", "manifest.json", "weights.npz"]
    assert sorted(os.listdir(tmp_path)) == ["a"]


def test_saved_directory_has_the_mode_of_a_plain_mkdir(tmp_path):
    old = os.umask(0o022)
    try:
        tfc.save(_small(), str(tmp_path / "a"))
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "a").st_mode & 0o777 == 0o755


def test_save_through_a_link_to_a_directory_keeps_the_link(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink("real", tmp_path / "link")
    for _ in range(2):  # into the empty directory, then over the export
        tfc.save(_small(), str(tmp_path / "link"))
        assert os.path.islink(tmp_path / "link") and sorted(os.listdir(tmp_path)) == ["link", "real"]
        assert "manifest.json" in os.listdir(tmp_path / "real")
    tfc.load(str(tmp_path / "link"))
