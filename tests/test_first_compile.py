"""The first compile in a process pays a one-time set-up (imports); `tfc
compile`'s total counts it, and compiling does not build what it never uses."""
import re
import subprocess
import sys
import textwrap

MODEL = textwrap.dedent("""
    import tfc

    @tfc.function(input_signature=[tfc.TensorSpec((None,))])
    def first(x):
        return tfc.reduce_sum(x * 2.0)

    @tfc.function(input_signature=[tfc.TensorSpec((3,))])
    def second(x):
        return tfc.exp(x) + 1.0
""")


def _summaries(out):
    blocks = re.split(r"^function ", out, flags=re.M)[1:]
    return [dict((k.strip(), float(v)) for k, v in re.findall(r"^  time: (.+?)\s+([\d.]+) ms$", b, re.M))
            for b in blocks]


def test_tfc_compile_total_includes_the_one_time_set_up(tmp_path):
    model = tmp_path / "model.py"
    model.write_text(MODEL)
    run = subprocess.run([sys.executable, "-c", "import sys; from tfc.cli import main; sys.exit(main())",
                          "compile", str(model)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    first, second = _summaries(run.stdout)
    assert "set-up (once per process)" in first and "set-up (once per process)" not in second
    for times in (first, second):  # the total is the sum of the rows above it (each printed to 0.01 ms)
        parts = [v for k, v in times.items() if k != "total"]
        assert abs(times["total"] - sum(parts)) <= 0.01 * len(parts)


def test_compiling_generates_only_the_op_classes_it_uses():
    code = textwrap.dedent("""
        import tfc
        from tfc.core.registry import REGISTRY
        from tfc.dialects import tensor as T

        f = tfc.function(lambda x: tfc.exp(x) * 2.0, autograph=False)
        assert float(tfc.reduce_sum(f(tfc.constant([0.0, 1.0])))) > 0
        conc = f.get_concrete_function(tfc.TensorSpec((2,)))
        assert len(T._CLASSES) < len(REGISTRY) // 4, (len(T._CLASSES), len(REGISTRY))
        text = T.print_ir(conc.module)
        assert T.print_ir(T.parse_module(text)) == text  # parsing loads the whole dialect
        print(len(T._CLASSES), len(REGISTRY))
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    used, total = map(int, run.stdout.split())
    assert used == total  # after parsing
