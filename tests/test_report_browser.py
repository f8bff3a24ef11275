"""The compile report in a real browser: headless Chromium (Debian's chromium
package) driven by Playwright's Python package. The graph, the pass list and the
memory plan are there; clicking a pass shows its diff; a screenshot is not blank.
Skips, with the reason, where Chromium, Playwright or Graphviz is missing
(`make sysdeps` installs Chromium and Graphviz; Playwright is a test dependency).
Playwright's own browser downloads are never used: the system's Chromium is."""
import os
import shutil

import numpy as np
import pytest

import tfc
from tfc.passes.pipeline import DEFAULT_L1, FUSED, LOOPS

CHROMIUM = next((p for p in (os.environ.get("TFC_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                             shutil.which("chromium-browser")) if p and os.path.exists(p)), None)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = [
    pytest.mark.skipif(CHROMIUM is None, reason="no Chromium (Debian package chromium; make sysdeps)"),
    pytest.mark.skipif(shutil.which("dot") is None, reason="no Graphviz dot (Debian package graphviz)"),
]


def dense(x, w):
    h = tfc.matmul(x, w)
    return tfc.reduce_sum(tfc.exp(tfc.relu(h + 1.0) * 2.0), axis=1)


@pytest.fixture(scope="module")
def browser():
    pytest.importorskip("matplotlib", reason="matplotlib is not installed (the screenshot check reads PNG with it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright's Python package is not installed")
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        except Exception as e:  # a Chromium that cannot start here (no display libraries, ...)
            pytest.skip(f"Chromium at {CHROMIUM} does not start: {str(e).splitlines()[0]}")
        yield b
        b.close()


def not_blank(png_path) -> bool:
    """Whether a screenshot shows something: many colors, and a good share of
    pixels that are not the background."""
    import matplotlib.image

    img = matplotlib.image.imread(png_path)[..., :3]
    background = img[0, -1]
    differs = np.any(np.abs(img - background) > 0.05, axis=-1)
    colors = len(np.unique((img * 255).astype(np.uint8).reshape(-1, 3), axis=0))
    return differs.mean() > 0.05 and colors > 50


def test_report_in_chromium(browser, tmp_path):
    conc = tfc.compile(dense, tfc.TensorSpec((4, 3)), tfc.TensorSpec((3, 5)))
    path = conc.report(tmp_path / "report.html")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"file://{path}")

    assert page.locator("#graph-fused svg").is_visible() and not page.locator("#graph-l1").is_visible()
    assert page.locator("#graph-fused svg g.node").count() >= 5
    assert page.locator("#graph-fused svg g.cluster").count() == 1  # the fused kernel
    assert "library call" in page.locator("#graph-fused svg").text_content()
    page.click("#graph-show-l1")  # before fusion: every L1 op a node of its own
    assert page.locator("#graph-l1 svg").is_visible() and not page.locator("#graph-fused").is_visible()
    assert "relu" in page.locator("#graph-l1 svg").text_content()
    assert page.locator("#graph-l1 svg g.cluster").count() == 0
    names = [b.inner_text().split(" ")[1] for b in page.locator(".pass-btn").all()]
    assert names == list(DEFAULT_L1 + FUSED + LOOPS)
    assert page.locator("#memory svg rect.buffer").count() == len(conc.memory_plan.buffers)

    fuse = names.index("tfc-fuse")
    panel = page.locator(f"#pass-{fuse}")
    assert not panel.is_visible()
    page.click(f"#pass-btn-{fuse}")
    assert panel.is_visible() and panel.locator(".diff").is_visible()
    assert "+" in panel.locator(".diff .add").first.inner_text()
    assert "tfc.fused" in panel.locator(".diff").inner_text()
    panel.locator('button[data-tab="after"]').click()  # the IR after, filled in from the snapshots
    assert panel.locator(".after").is_visible() and "tfc.fused" in panel.locator(".after").inner_text()
    assert not panel.locator(".diff").is_visible()
    other = names.index("tfc-simplify")
    page.click(f"#pass-btn-{other}")
    assert not panel.is_visible() and page.locator(f"#pass-{other} .diff").inner_text().startswith(
        "(this pass changed nothing)")

    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert not_blank(shot)
    assert errors == []
    assert all(u.startswith("file://") for u in requests)  # nothing from the network
    page.close()


def test_blank_check_sees_a_blank_page(browser, tmp_path):
    page = browser.new_page(viewport={"width": 400, "height": 300})
    page.set_content("<html><body style='background:#fff'></body></html>")
    shot = tmp_path / "blank.png"
    page.screenshot(path=str(shot))
    page.close()
    assert not not_blank(shot)
