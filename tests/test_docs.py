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
