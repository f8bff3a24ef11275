"""Command line: ``tfc compile MODEL.py`` and ``tfc opt FILE.mlir -p PASSES``
(also ``tfc-opt``). Errors print one line, ``file:line:col: error: reason`` (or
``tfc compile: error: ...``), and exit non-zero (2 for a bad command line, 1
otherwise), without a traceback. An output file is written whole or not at all."""
from __future__ import annotations

import io
import sys
import time

from tfc.core.files import write_atomically

USAGE = """usage: tfc COMMAND [ARGS]

commands:
  opt FILE.mlir -p PASS[,PASS...]   run IR passes on a file (also installed as tfc-opt;
                                    tfc opt --help)
  compile MODEL.py [options]        compile the functions of MODEL.py that carry an
                                    input signature (tfc compile --help)
  run -n N SCRIPT.py [ARGS]         start N ranks of a script (MPI; tfc run --help)
  --version                         print tfc's version
"""

def version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tfc")
    except PackageNotFoundError:  # run from a checkout without installing it
        from tfc import __version__

        return __version__


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd in ("--version", "-V"):
        print(f"tfc {version()}")
        return 0
    if cmd == "opt":
        return opt_main(rest, prog="tfc opt")
    if cmd == "compile":
        from tfc.compile_cli import compile_main

        return compile_main(rest)
    if cmd == "run":
        from tfc.distribute.launch import run_main

        return run_main(rest)
    print(f"tfc: unknown command {cmd!r}\n{USAGE}", file=sys.stderr, end="")
    return 2


def pass_table() -> str:
    from tfc.passes.pipeline import DESCRIPTIONS, PASSES, PIPELINE

    levels = {"tensor": "L1 (default)", "fused": "L1 -> L2", "loops": "L2 -> L3"}
    lines = ["tfc passes:"]
    lines += [f"  {name:16s} {DESCRIPTIONS[name]}" for name in PASSES]
    lines.append("the pipeline, as tfc.function runs it (its stops are tfc compile's --emit stages):")
    lines += [f"  {stop:7s}{levels.get(stop, ''):14s} {','.join(names)}" for stop, names in PIPELINE]
    return "\n".join(lines) + "\n"


class _InputError(Exception):
    """The input cannot be read: printed as ``FILE: error: message``."""


def read_input(path) -> bytes:
    """All of the input (stdin for None or ``-``), read before anything is written."""
    if path in (None, "-"):
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise _InputError("no such file") from None
    except IsADirectoryError:
        raise _InputError("is a directory; expected an IR file (.mlir)") from None
    except OSError as e:
        raise _InputError(f"cannot read it: {e.strerror or e}") from None


def _make_main_class():
    import argparse

    from xdsl.dialects.builtin import ModuleOp
    from xdsl.parser import MLIRTokenKind
    from xdsl.passes import PassPipeline
    from xdsl.utils.exceptions import ParseError, VerifyException
    from xdsl.xdsl_opt_main import xDSLOptMain

    from tfc.dialects.tensor import SourceParser

    class TfcOptMain(xDSLOptMain):
        version_format = f"tfc {version()} (xDSL {{xdsl_version}})"

        def __init__(self, prog, args):
            self.prog = prog
            self.data = b""  # the input, read by opt_main once the arguments are known
            self.times = {}  # step -> seconds, for --time-passes
            self._pass_start = 0.0
            self.module = None
            super().__init__(description="tfc IR optimizer: run tfc's passes on IR text (.mlir).", args=args)

        def _time(self, step, start):
            self.times[step] = self.times.get(step, 0.0) + time.perf_counter() - start

        def register_all_dialects(self):
            super().register_all_dialects()

            def tfc_dialect():
                import tfc  # noqa: F401  (fills the op registry)
                from tfc.dialects.tensor import dialect

                return dialect()

            self.ctx.register_dialect("tfc", tfc_dialect)

            def loops_dialect():
                from tfc.dialects.loops import LOOPS

                return LOOPS

            self.ctx.register_dialect("loops", loops_dialect)

            def tgpu_dialect():  # L4 (docs/gpu.md); xDSL's gpu and scf are registered above
                from tfc.dialects.gpu import TGPU

                return TGPU

            self.ctx.register_dialect("tgpu", tgpu_dialect)

        def register_all_frontends(self):
            def parse_mlir(stream):
                import tfc.dialects.gpu  # noqa: F401  (MLIR's syntax for gpu ops, before the parser meets gpu.module)

                start = time.perf_counter()
                parser = SourceParser(self.ctx, stream.read(), self.get_input_name())
                try:
                    # kept: opt_main looks in it for the op of an xDSL verifier error
                    if parser._current_token.kind == MLIRTokenKind.EOF and not self.args.no_implicit_module:
                        self.module = ModuleOp([])  # nothing but comments: an empty module, as in MLIR
                    else:
                        self.module = parser.parse_module(not self.args.no_implicit_module)
                except VerifyException as e:  # an attribute refusing its value: `2 : i1`
                    raise ParseError(parser._current_token.span, str(e)) from None
                except RecursionError:
                    raise ParseError(parser._current_token.span, "nesting too deep") from None
                self._time("parse", start)
                return self.module

            # the input is read as IR text whatever its name: decided by content
            self.available_frontends = {"mlir": parse_mlir}

        def get_input_stream(self):
            return io.BytesIO(self.data), "mlir"

        def register_all_passes(self):
            from tfc.passes.pipeline import PASSES

            for name, factory in PASSES.items():  # only tfc's: xDSL's do not apply to tfc IR
                self.register_pass(name, factory)

        def register_all_targets(self):
            super().register_all_targets()
            self.available_targets = {"mlir": self.available_targets["mlir"]}

        def register_all_arguments(self, arg_parser):
            super().register_all_arguments(arg_parser)
            arg_parser.prog = self.prog
            arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
            arg_parser.epilog = pass_table()
            helps = {  # xDSL's options, said for tfc (None: hidden; one input and one output format)
                "--shrink": None, "--print-between-passes": None, "--target": None, "--frontend": None,
                "--time-passes": "print the wall time of parsing, of each pass and in all to stderr",
                "--output-file": "write the result to this file (whole, once it is complete; may be the input)",
                "--passes": "comma-separated list of the passes below, run in order",
                "--disable-verify": "do not verify the IR after parsing and after each pass",
                "--version": "print the version",
            }
            for action in arg_parser._actions:
                if "--version" in action.option_strings:  # -V too, as for tfc and tfc compile
                    action.option_strings.insert(0, "-V")
                    arg_parser._option_string_actions["-V"] = action
                for option in set(action.option_strings) & helps.keys():
                    action.help = helps[option] or argparse.SUPPRESS
                if action.dest == "input_file":
                    action.help = "the IR text to read, whatever its name (default: stdin)"
            arg_parser.add_argument("--print-ir-after-all", action="store_true",
                                    help="print the IR to stderr after every pass")
            arg_parser.add_argument("--list-passes", action="store_true", help="list the tfc passes")

        def get_input_name(self):
            return "stdin" if self.args.input_file in (None, "-") else self.args.input_file

        def prepare_output(self):
            if self.args.output_file not in (None, "-") or not sys.stdout.isatty():
                self.args.syntax_highlight = False  # ANSI codes are for a terminal, not a file or pipe
            if self.args.output_file in (None, "-"):
                return sys.stdout
            self.buffer = _Buffer()  # written to the file by opt_main once everything succeeded
            return self.buffer

        def setup_pipeline(self):
            from tfc.passes.pipeline import dump_ir

            def callback(prev, module, nxt):
                if prev is not None:
                    self._time(prev.name, self._pass_start)
                if not self.args.disable_verify:
                    start = time.perf_counter()
                    module.verify()
                    self._time("verify", start)
                if prev is not None and self.args.print_ir_after_all:
                    dump_ir(prev.name, module)
                self._pass_start = time.perf_counter()

            self.pipeline = PassPipeline.parse_spec(self.available_passes, self.args.passes, callback)

        def output_resulting_program(self, prog):
            start = time.perf_counter()
            text = super().output_resulting_program(prog)
            self._time("print", start)
            return text

    return TfcOptMain


class _Buffer(io.StringIO):
    def close(self):  # xDSL closes its output stream; the text is still needed
        pass


def _time_table(times: dict, total: float) -> str:
    rows = list(times.items()) + [("total", total)]
    width = max(len(k) for k, _ in rows)
    lines = ["wall time:"] + [f"  {k:<{width}}  {s * 1e3:10.2f} ms" for k, s in rows]
    return "\n".join(lines) + "\n"


def opt_main(argv=None, prog="tfc-opt") -> int:
    """``tfc-opt``: xDSL's optimizer driver with the tfc dialect and passes.
    Errors print ``file:line:col: error: reason`` and exit 1, without a traceback;
    an op written without ``loc(...)`` is located by its position in the file."""
    from xdsl.ir import Attribute

    post_init = Attribute.__dict__["__post_init__"]
    try:
        return _opt_main(argv, prog)
    finally:
        # xDSL's --disable-verify replaces Attribute.__post_init__ (attribute
        # verification) for the whole process: a later parse in this process
        # would accept an invalid attribute
        Attribute.__post_init__ = post_init


def _opt_main(argv, prog) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--list-passes" in argv:
        sys.stdout.write(pass_table())
        return 0
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    try:
        driver = _make_main_class()(prog, argv)
    except SystemExit as e:  # argparse printed the usage error, --help or --version
        return e.code if isinstance(e.code, int) else 0
    except (ValueError, KeyError) as e:  # unknown pass or bad pass options
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    from tfc.dialects.tensor import OpVerifyError, failing_op, loc_str
    from tfc.passes.pipeline import PassPreconditionError

    name = driver.get_input_name()
    start = time.perf_counter()
    try:
        driver.data = read_input(driver.args.input_file)
        try:
            driver.run()
        except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
            if isinstance(e, PassPreconditionError) or driver.module is None:
                raise
            driver.module.verify()  # a pass failed on IR that does not verify (--disable-verify): say where
            raise
        if driver.args.output_file not in (None, "-"):
            try:
                write_atomically(driver.args.output_file, driver.buffer.getvalue())
            except OSError as e:
                print(f"{driver.args.output_file}: error: cannot write it: {e.strerror or e}", file=sys.stderr)
                return 1
    except _InputError as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        return 1
    except ParseError as e:
        hint = "" if name == "stdin" or name.endswith(".mlir") else (
            f" ({name} is not an .mlir file: tfc opt reads IR text"
            + ("; tfc compile reads Python models)" if name.endswith(".py") else ")"))
        print(f"{e.span.get_location()}: error: {e.msg}{hint}", file=sys.stderr)
        context = e.span.print_with_context()
        if max(map(len, context.splitlines()), default=0) <= 400:  # not a whole file on one line
            print(context, file=sys.stderr)
        return 1
    except OpVerifyError as e:
        print(f"{e.location or name}: error: {e.reason}", file=sys.stderr)
        return 1
    except DiagnosticException as e:  # xDSL's own verifiers do not name the op: find it
        msg = str(e).replace("\n", " ")
        op = failing_op(driver.module) if driver.module is not None else None
        where = name
        if op is not None:
            where = where if loc_str(op).startswith("<") else loc_str(op)
            msg = msg if op.name in msg else f"{op.name}: {msg}"
        print(f"{where}: error: {msg}", file=sys.stderr)
        return 1
    except PassPreconditionError as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        return 1
    except NotImplementedError as e:  # a pass that does not handle this input (a lowering's refusal)
        print(f"{name}: error: not implemented: {e}", file=sys.stderr)
        return 1
    except RecursionError:  # parsing reports its own, at the place; printing and passes recurse too
        print(f"{name}: error: nesting too deep", file=sys.stderr)
        return 1
    except MemoryError:
        print(f"{name}: error: out of memory", file=sys.stderr)
        return 1
    finally:
        if driver.args.time_passes:
            sys.stderr.write(_time_table(driver.times, time.perf_counter() - start))
    return 0


if __name__ == "__main__":
    sys.exit(main())
