"""``tfc compile MODEL.py``: import a model file, compile its functions that
carry an input signature, and print a summary, a stage's IR, or export them.

Every failure the user can cause (a missing or broken file, no function, an op
that cannot be compiled, a bad option) prints ``tfc compile: error: ...`` with
the user's file:line where there is one, and exits non-zero: 2 for bad command
lines, 1 for everything else. No traceback is shown.
"""
from __future__ import annotations

import argparse
import contextlib
import linecache
import os
import sys
import threading
import time
import traceback
import types

PROG = "tfc compile"


class CliError(Exception):
    """A user error: printed as ``tfc compile: error: <message>``."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


# -- where in the user's code --------------------------------------------------------


def _tfc_dir():
    import tfc

    return os.path.dirname(os.path.abspath(tfc.__file__)) + os.sep


def user_frames(exc) -> list:
    """The traceback frames of ``exc`` outside the tfc package and Python's own
    import machinery, innermost last."""
    tfc_dir = _tfc_dir()
    frames = traceback.extract_tb(exc.__traceback__)
    return [f for f in frames if not os.path.abspath(f.filename).startswith(tfc_dir)
            and not f.filename.startswith("<frozen")]


def _line(filename, lineno) -> str:
    text = linecache.getline(filename, lineno).strip()
    return f"{filename}:{lineno}: {text}" if text else f"{filename}:{lineno}"


def describe_exception(exc) -> str:
    """``Type: message``, its notes, and the user's innermost line (once: a
    note of tfc's naming that same line, ``at FILE:LINE in NAME``, is left out)."""
    frames = user_frames(exc)
    here = f"at {frames[-1].filename}:{frames[-1].lineno} in " if frames else None
    msg = f"{type(exc).__name__}: {exc}"
    for note in getattr(exc, "__notes__", ()):
        if here is None or not note.strip().startswith(here):
            msg += f"\n  {note.strip()}"
    if frames:
        msg += f"\n  at {_line(frames[-1].filename, frames[-1].lineno)}"
    return msg


# -- the model file -------------------------------------------------------------------


def load_model(path: str) -> types.ModuleType:
    """Import ``path`` as a module (its directory first on sys.path)."""
    if not os.path.exists(path):
        raise CliError(f"{path}: no such file")
    if os.path.isdir(path):
        raise CliError(f"{path}: is a directory; expected a Python file")
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as e:
        raise CliError(f"{path}: cannot read the file: {e.strerror or e}") from None
    try:
        code = compile(source, path, "exec")
    except SyntaxError as e:
        where = f"{e.filename or path}:{e.lineno}" if e.lineno else path
        msg = f"{where}: syntax error: {e.msg}"
        if e.text:
            msg += f"\n    {e.text.rstrip()}"
            if e.offset:
                msg += "\n    " + " " * max(e.offset - 1, 0) + "^"
        raise CliError(msg) from None
    except ValueError as e:  # e.g. null bytes
        raise CliError(f"{path}: not a Python source file: {e}") from None
    stem = os.path.splitext(os.path.basename(path))[0]
    name = stem if stem.isidentifier() and stem not in sys.modules else f"_tfc_model_{abs(hash(path))}"
    module = types.ModuleType(name)
    module.__file__ = os.path.abspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in sys.path:
        sys.path.insert(0, directory)
    sys.modules[name] = module
    try:
        with contextlib.redirect_stdout(sys.stderr):  # stdout is for --emit's text: the model's print()s go aside
            exec(code, module.__dict__)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # SystemExit too: a model file must not end the compiler
        del sys.modules[name]
        raise CliError(f"{path}: raised an exception while importing it: {describe_exception(e)}") from None
    return module


class Target:
    """One thing to compile: ``fn`` (a tfc.function with an input signature, or
    an already compiled function), ``args`` for it, and ``owner``, the
    tfc.Module whose method it is (its variables' checkpoint paths on export)."""

    def __init__(self, name, fn, args=(), owner=None):
        self.name, self.fn, self.args, self.owner = name, fn, tuple(args), owner


def _method_targets(var, obj) -> list:
    """The methods of module instance ``obj`` (bound to ``var``) decorated with
    @tfc.function(input_signature=...), as TensorFlow's saved_model finds them."""
    from tfc.frontend.function import Function

    out = []
    for attr in dir(type(obj)):
        fn = getattr(type(obj), attr, None)
        if isinstance(fn, Function) and fn.input_signature is not None:
            name = var if attr == "__call__" else f"{var}.{attr}"
            out.append(Target(name, fn, (obj, *fn.input_signature), owner=obj))
    return out


def find_functions(module, path: str, name: str | None = None) -> list:
    """[Target] to compile, in file order: the module's tfc.functions with an
    input signature defined in it, its tfc.compile results, and the signed
    methods of its tfc.Module instances; or the one called ``name``."""
    from tfc.frontend.function import ConcreteFunction, Function
    from tfc.nn.module import Module

    found, seen = [], set()
    for var, v in vars(module).items():
        if id(v) in seen or var.startswith("__"):
            continue
        if isinstance(v, Function) and v.input_signature is not None \
                and getattr(v.python_function, "__module__", None) == module.__name__:
            found.append(Target(var, v))
        elif isinstance(v, ConcreteFunction):
            found.append(Target(var, v))
        elif isinstance(v, Module):
            found += _method_targets(var, v)
        else:
            continue
        seen.add(id(v))
    if name is not None:
        match = [t for t in found if t.name == name]
        if match:
            return match
        obj = getattr(module, name, None)
        if obj is None:
            known = ", ".join(t.name for t in found) or "none"
            raise CliError(f"{path}: no function named {name!r} (functions to compile: {known})", code=2)
        if isinstance(obj, Function) and obj.input_signature is not None:  # imported into the model file
            return [Target(name, obj)]
        raise CliError(f"{path}: {name} has no input signature; decorate it with "
                       "@tfc.function(input_signature=[tfc.TensorSpec(shape, dtype), ...])", code=2)
    if not found:
        raise CliError(f"{path}: no function to compile: decorate a function, or a tfc.Module's method, "
                       "with @tfc.function(input_signature=[tfc.TensorSpec(shape, dtype), ...]), or bind "
                       "a tfc.compile(...) result to a module-level name")
    return found


# -- progress -----------------------------------------------------------------------------


class Progress:
    """A spinner line on ``stream`` while a step runs longer than ``delay``
    seconds, only when ``stream`` is a terminal; erased when the step ends."""

    FRAMES = "|/-\\"

    def __init__(self, label: str, stream=None, delay: float = 1.0, force: bool = False):
        self.label = label
        self.stream = stream or sys.stderr
        self.delay = delay
        self.enabled = force or (hasattr(self.stream, "isatty") and self.stream.isatty())
        self._done = threading.Event()
        self._thread = None
        self._shown = False

    def _run(self):
        start = time.perf_counter()
        if self._done.wait(self.delay):
            return
        i = 0
        while not self._done.is_set():
            self.stream.write(f"\r{self.FRAMES[i % 4]} {self.label} {time.perf_counter() - start:.1f}s")
            self.stream.flush()
            self._shown = True
            i += 1
            self._done.wait(0.1)

    def __enter__(self):
        if self.enabled:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._thread is not None:
            self._done.set()
            self._thread.join()
            if self._shown:
                self.stream.write("\r\033[K")
                self.stream.flush()
        return False


# -- the command ------------------------------------------------------------------------------


def _parser():
    from tfc.cli import version
    from tfc.compiler import STAGES, TARGETS

    p = argparse.ArgumentParser(prog=PROG, description="Compile the functions of MODEL.py that carry an "
                                "input signature (@tfc.function(input_signature=[...])).")
    p.add_argument("-V", "--version", action="version", version=f"tfc {version()}", help="print the version")
    p.add_argument("model", metavar="MODEL.py")
    p.add_argument("--function", metavar="NAME", help="compile only this function")
    p.add_argument("--target", default="cpu", help=f"{' | '.join(TARGETS)} (default cpu)")
    p.add_argument("--emit", default="summary", metavar="STAGE",
                   help=f"what to print: summary (default), or a stage: {', '.join(STAGES)}")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=DxD",
                   help="for a function with None dimensions: the shape of tensor argument NAME (its name in the "
                        "IR, or its position from 0) that the fused, loops and numpy stages and the summary are "
                        "specialized to, as 1x64 (() for a 0-d one); repeatable; the others: each None dimension 1")
    p.add_argument("--passes", default="default", metavar="P1,P2",
                   help="the L1 pass list (default: the standard pipeline; 'none' for none)")
    p.add_argument("--quantize", default=None, metavar="MODE",
                   help="int8 (static: calibrated on the model file's CALIBRATION, an iterable of argument "
                        "tuples or a dict of them by function name) or int8-weights (weight-only)")
    p.add_argument("--print-ir-after-all", action="store_true", help="print the IR to stderr after every pass")
    p.add_argument("--profile", action="store_true",
                   help="run each function 10 times (target cpu) on random normal floats, integer and boolean "
                        "zeros, of its signature's shapes (--shape for None dimensions), and print the time of "
                        "each kernel and library call")
    p.add_argument("--report", metavar="OUT.html",
                   help="write the compile report (graph, passes with diffs, memory plan, kernels) to this "
                        "self-contained HTML page; one page for all the functions compiled (needs Graphviz's dot)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress display (there is none when stderr is not a terminal either)")
    p.add_argument("-o", "--output", metavar="OUTPUT",
                   help="export to this directory (one subdirectory per function when there are several)")
    return p


def parse_shape_option(text: str) -> tuple:
    """``NAME=1x64`` -> ``("NAME", (1, 64))``; ``NAME=()`` is a 0-d tensor."""
    name, sep, dims = text.partition("=")
    name, dims = name.strip(), dims.strip()
    if not sep or not name:
        raise ValueError(f"--shape {text!r}: expected NAME=DIMS, as x=1x64")
    if dims in ("", "()"):
        return name, ()
    try:
        shape = tuple(int(d) for d in dims.split("x"))
    except ValueError:
        shape = None
    if shape is None or any(d < 0 for d in shape):
        raise ValueError(f"--shape {text!r}: the dimensions are non-negative integers joined by x, as 1x64")
    return name, shape


def choose_shapes(conc, given: dict) -> tuple:
    """The shape of each tensor argument of ``conc`` for ``--shape`` options
    ``given`` (name or position -> shape); the others: each None dimension 1.
    ValueError naming what does not fit."""
    from tfc.dialects.tensor import RefType

    (f,) = list(conc.module.ops)
    args = [a for a in f.body.block.args if not isinstance(a.type, RefType)]
    names = [a.name_hint or str(i) for i, a in enumerate(args)]
    if not conc.dynamic:
        raise ValueError(f"--shape: {conc.name} has no None dimension in its signature "
                         f"({', '.join(str(s) for s in conc.input_specs)})")
    shapes = [tuple(1 if d is None else d for d in s.shape) for s in conc.input_specs]
    for key, shape in given.items():
        if key in names:
            i = names.index(key)
        elif key.isdigit() and int(key) < len(args):
            i = int(key)
        else:
            raise ValueError(f"--shape {key}=...: {conc.name} has no tensor argument {key!r} "
                             f"(its tensor arguments: {', '.join(names) or 'none'}, or their positions)")
        spec = conc.input_specs[i].shape
        if len(shape) != len(spec) or any(d is not None and d != n for d, n in zip(spec, shape)):
            want = "x".join("?" if d is None else str(d) for d in spec) or "()"
            raise ValueError(f"--shape {key}={'x'.join(map(str, shape)) or '()'}: does not fit argument "
                             f"{names[i]}'s shape {want}")
        shapes[i] = shape
    return tuple(shapes)


def _check_options(args):
    from tfc.compiler import STAGES, StageNotAvailable, check_stage, check_target, resolve_passes, setup

    setup()  # first: what it imports is the first compile's one-time cost, shown in its summary
    args.shapes = {}
    for text in args.shape:
        try:
            name, shape = parse_shape_option(text)
        except ValueError as e:
            raise CliError(str(e), code=2) from None
        args.shapes[name] = shape
    if args.emit != "summary":
        try:
            check_stage(args.emit)
        except ValueError:
            raise CliError(f"unknown stage {args.emit!r} for --emit; stages: summary, {', '.join(STAGES)}",
                           code=2) from None
        except StageNotAvailable as e:
            raise CliError(str(e), code=2) from None
        if args.emit in ("gpu", "ptx") and args.target != "cuda":
            raise CliError(f"stage {args.emit!r} is the cuda backend's: add --target cuda", code=2)
    if args.report:
        from tfc.core.errors import UnavailableError
        from tfc.frontend.report.graph import dot_program

        try:
            dot_program()  # before compiling anything
        except UnavailableError as e:
            raise CliError(f"--report: {e}") from None
    try:
        args.pass_names = resolve_passes(args.passes)
    except ValueError as e:
        raise CliError(f"--passes: {e}", code=2) from None
    try:
        check_target(args.target, args.quantize)
    except ValueError as e:
        raise CliError(str(e), code=2) from None
    except NotImplementedError as e:
        raise CliError(str(e), code=1) from None


def _compile_one(target, args, out):
    from tfc.compiler import compile, emit, summary

    name = target.name
    try:
        spinner = Progress(f"compiling {name}") if getattr(args, "spinner", True) else contextlib.nullcontext()
        with spinner:
            with contextlib.redirect_stdout(sys.stderr):  # the model's print() while tracing
                conc = compile(target.fn, *target.args, target=args.target, passes=args.pass_names,
                               quantize=args.quantize, calibration=_calibration(args, name),
                               print_ir_after_all=args.print_ir_after_all)
            if getattr(args, "shapes", None) and conc.dynamic:
                try:
                    shapes = choose_shapes(conc, args.shapes)
                except ValueError as e:
                    raise CliError(f"cannot compile {name}: {e}", code=2) from None
                conc.specialization(shapes)  # the last used: what the stages and the summary show
                args.shapes_used = True
            text = summary(conc, name) if args.emit == "summary" else emit(conc, args.emit)
            if getattr(args, "profile", False):
                text = text.rstrip("\n") + "\n\n" + _profile(conc)
    except (KeyboardInterrupt, CliError):
        raise
    except Exception as e:
        raise CliError(f"cannot compile {name}: {describe_exception(e)}") from None
    out.write(text if text.endswith("\n") else text + "\n")
    return conc


def _calibration(args, name):
    """``--quantize int8``'s calibration data for function ``name``: the model
    file's ``CALIBRATION`` (for every function, or a dict by function name)."""
    if args.quantize != "int8":
        return None
    data = getattr(args, "model_module", None) and getattr(args.model_module, "CALIBRATION", None)
    if isinstance(data, dict):
        data = data.get(name)
    if data is None:
        raise CliError(f"--quantize int8 needs calibration data for {name}: define CALIBRATION in "
                       f"{args.model} (an iterable of argument tuples, or a dict of them by function name), "
                       "or use --quantize int8-weights", code=2)
    return data


def _profile(conc) -> str:
    """``--profile``: the profiler's table of ten calls on made-up inputs."""
    import numpy as np

    import tfc

    if conc.target != "cpu":
        raise CliError(f"--profile runs target cpu only, not {conc.target!r}", code=2)
    rng = np.random.default_rng(0)
    shapes = conc.default_shapes() if conc.dynamic else [s.shape for s in conc.input_specs]
    inputs = []
    for spec, shape in zip(conc.input_specs, shapes):
        dt = np.dtype(spec.dtype.as_numpy_dtype)
        value = rng.standard_normal(shape).astype(dt) if dt.kind in "fc" else np.zeros(shape, dt)
        inputs.append(tfc.constant(value))
    return conc.profile(*inputs, n=10, quiet=True).table()


def export(compiled, output: str) -> None:
    """``tfc.save`` each (Target, compiled function) to ``output`` (one
    function) or ``output/NAME``: all are written beside ``output`` first and
    moved in once every one succeeded, so a failure leaves nothing half-written."""
    import shutil

    from tfc.export import _check_replaceable, _replace_dir, make_dir_beside

    if len(compiled) == 1:  # tfc.save itself writes beside output and moves it in
        (target, conc), = compiled
        _save(conc, output, target)
        return
    if os.path.exists(output) and not os.path.isdir(output):
        raise CliError(f"cannot write {output}: it exists and is not a directory")
    real = os.path.realpath(output)  # a link to a directory: written through the link
    try:
        for target, _ in compiled:  # all checked before any is replaced
            _check_replaceable(os.path.join(output, target.name))
        stage = make_dir_beside(real, ".tfc-compile-")
    except OSError as e:
        raise CliError(f"cannot write {output}: {e.strerror or e}") from None
    try:
        for target, conc in compiled:
            _save(conc, os.path.join(stage, target.name), target)
        if not os.path.exists(real):
            os.rename(stage, real)
        else:
            for target, _ in compiled:
                _replace_dir(os.path.join(stage, target.name), os.path.join(real, target.name))
    except OSError as e:
        raise CliError(f"cannot write {output}: {e.strerror or e}") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def write_report(compiled, path: str) -> None:
    """``--report``: the compile report of each (Target, compiled function), one page."""
    from tfc.frontend.report import write_reports

    try:
        write_reports([(target.name, conc) for target, conc in compiled], path)
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror or e}") from None
    except (KeyboardInterrupt, CliError):
        raise
    except Exception as e:
        raise CliError(f"cannot write the report: {describe_exception(e)}") from None


def _save(conc, dest, target):
    from tfc.export import save

    try:
        save(conc, dest, root=target.owner)
    except OSError as e:
        raise CliError(f"cannot write {dest}: {e.strerror or e}") from None
    except (TypeError, ValueError) as e:
        raise CliError(f"cannot export {target.name}: {e}") from None


def compile_main(argv=None, out=None) -> int:
    out = out or sys.stdout
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # argparse printed its message (or --help)
        return int(e.code or 0)
    try:
        _check_options(args)
        module = load_model(args.model)
        args.model_module = module
        targets = find_functions(module, args.model, args.function)
        from tfc.core.progress import enabled, progress

        # several functions: one bar over them; one: a spinner while it takes long
        bar = len(targets) > 1 and enabled(args.quiet)
        args.spinner = not args.quiet and not bar
        compiled = [(t, _compile_one(t, args, out))
                    for t in progress(targets, desc="compiling", unit="function", quiet=not bar)]
        if args.shapes and not getattr(args, "shapes_used", False):
            raise CliError("--shape: no function compiled here has a None dimension in its signature "
                           f"({', '.join(t.name for t in targets)})", code=2)
        if args.report:
            write_report(compiled, args.report)
            print(f"wrote {args.report}", file=sys.stderr)
        if args.output:
            export(compiled, args.output)
            for target, _ in compiled:
                dest = args.output if len(compiled) == 1 else os.path.join(args.output, target.name)
                print(f"wrote {dest}", file=sys.stderr)
    except CliError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return 0
