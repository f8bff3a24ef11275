"""The screenshots of docs/report.md: the report of a small MLP training step,
opened in headless Chromium (the system's ``chromium``, driven by Playwright's
Python package; never Playwright's own browser downloads).

    .venv/bin/python tools/report_screenshots.py [OUT_DIR]      # default docs/images

Writes report-overview.png, report-graph.png, report-passes.png, report-memory.png and
report-kernels.png. (The model is defined here, outside the tfc package: ops
are located at the user's lines, and tfc's own frames are never the user's.)
"""
from __future__ import annotations

import os
import sys
import tempfile

import tfc

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class MLP(tfc.Module):
    def __init__(self):
        super().__init__()
        self.hidden = tfc.layers.Dense(128, activation=tfc.nn.relu)
        self.out = tfc.layers.Dense(10)

    def __call__(self, x):
        return self.out(self.hidden(x))


model = MLP()
optimizer = tfc.optimizers.SGD(0.1)


@tfc.function(input_signature=[tfc.TensorSpec((256, 64)), tfc.TensorSpec((256,), tfc.int32)])
def train_step(x, labels):
    with tfc.GradientTape() as tape:
        logits = model(x)
        loss = tfc.reduce_mean(tfc.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def main(argv=None) -> int:
    from playwright.sync_api import sync_playwright

    out = (argv or sys.argv[1:] or ["docs/images"])[0]
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        page_path = tfc.compile(train_step).report(os.path.join(tmp, "report.html"))
        browser = p.chromium.launch(executable_path=os.environ.get("TFC_CHROMIUM", "/usr/bin/chromium"),
                                    args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.goto("file://" + os.path.abspath(page_path))
        page.screenshot(path=os.path.join(out, "report-overview.png"))
        page.add_style_tag(content="nav{position:static}")  # not over the sections' pictures
        page.click("#graph-fit")  # the graph at its actual size, scrolled to its loss
        page.locator("#graph-fused g.cluster", has_text="reduce max").first.scroll_into_view_if_needed()
        page.locator("#graph-fused").screenshot(path=os.path.join(out, "report-graph.png"))
        fuse = [b.inner_text().split(" ")[1] for b in page.locator(".pass-btn").all()].index("tfc-fuse")
        page.click(f"#pass-btn-{fuse}")
        page.locator("#passes").screenshot(path=os.path.join(out, "report-passes.png"))
        page.locator("#memory").screenshot(path=os.path.join(out, "report-memory.png"))
        moved = [int(r.locator("td").last.inner_text().replace(",", "")) for r in
                 page.locator("#kernels table tr").all()[1:]]
        page.locator(f"#kernel-{moved.index(max(moved))} summary").click()  # the one moving the most bytes
        page.locator("#kernels").screenshot(path=os.path.join(out, "report-kernels.png"))
        browser.close()
    print(f"wrote {out}/report-*.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
