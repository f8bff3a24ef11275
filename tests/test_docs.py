"""Docs are checked: python blocks of README.md and docs/*.md run (a block
fenced ```python norun is skipped), and the generated pages are current."""
import contextlib
import io
import pathlib
import re
import runpy

import pytest

from tfc import docs

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def blocks():
    for page in PAGES:
        for i, m in enumerate(BLOCK.finditer(page.read_text())):
            yield pytest.param(m.group(1), id=f"{page.name}-{i}")


@pytest.mark.parametrize("code", list(blocks()))
def test_python_block_runs(code, tmp_path):
    path = tmp_path / "block.py"  # a real file: AutoGraph reads the source of tfc.functions
    path.write_text(code)
    with contextlib.redirect_stdout(io.StringIO()):
        runpy.run_path(str(path), run_name="__doc__")


def test_generated_pages_are_current():
    for rel, make in docs.PAGES.items():
        assert (ROOT / rel).read_text() == make(), f"{rel} is stale: run `python -m tfc.docs`"


def test_ir_reference_lists_every_op():
    import tfc  # noqa: F401
    from tfc.dialects.tensor import dialect

    text = (ROOT / "docs" / "ir-reference.md").read_text()
    for op in dialect().operations:
        assert f"### `{op.name}`" in text


def _page_state():
    return {rel: ((ROOT / rel).stat().st_mtime_ns, (ROOT / rel).read_text()) for rel in docs.PAGES}


@pytest.mark.parametrize("argv, code", [(["--help"], 0), (["-h"], 0), (["--bogus"], 2), (["docs"], 2)])
def test_cli_help_and_bad_arguments_write_nothing(argv, code, capsys):
    before = _page_state()
    with pytest.raises(SystemExit) as info:
        docs.main(argv)
    assert info.value.code == code
    assert "usage: python -m tfc.docs" in capsys.readouterr()[0 if code == 0 else 1]
    assert _page_state() == before


def test_cli_out_and_check(tmp_path, capsys):
    out = tmp_path / "site"
    before = _page_state()
    assert docs.main(["--check", "--out", str(out)]) == 1  # nothing there yet
    assert not out.exists()  # --check writes nothing
    assert docs.main(["--out", str(out)]) == 0
    for rel, make in docs.PAGES.items():
        assert (out / pathlib.Path(rel).name).read_text() == make()
    assert docs.main(["--check", "--out", str(out)]) == 0
    page = out / pathlib.Path(next(iter(docs.PAGES))).name
    page.write_text("edited by hand\n")
    assert docs.main(["--check", "--out", str(out)]) == 1
    assert page.read_text() == "edited by hand\n"
    assert "stale generated docs" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == sorted(pathlib.Path(r).name for r in docs.PAGES)  # no .tmp left
    assert _page_state() == before  # the repository's pages untouched
