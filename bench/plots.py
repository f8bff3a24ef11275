"""Plots of the benchmarks' ratio tables: one picture per workload (table), each
row's time as a ratio to the table's baseline (median as the bar, the minimum as
a mark), tfc's rows beside numpy's and every installed peer's (torch, TensorFlow,
JAX), colored by who runs them.

    TFC_BENCH_RESULTS=results.jsonl python bench/elementwise.py   # what harness.record writes
    python bench/plots.py results.jsonl [--out docs/images] [--markdown]

``make bench`` runs every benchmark so, then this script. Each plot is written to
``OUT/bench-<title>.png``; ``--markdown`` prints the image lines for
docs/benchmarks.md. A table measured more than once (several runs appended to
one file) is drawn from its latest run.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

GROUPS = (  # (group, colour, how a row's name starts), first match wins
    ("numpy / Python", "#8c8c8c", ("numpy", "np.", "plain python")),
    ("torch", "#ee4c2c", ("torch",)),
    ("TensorFlow", "#ff8f00", ("tensorflow", "tf.")),
    ("JAX", "#7b4fb8", ("jax",)),
)
TFC = ("tfc", "#1f5fa6")  # every other row is one of tfc's (tfc eager, compiled, signatures, ...)


def group(name: str) -> tuple:
    """(group, colour) of a row by its name."""
    low = name.lower()
    for g, colour, starts in GROUPS:
        if low.startswith(starts):
            return g, colour
    return TFC


def slug(title: str) -> str:
    """A file name for a table's title: lower case, runs of other characters as '-'."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:80] or "table"


def load(path: str) -> list[dict]:
    """The tables of a results file, the latest run of each title, in first-seen order."""
    tables: dict = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                entry["title"], entry["rows"]  # noqa: B018 (required keys)
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"{path}:{number}: not a table written by bench/harness.py ({e})") from None
            tables[entry["title"]] = entry
    return list(tables.values())


def plot(table: dict, out_dir: str, name: str | None = None) -> str:
    """Draw one table into ``OUT_DIR/bench-<name>.png`` (``name``: the title's
    slug by default); returns the file written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = table["rows"]
    base = next((r for r in rows if r["name"] == table.get("baseline")), rows[0])
    names = [r["name"] for r in rows]
    ratios = [r["median_s"] / base["median_s"] for r in rows]
    min_ratios = [r["min_s"] / base["min_s"] for r in rows]
    colours = [group(n)[1] for n in names]

    fig, ax = plt.subplots(figsize=(8.5, 0.42 * len(rows) + 1.7), dpi=110)
    y = list(range(len(rows)))[::-1]
    ax.barh(y, ratios, color=colours, height=0.62)
    ax.scatter(min_ratios, y, marker="|", s=160, color="black", zorder=3, label="min ratio")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(y, names, fontsize=9)
    spread = max(ratios + min_ratios) / max(min(ratios + min_ratios), 1e-12)
    if spread > 30:
        ax.set_xscale("log")
    for yy, r in zip(y, ratios):
        ax.text(r, yy, f" {r:.2f}x", va="center", fontsize=8)
    ax.set_xlim(right=max(ratios + min_ratios) * (2.2 if spread > 30 else 1.18))
    ax.set_xlabel(f"time per call, ratio to {base['name']} (median; lower is faster)", fontsize=9)
    ax.set_title(table["title"], fontsize=10)
    present = []
    for g, colour in [(g, c) for g, c, _ in GROUPS] + [TFC]:
        if any(group(n)[0] == g for n in names):
            present.append(plt.Rectangle((0, 0), 1, 1, color=colour, label=g))
    handles = present + [ax.collections[0]]
    ax.legend(handles=handles, fontsize=8, loc="lower right", framealpha=0.9)
    if table.get("skipped"):
        fig.text(0.01, 0.01, "skipped: " + "; ".join(table["skipped"]), fontsize=7, color="#555")
    fig.tight_layout(rect=(0, 0.03 if table.get("skipped") else 0, 1, 1))
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"bench-{name or slug(table['title'])}.png")
    fig.savefig(path)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="bench/plots.py", description=__doc__.split("\n\n")[0])
    p.add_argument("results", help="the JSON lines file the benchmarks wrote (TFC_BENCH_RESULTS)")
    p.add_argument("--out", default="docs/images", help="where the plots go (default docs/images)")
    p.add_argument("--markdown", action="store_true",
                   help="print the markdown image lines (paths relative to docs/)")
    args = p.parse_args(argv)
    docs = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")
    if args.markdown and os.path.relpath(os.path.abspath(args.out), docs).startswith(os.pardir):
        print(f"bench/plots.py: error: --markdown writes image lines for docs/, but --out {args.out} is "
              "outside it (the lines would point at files the repository does not have)", file=sys.stderr)
        return 2
    try:
        tables = load(args.results)
    except (OSError, ValueError) as e:
        print(f"bench/plots.py: error: {e}", file=sys.stderr)
        return 1
    if not tables:
        print(f"bench/plots.py: error: {args.results} holds no tables", file=sys.stderr)
        return 1
    taken = set()
    for table in tables:
        if not table["rows"]:  # (every row skipped: nothing to draw)
            print(f"bench/plots.py: {table['title']}: no rows, no plot", file=sys.stderr)
            continue
        name = slug(table["title"])
        # titles that differ only in punctuation ("x + x", "x * x") get files of their own
        name = next(f"{name}-{k}" if k else name for k in range(len(tables) + 1)
                    if (f"{name}-{k}" if k else name) not in taken)
        taken.add(name)
        path = plot(table, args.out, name)
        if args.markdown:
            rel = os.path.relpath(os.path.abspath(path), docs)
            print(f"![{table['title']}]({rel})")
        else:
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
