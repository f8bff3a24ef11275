"""Command line: ``tfc compile MODEL.py`` and ``tfc opt FILE.mlir -p PASSES``
(also ``tfc-opt``). Errors print ``tfc compile: error: ...`` (with the user's
file:line where there is one) and exit non-zero, without a traceback."""
from __future__ import annotations

import sys

USAGE = """usage: tfc COMMAND [ARGS]

commands:
  opt FILE.mlir -p PASS[,PASS...]   run IR passes on a file (also installed as tfc-opt)
  compile MODEL.py [options]        compile the functions of MODEL.py that carry an
                                    input signature (tfc compile --help)
"""


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "opt":
        return opt_main(rest)
    if cmd == "compile":
        from tfc.compile_cli import compile_main

        return compile_main(rest)
    print(f"tfc: unknown command {cmd!r}\n{USAGE}", file=sys.stderr, end="")
    return 2


def _list_passes() -> str:
    from tfc.passes.pipeline import DEFAULT_L1, FUSED, PASSES

    lines = ["tfc passes:"]
    for name in sorted(PASSES):
        doc = (sys.modules[PASSES[name]().__module__].__doc__ or "").strip()
        lines.append(f"  {name:14s} {doc.splitlines()[0] if doc else ''}")
    lines.append(f"default L1 pipeline: {','.join(DEFAULT_L1)}")
    lines.append(f"fused (L2) stage: {','.join(FUSED)}")
    lines.append("xDSL's own passes (cse, dce, canonicalize, ...) are accepted too.")
    return "\n".join(lines) + "\n"


def _make_main_class():
    from xdsl.passes import PassPipeline
    from xdsl.xdsl_opt_main import xDSLOptMain

    class TfcOptMain(xDSLOptMain):
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

        def register_all_frontends(self):
            super().register_all_frontends()
            from tfc.dialects.tensor import SourceParser

            def parse_mlir(io):
                # kept: opt_main looks in it for the op of an xDSL verifier error
                self.module = SourceParser(self.ctx, io.read(), self.get_input_name()).parse_module(
                    not self.args.no_implicit_module)
                return self.module

            self.available_frontends["mlir"] = parse_mlir

        def register_all_passes(self):
            super().register_all_passes()
            from tfc.passes.pipeline import PASSES

            for name, factory in PASSES.items():
                self.register_pass(name, factory)

        def register_all_arguments(self, arg_parser):
            super().register_all_arguments(arg_parser)
            arg_parser.add_argument("--print-ir-after-all", action="store_true",
                                    help="print the IR to stderr after every pass")
            arg_parser.add_argument("--list-passes", action="store_true", help="list the tfc passes")

        def setup_pipeline(self):
            from tfc.passes.pipeline import dump_ir

            def callback(prev, module, nxt):
                if not self.args.disable_verify:
                    module.verify()
                if prev is not None and self.args.print_ir_after_all:
                    dump_ir(prev.name, module)

            self.pipeline = PassPipeline.parse_spec(self.available_passes, self.args.passes, callback)

    return TfcOptMain


def opt_main(argv=None) -> int:
    """``tfc-opt``: xDSL's optimizer driver with the tfc dialect and passes.
    Errors print ``file:line:col: error: reason`` and exit 1, without a traceback;
    an op written without ``loc(...)`` is located by its position in the file."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--list-passes" in argv:
        sys.stdout.write(_list_passes())
        return 0
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    try:
        driver = _make_main_class()(description="tfc IR optimizer", args=argv)
    except (ValueError, KeyError) as e:  # unknown pass or bad pass options
        print(f"tfc-opt: error: {e}", file=sys.stderr)
        return 2
    from tfc.dialects.tensor import OpVerifyError, failing_op, loc_str

    try:
        driver.run()
    except ParseError as e:
        print(f"{e.span.get_location()}: error: {e.msg}", file=sys.stderr)
        print(e.span.print_with_context(), file=sys.stderr)
        return 1
    except OpVerifyError as e:
        print(f"{e.location or driver.get_input_name()}: error: {e.reason}", file=sys.stderr)
        return 1
    except DiagnosticException as e:  # xDSL's own verifiers do not name the op: find it
        msg = str(e).replace("\n", " ")
        module = getattr(driver, "module", None)
        op = failing_op(module) if module is not None else None
        where = driver.get_input_name()
        if op is not None:
            where = where if loc_str(op).startswith("<") else loc_str(op)
            msg = msg if op.name in msg else f"{op.name}: {msg}"
        print(f"{where}: error: {msg}", file=sys.stderr)
        return 1
    except FileNotFoundError as e:
        print(f"tfc-opt: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
