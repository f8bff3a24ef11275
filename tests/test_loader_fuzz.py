"""Hostile artifacts: tfc.load must never run code from the files it reads.

An exported function is edited the way an attacker would (function names,
locations, print and assert strings, SSA names, attribute values, dtypes,
shapes, manifest fields), its SHA-256 recomputed so that the loader gets past
the integrity check. Each load, and a call of what it loads, either gives the
results of the untouched artifact or raises an ArtifactError naming the
artifact; the injected code, which would touch a sentinel file and set a flag
in builtins, never runs.

The fuzz is seeded: a few dozen artifacts in CI, more by hand with
``TFC_FUZZ_N=2000 pytest tests/test_loader_fuzz.py`` (``TFC_FUZZ_SEED`` picks
the seed).
"""
import ast
import builtins
import json
import os
import random

import numpy as np
import pytest

import tfc
from tfc.export import ArtifactError, _digest

N = int(os.environ.get("TFC_FUZZ_N", "40"))
SEED = int(os.environ.get("TFC_FUZZ_SEED", "15"))
X = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    monkeypatch.setenv("TFC_CACHE_DIR", "")  # every artifact compiled, not read from a cache


def export(path):
    w = tfc.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")

    @tfc.function(input_signature=[tfc.TensorSpec((4, 3))])
    def f(x):
        tfc.print("sum:", tfc.reduce_sum(x, axis=0))
        assert tfc.reduce_all(x > -1000.0), "x too small"
        return {"y": tfc.nn.relu(x @ w) + 1.0, "n": 3}

    return tfc.save(tfc.compile(f), path)


def files(path):
    ir = open(os.path.join(path, "function.mlir"), encoding="utf-8").read()
    manifest = json.load(open(os.path.join(path, "manifest.json")))
    with np.load(os.path.join(path, "weights.npz")) as z:
        weights = {k: z[k] for k in z.files}
    return ir, manifest, weights


def rewrite(path, ir, manifest, weights):
    """Write the files back, the hash recomputed as an attacker would."""
    with open(os.path.join(path, "function.mlir"), "w", encoding="utf-8") as f:
        f.write(ir)
    np.savez(os.path.join(path, "weights.npz"), **weights)
    manifest = dict(manifest, sha256=_digest(ir, weights))
    with open(os.path.join(path, "manifest.json"), "w") as f:
        json.dump(manifest, f)


def mlir_string(s: str) -> str:
    """``s`` as an MLIR string literal."""
    return '"' + "".join(c if c.isprintable() and c not in '"\\' else
                         "".join(f"\\{b:02X}" for b in c.encode()) for c in s) + '"'


class Sentinel:
    def __init__(self, tmp_path):
        self.file = tmp_path / "INJECTED"
        builtins.__dict__.pop("TFC_INJECTED", None)
        # a statement that records that it ran
        self.code = (f"__import__('pathlib').Path({str(self.file)!r}).touch();"
                     "__import__('builtins').__dict__.__setitem__('TFC_INJECTED', 1)")

    def ran(self) -> bool:
        return self.file.exists() or getattr(builtins, "TFC_INJECTED", None) is not None


def injections(code):
    """Names and strings that break out of a Python literal, comment or name."""
    return [
        f'x"""\n{code}\n"""',
        f"x'''\n{code}\n'''",
        f'x")\n{code}\n#',
        f"x')\n{code}\n#",
        f"x\n{code}\n",
        f"x\r{code}\r",
        f"x():\n {code}\ndef y",
        f"x(*a):\n    {code}\n    return a\n    def y",
        f"x\\\n{code}",
        "{0.__class__.__init__.__globals__}",
    ]


def check(path, baseline, sentinel, must_work=False):
    """Load and call: the baseline results or (unless ``must_work``) an
    ArtifactError naming ``path`` (a NotImplementedError noting it)."""
    try:
        loaded = tfc.load(path)
        got = loaded(X)
    except ArtifactError as e:
        assert str(e).startswith(str(path)), e
        assert not must_work, e
    except NotImplementedError as e:  # a limit of tfc's, noted with the file
        assert f"  while loading {path}" in e.__notes__, e
        assert not must_work, e
    else:
        assert got["n"] == baseline["n"]
        np.testing.assert_array_equal(got["y"].numpy(), baseline["y"].numpy())
        assert_only_literals(loaded.concrete_function.source)
    assert not sentinel.ran(), "code from the artifact ran"


def assert_only_literals(source):
    """The injected text is in string literals only, also where it would not
    have run (a branch not taken): no name of it in the code, and every name
    ASCII (names the emitter made)."""
    tree = ast.parse(source)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert not names & {"__import__", "open", "x", "y", "a"}, names
    assert all(n.isascii() for n in names), names


@pytest.fixture
def base(tmp_path):
    path = export(tmp_path / "a")
    return path, files(path), tfc.load(path)(X)


def rename_function(ir, manifest, name):
    return ir.replace("func.func @f(", f"func.func @{mlir_string(name)}(", 1), dict(manifest, name=name)


@pytest.mark.parametrize("which", range(len(injections(""))))
def test_function_name_runs_no_code(base, tmp_path, which):
    """The exploit: a function name that closes the generated module's
    docstring (or a line) and runs a statement when the module is loaded."""
    path, (ir, manifest, weights), baseline = base
    sentinel = Sentinel(tmp_path)
    ir, manifest = rename_function(ir, manifest, injections(sentinel.code)[which])
    rewrite(path, ir, manifest, weights)
    loaded = tfc.load(path)
    got = loaded(X)  # a name is only a name: the function works
    np.testing.assert_array_equal(got["y"].numpy(), baseline["y"].numpy())
    assert not sentinel.ran()
    assert_only_literals(loaded.concrete_function.source)


@pytest.mark.parametrize("name", ["c0", "k0", "lib1", "attrs1", "kernel0", "spec0", "views", "np", "rt",
                                  "R", "K", "build", "_SITES", "return", "class", "1f", "ﬁ", "x²", "é", "a b", "a\x00b", "a\nb"])
def test_function_names_that_are_not_plain_identifiers(base, name):
    """Names the generated module uses itself, keywords, and names Python
    would fold (NFKC) or refuse: the function still computes the same."""
    path, (ir, manifest, weights), baseline = base
    ir, manifest = rename_function(ir, manifest, name)
    rewrite(path, ir, manifest, weights)
    got = tfc.load(path)(X)
    np.testing.assert_array_equal(got["y"].numpy(), baseline["y"].numpy())


@pytest.mark.parametrize("field", ["format", "message", "location"])
def test_strings_run_no_code(base, tmp_path, capfd, field):
    """Print formats, assert messages and locations reach the generated module
    as literals only; a format that is not plain ``{}`` fields is refused."""
    path, (ir, manifest, weights), baseline = base
    sentinel = Sentinel(tmp_path)
    for text in injections(sentinel.code):
        lit = mlir_string(text)
        edited = {"format": lambda: ir.replace('format = "sum: {}\\0A"', f"format = {lit}"),
                  "message": lambda: ir.replace('message = "x too small"', f"message = {lit}"),
                  "location": lambda: ir.replace(f'loc({mlir_string(__file__)}', f"loc({lit}")}[field]()
        assert edited != ir
        rewrite(path, edited, manifest, weights)
        check(path, baseline, sentinel)


@pytest.mark.parametrize("filename", ["/home/josé/model.py", "/tmp/ﬁ\u2028.py", 'a "quoted"\nname\\.py',
                                      "C:\\Users\\x\\m.py", "\U0001F600.py"])
def test_locations_with_any_characters_load(base, filename):
    """A location is the user's file name, whatever it holds: loads and runs."""
    path, (ir, manifest, weights), baseline = base
    edited = ir.replace(f"loc({mlir_string(__file__)}", f"loc({mlir_string(filename)}")
    assert edited != ir
    rewrite(path, edited, manifest, weights)
    loaded = tfc.load(path)
    np.testing.assert_array_equal(loaded(X)["y"].numpy(), baseline["y"].numpy())
    from tfc.dialects.tensor import loc_str

    assert any(loc_str(op).startswith(f"{filename}:") for op in loaded.concrete_function.module.walk())


@pytest.mark.parametrize("fmt, message", [
    ("{0.__class__.__mro__}", r"has a field \{0.__class__.__mro__\}, not a plain"),
    ("{0[0]}", r"has a field \{0\[0\]\}"),
    ("{x}", r"has a field \{x\}"),
    ("{0}", r"has a field \{0\}"),
    ("{1}", r"has a field \{1\}"),
    ("{!a}", r"has a field \{!a\}"),
    ("{:{0.__class__.__name__}}", r"has a field \{:\{0.__class__.__name__\}\}"),
    ("{0:{0.__class__.__name__[0]}>40}", r"has a field \{0:\{0.__class__.__name__\[0\]\}>40\}"),
    ("{:>9000000000}", r"has a field \{:>9000000000\}"),
    ("{} {}", r"has 2 fields for its 1 values"),
    ("sum", r"has 0 fields for its 1 values"),
    ("{", r"bad format '\{'"),
])
def test_formats_other_than_plain_fields_are_refused(base, fmt, message):
    """A print format from a file is str.format'ted on the values at run time:
    only what tracing writes (one plain {} per value) is accepted; an index,
    attribute or item access, a conversion, a format spec (nested fields, a
    width of gigabytes) or a count other than the values' is refused at load,
    naming the file and the op's line."""
    path, (ir, manifest, weights), _ = base
    rewrite(path, ir.replace('"sum: {}\\0A"', mlir_string(fmt)), manifest, weights)
    with pytest.raises(ArtifactError, match=message) as e:
        tfc.load(path)
    assert str(e.value).startswith(str(path)) and f"{__file__}:" in str(e.value)


def test_backend_ops_in_the_file_are_refused(base):
    """The loops dialect is the backend's own: not accepted from a file."""
    path, (ir, manifest, weights), _ = base
    ir = ir.replace("%0 = tfc.constant dense<-1.000000e+03> : tensor<f32>",
                    "%0 = tfc.constant dense<-1.000000e+03> : tensor<f32>\n"
                    '    loops.print {format = "hi"}')
    rewrite(path, ir, manifest, weights)
    with pytest.raises(ArtifactError, match="holds loops.print .* not an op of tfc's tensor IR"):
        tfc.load(path)


def test_a_huge_dense_literal_is_refused_before_it_is_expanded(base):
    """A line of IR must not make the parser expand a splat into 2^64
    elements (or 4 GB): refused by size, naming the file and line."""
    path, (ir, manifest, weights), _ = base
    ir = ir.replace("%0 = tfc.constant dense<-1.000000e+03> : tensor<f32>",
                    "%9 = tfc.constant dense<2.0> : tensor<4000000000x4000000000xf32>\n"
                    "    %0 = tfc.constant dense<-1.000000e+03> : tensor<f32>")
    rewrite(path, ir, manifest, weights)
    with pytest.raises(ArtifactError, match=r"(?s)function.mlir:3:\d+\n.*dense literal of 16,000,000,000,000,000,000 "
                                            r"elements \(64,000,000,000,000,000,000 B\) is over the limit"):
        tfc.load(path)


@pytest.mark.parametrize("where", ["parse", "compile"])
def test_an_error_without_a_message_still_says_what_failed(base, monkeypatch, where):
    """A MemoryError has no message: the ArtifactError names it."""
    path = base[0]

    def fail(*args, **kwargs):
        raise MemoryError()

    if where == "parse":
        monkeypatch.setattr("tfc.dialects.tensor.parse_module", fail)
    else:
        monkeypatch.setattr("tfc.backends.numpy.emitter.emit_function", fail)
    with pytest.raises(ArtifactError) as e:
        tfc.load(path)
    assert str(e.value) == f"{path}: function.mlir " + {
        "parse": "does not parse or verify: MemoryError", "compile": "does not compile (MemoryError)"}[where]


@pytest.mark.parametrize("depth, message", [(150, "outputs nested deeper than 100 levels"),
                                            (50000, r"damaged or unreadable \(RecursionError")])
def test_deeply_nested_outputs_are_an_artifact_error(base, depth, message):
    """Nesting past what json or the decoder recurse into: an ArtifactError
    naming the manifest, not a RecursionError."""
    path, (ir, manifest, weights), _ = base
    rewrite(path, ir, dict(manifest, outputs="OUT"), weights)  # the hash recomputed
    mpath = os.path.join(path, "manifest.json")
    text = open(mpath).read().replace('"OUT"', '{"list": [' * depth + '{"tensor": true}' + "]}" * depth)
    with open(mpath, "w") as f:
        f.write(text)
    with pytest.raises(ArtifactError, match="manifest.json: " + message) as e:
        tfc.load(path)
    assert str(e.value).startswith(str(path))


def test_saving_outputs_nested_too_deeply_is_refused(tmp_path):
    def f(x):
        out = x
        for _ in range(101):
            out = [out]
        return out

    c = tfc.compile(f, tfc.TensorSpec((2,)))
    with pytest.raises(TypeError, match="nested deeper than 100 levels"):
        tfc.save(c, tmp_path / "a")


@pytest.mark.parametrize("attr", ["7 : i64", "{a = 1}", "[\"const_0\"]"])
def test_a_weight_key_that_is_not_a_string_is_an_artifact_error(tmp_path, attr):
    w = np.arange(300, dtype=np.float32)

    @tfc.function(input_signature=[tfc.TensorSpec((None, 300))])
    def f(x):
        return x + tfc.constant(w)

    path = tfc.save(tfc.compile(f), tmp_path / "a")
    ir, manifest, weights = files(path)
    assert 'tfc.weight = "const_0"' in ir
    rewrite(path, ir.replace('tfc.weight = "const_0"', f"tfc.weight = {attr}"), manifest, weights)
    with pytest.raises(ArtifactError, match=r"function.mlir: the constant at .*test_loader_fuzz.py:\d+ has "
                                            r"tfc.weight = .*, not a string naming a weight"):
        tfc.load(path)


# -- the fuzz ---------------------------------------------------------------------------

PIECES = ['"', "'", '"""', "'''", "\\", "\n", "\r", "\t", "\x00", "#", "{", "}", "{}", "{0}", "{{", "}}",
          "(", ")", ":", ";", ",", " ", "$", ".", "-", "@", "%", "é", "ﬁ", "²", "\u2028", "\U0001F600",
          "import os", "def", "return", "lambda", "c0", "k0", "lib1", "views", "np", "rt", "_SITES",
          "__import__", "x", "1", "\\0A", "\\22"]


def hostile(rng, code):
    if rng.random() < 0.4:
        return rng.choice(injections(code))
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 6)))


def _sub(text, old, new):
    return text.replace(old, new) if old in text else None


MUTATIONS = {
    # strings of the IR
    "function name": lambda rng, s, ir, m: rename_function(ir, m, hostile(rng, s)),
    "location": lambda rng, s, ir, m: (ir.replace(f"loc({mlir_string(__file__)}",
                                                  f"loc({mlir_string(hostile(rng, s))}"), m),
    "format": lambda rng, s, ir, m: (ir.replace('"sum: {}\\0A"', mlir_string(hostile(rng, s))), m),
    "message": lambda rng, s, ir, m: (ir.replace('"x too small"', mlir_string(hostile(rng, s))), m),
    "stream": lambda rng, s, ir, m: (ir.replace('stream = "stderr"', f"stream = {mlir_string(hostile(rng, s))}"),
                                     m),
    "ssa name": lambda rng, s, ir, m: (ir.replace("%x", "%" + "".join(
        rng.choice("aZ_$.-09") for _ in range(rng.randint(1, 8))).lstrip("0123456789") + "q"), m),
    # attribute values of another type or range
    "attribute": lambda rng, s, ir, m: (ir.replace(rng.choice([
        "axis = array<i64: 0>", "keepdims = false", "summarize = 3 : i64", "transpose_a = false"]),
        rng.choice(["axis = " + mlir_string(hostile(rng, s)), "keepdims = " + mlir_string(hostile(rng, s)),
                    "summarize = -7 : i64", "axis = array<i64: 9>", "transpose_a = 3 : i64",
                    "keepdims = array<i64: 1>", "summarize = 99999999999 : i64"])), m),
    "ir dtype": lambda rng, s, ir, m: (ir.replace("tensor<4x3xf32>", rng.choice(
        ["tensor<4x3xi32>", "tensor<4x3x!f>", "tensor<4x3xf64>", "tensor<?x3xf32>", "tensor<4x-3xf32>"]), 1), m),
    # the manifest
    "manifest dtype": lambda rng, s, ir, m: (ir, {**m, "signature": [
        {**m["signature"][0], "dtype": rng.choice([hostile(rng, s), "object", "O", "float32 ", 7, None])}]}),
    "manifest shape": lambda rng, s, ir, m: (ir, {**m, "signature": [
        {**m["signature"][0], "shape": rng.choice([[-4, 3], [4.0, 3], [True, 3], ["4", 3], [4, [3]], [2 ** 70, 3],
                                                   [None, 3], [4], hostile(rng, s), None])}]}),
    "manifest variable": lambda rng, s, ir, m: (ir, {**m, "variables": [
        {**m["variables"][0], rng.choice(["name", "path", "key", "dtype", "trainable"]): hostile(rng, s)}]}),
    "manifest field": lambda rng, s, ir, m: (ir, {**m, rng.choice(
        ["name", "target", "passes", "format_version", "outputs", "constants", "files"]): rng.choice(
        [hostile(rng, s), float("nan"), None, 1e308, -1, [hostile(rng, s)], {hostile(rng, s): 1}])}),
}


def test_fuzz_hostile_artifacts(tmp_path):
    """N random hostile edits (TFC_FUZZ_N): results as exported, or an
    ArtifactError naming the artifact (never for a name or a location);
    never the injected code."""
    path = export(tmp_path / "a")
    original = files(path)
    baseline = tfc.load(path)(X)
    sentinel = Sentinel(tmp_path)
    rng = random.Random(SEED)
    kinds = sorted(MUTATIONS)
    outcomes = {}
    for i in range(N):
        kind = kinds[i % len(kinds)]
        ir, manifest, weights = original
        ir, manifest = MUTATIONS[kind](rng, sentinel.code, ir, manifest)
        rewrite(path, ir, manifest, weights)
        # names and locations are only names: any non-empty one works
        must_work = kind in ("location", "ssa name", "stream") or kind == "function name" and manifest["name"]
        try:
            check(path, baseline, sentinel, must_work)
        except Exception as e:
            raise AssertionError(f"fuzz case {i} ({kind}, seed {SEED}): {e}\nmanifest: {manifest}\nIR:\n{ir}") from e
        outcomes[kind] = outcomes.get(kind, 0) + 1
    assert sum(outcomes.values()) == N


@pytest.mark.parametrize("text", injections("x = 1") + ['{0.__class__} {} {{x}}', "\\ \x00 \u2028 é ﬁ"])
def test_user_strings_print_as_eagerly_compiled_and_loaded(tmp_path, capsys, text):
    """A user's own strings (print text, tfc.Assert data) with quotes, newlines
    and braces: printed alike by eager, compiled and exported code."""
    import sys

    def f(x):
        tfc.print(text, x, text, output_stream=sys.stdout)
        tfc.Assert(tfc.reduce_all(x > 0.0), [text])
        return x + 1.0

    fns = eager_compiled_and_loaded(f, tmp_path)
    for fn in fns:
        with pytest.raises(AssertionError) as e:
            fn(tfc.constant([-1.0, 2.0]))
        assert str(e.value).endswith(text)
    capsys.readouterr()
    assert printed_by_each(fns, capsys) == [f"{text} [1 2] {text}\n"] * 3


@pytest.mark.parametrize("sep,end", [("{}", "}\n"), ("{", "{0}"), (" } ", "{{\n")])
def test_print_separators_and_ends_with_braces_print_as_eagerly(tmp_path, capsys, sep, end):
    """tfc.print's sep and end are literal text in compiled code too (they were
    pasted into the format unescaped)."""
    import sys

    def f(x):
        tfc.print(x, "a{b}", x, sep=sep, end=end, output_stream=sys.stdout)
        return x

    assert printed_by_each(eager_compiled_and_loaded(f, tmp_path), capsys) == [f"[1 2]{sep}a{{b}}{sep}[1 2]{end}"] * 3


def eager_compiled_and_loaded(f, tmp_path):
    """``f`` itself, compiled for a (2,) float32 input, and that saved and loaded."""
    compiled = tfc.compile(f, tfc.TensorSpec((2,)))
    return f, compiled, tfc.load(tfc.save(compiled, tmp_path / "a"))


def printed_by_each(fns, capsys):
    """What each of ``fns`` prints to stdout for [1, 2]."""
    outputs = []
    for fn in fns:
        fn(tfc.constant([1.0, 2.0]))
        outputs.append(capsys.readouterr().out)
    return outputs
