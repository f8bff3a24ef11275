"""The compile report as one self-contained HTML page: inline CSS, JavaScript
and SVG, nothing fetched. Every user string (names, source lines, IR text,
generated code) is HTML-escaped; the IR snapshots travel as JSON inside a
script element with ``<`` escaped, and are shown through ``textContent``."""
from __future__ import annotations

import json
from html import escape

from tfc.frontend.report.memory import format_bytes, memory_svg

CSS = """
body{font:14px/1.45 -apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0;color:#1d1d1d;background:#fff}
header{background:#203a5c;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px} header .sub{opacity:.85;font-size:13px}
nav{position:sticky;top:0;background:#f3f5f8;border-bottom:1px solid #d6dbe2;padding:6px 24px;z-index:2}
nav a{margin-right:16px;color:#203a5c;text-decoration:none;font-weight:600}
section{padding:10px 24px 18px;border-bottom:1px solid #e6e6e6}
h2{font-size:17px;margin:10px 0}
table{border-collapse:collapse;font-size:13px} td,th{border:1px solid #d9d9d9;padding:3px 8px;text-align:left}
th{background:#f3f5f8} td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f7f7f7;border:1px solid #e2e2e2;padding:8px;overflow:auto;font-size:12px;max-height:520px;margin:4px 0}
.graph-view{overflow:auto;max-height:900px;border:1px solid #e2e2e2}
.graph-view.fit svg{max-width:100%;height:auto}
.passes{display:flex;gap:16px;align-items:flex-start}
.pass-list{list-style:none;padding:0;margin:0;min-width:330px}
.pass-list li{margin:0}
.pass-btn{width:100%;text-align:left;border:1px solid #d6dbe2;background:#fff;padding:4px 8px;margin:1px 0;
  cursor:pointer;font:13px monospace;display:flex;justify-content:space-between;gap:12px}
.pass-btn.changed{border-left:4px solid #2f7d32} .pass-btn.same{color:#777}
.pass-btn.selected,#graph button.selected{background:#dbe8f6;border-color:#7aa6d6}
.pass-view{flex:1;min-width:0} .tabs button{margin-right:4px}
.diff .add{background:#e6ffed;color:#135d1f;display:block} .diff .del{background:#ffeef0;color:#8a1020;display:block}
.diff .hunk{color:#6f42c1;display:block} .diff .ctx{display:block}
.legend span{display:inline-block;margin-right:14px} .sw{display:inline-block;width:12px;height:12px;
  vertical-align:middle;margin-right:4px;border:1px solid #333}
.src td.n{color:#888;text-align:right} .src tr:target{background:#fff3b0} .src tr.hit td{font-weight:600}
details{margin:4px 0} summary{cursor:pointer}
.note{color:#555;font-size:13px}
"""

JS = """
const SNAP = JSON.parse(document.getElementById('tfc-snapshots').textContent);
function showPass(i) {
  document.querySelectorAll('.pass-btn').forEach(b => b.classList.toggle('selected', b.dataset.pass == i));
  document.querySelectorAll('.pass-panel').forEach(p => { p.hidden = p.id != 'pass-' + i; });
  const panel = document.getElementById('pass-' + i);
  panel.querySelector('.before').textContent = SNAP.texts[SNAP.steps[i][0]];
  panel.querySelector('.after').textContent = SNAP.texts[SNAP.steps[i][1]];
  showTab(i, 'diff');
}
function showTab(i, which) {
  const panel = document.getElementById('pass-' + i);
  ['diff', 'before', 'after'].forEach(t => { panel.querySelector('.' + t).hidden = t != which; });
}
document.getElementById('graph-fit').addEventListener('click', () =>
  document.querySelectorAll('.graph-view').forEach(g => g.classList.toggle('fit')));
['fused', 'l1'].forEach(which => document.getElementById('graph-show-' + which).addEventListener('click', () => {
  ['fused', 'l1'].forEach(w => {
    document.getElementById('graph-' + w).hidden = w != which;
    document.getElementById('graph-show-' + w).classList.toggle('selected', w == which);
  });
}));
document.querySelectorAll('.pass-btn').forEach(b => b.addEventListener('click', () => showPass(b.dataset.pass)));
document.querySelectorAll('.tabs button').forEach(b =>
  b.addEventListener('click', () => showTab(b.dataset.pass, b.dataset.tab)));
"""


def _count(n) -> str:
    return "run time" if n is None else f"{n:,}"


def _diff_html(lines) -> str:
    if not lines:
        return '<span class="ctx">(this pass changed nothing)</span>'
    out = []
    for line in lines[2:]:  # after the ---/+++ header
        cls = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "ctx")
        out.append(f'<span class="{cls}">{escape(line) or " "}</span>')
    return "".join(out)


def source_anchors(sources) -> tuple:
    """(location text -> "#src-F-L" anchor, file -> index): where each op's line is shown."""
    index = {path: i for i, path in enumerate(sources)}

    def anchor(where):
        path, _, rest = where.rpartition(":")
        if path and path in index and rest.isdigit():
            return f"#src-{index[path]}-{int(rest)}"
        path, _, rest = path.rpartition(":")  # file:line:col
        if path in index and rest.isdigit():
            return f"#src-{index[path]}-{int(rest)}"
        return None

    return anchor, index


def _summary(d) -> str:
    changed = sum(1 for s in d.steps if s.before != s.after)
    total = sum(s.seconds for s in d.steps)
    slow = max(d.kernels, key=lambda k: k.bytes or 0, default=None)
    rows = [("signature", f"{d.name}({d.signature})"), ("target", d.target),
            ("passes", f"{len(d.steps)} run, {changed} changed the IR, {total * 1e3:.2f} ms in all"),
            ("kernels", f"{sum(k.kind == 'fused kernel' for k in d.kernels)} fused kernels, "
                        f"{sum(k.kind == 'library call' for k in d.kernels)} library calls, "
                        f"{sum(k.kind == 'copy' for k in d.kernels)} copies"),
            ("memory", f"planned peak {format_bytes(d.plan.peak)}, arena {format_bytes(d.plan.arena_size)}, "
                       f"fresh per call {format_bytes(d.plan.fresh_bytes)}"
                       + ("" if d.eager_peak is None else f"; eager peak {format_bytes(d.eager_peak)}")),
            ("traces", str(d.trace_count))]
    if slow is not None and slow.bytes:
        rows.append(("most bytes moved", f"#{slow.index} {slow.label} at {slow.location}: {format_bytes(slow.bytes)}"))
    return "<table>" + "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows) + "</table>"


def _passes(d) -> tuple:
    items, panels = [], []
    texts: dict = {}  # IR text -> its index: a pass's "before" is mostly the previous one's "after"
    steps = []
    for i, s in enumerate(d.steps):
        changed = s.before != s.after
        items.append(f'<li><button class="pass-btn {"changed" if changed else "same"}" data-pass="{i}" '
                     f'id="pass-btn-{i}"><span>{i + 1}. {escape(s.name)} <small>({escape(s.stage)})</small>'
                     f'</span><span>{s.seconds * 1e3:.2f} ms · {s.ops_before}→{s.ops_after} ops</span>'
                     f'</button></li>')
        tabs = "".join(f'<button data-pass="{i}" data-tab="{t}">{t}</button>' for t in ("diff", "before", "after"))
        panels.append(f'<div class="pass-panel" id="pass-{i}" hidden><h3>{escape(s.name)} '
                      f'<small>({escape(s.stage)} stage, {s.seconds * 1e3:.3f} ms, ops {s.ops_before} → '
                      f'{s.ops_after})</small></h3><div class="tabs">{tabs}</div>'
                      f'<pre class="diff">{_diff_html(s.diff())}</pre><pre class="before" hidden></pre>'
                      f'<pre class="after" hidden></pre></div>')
        steps.append([texts.setdefault(s.before, len(texts)), texts.setdefault(s.after, len(texts))])
    note = f'<p class="note">{escape(d.steps_note)}</p>' if d.steps_note else ""
    html = (f'{note}<div class="passes"><ul class="pass-list">{"".join(items)}</ul><div class="pass-view">'
            '<p class="note">Click a pass to see its diff, the IR before and after it.</p>'
            f'{"".join(panels)}</div></div>')
    return html, {"texts": list(texts), "steps": steps}


def _kernels(d, anchor) -> str:
    rows = []
    details = []
    for k in d.kernels:
        href = anchor(k.location)
        where = f'<a href="{href}">{escape(k.location)}</a>' if href else escape(k.location)
        what = f"{k.label} (library call)" if k.kind == "library call" else k.label
        rows.append(f'<tr><td><a href="#kernel-{k.index}">#{k.index}</a></td><td>{escape(what)}</td>'
                    f'<td>{where}</td><td class="num">{_count(k.elements)}</td>'
                    f'<td class="num">{_count(k.bytes)}</td></tr>')
        if d.generated_kind == "ptx":
            code = "<p class=\"note\">The PTX of every kernel is in the generated module below.</p>"
        elif k.code is None:
            code = "<p class=\"note\">(no generated lines matched this op: see the whole module below)</p>"
        else:
            code = f"<pre>{escape(k.code)}</pre>"
        details.append(f'<details id="kernel-{k.index}"><summary>#{k.index} {escape(k.label)} · '
                       f'{escape(k.location)} · {_count(k.elements)} elements · {_count(k.bytes)} bytes</summary>'
                       f'<h4>L3 loop</h4><pre>{escape(k.loop)}</pre><h4>generated {escape(d.generated_kind)} code'
                       f'</h4>{code}</details>')
    if not rows:
        return "<p class=\"note\">No kernels: the function moves no data through loops or library calls.</p>"
    return ("<p class=\"note\">In program order: each fused kernel, library call and copy of L3. Elements: the "
            "largest array it reads or writes; bytes moved: each array it reads or writes, once.</p>"
            "<table><tr><th>#</th><th>what</th><th>source</th><th>elements</th><th>bytes moved</th></tr>"
            + "".join(rows) + "</table>" + "".join(details))


def _memory(d) -> str:
    legend = (f'<p class="legend"><span><i class="sw" style="background:#7aa6d6"></i>arena buffer</span>'
              f'<span><i class="sw" style="background:#e3a15a"></i>fresh buffer (allocated when made)</span>'
              f'<span><i class="sw" style="background:repeating-linear-gradient(45deg,#4f7f3a 0 3px,'
              f'#7aa6d6 3px 6px)"></i>reused in place by later values</span>'
              f'<span><b style="color:#c0392b">—</b> planned peak</span><span><b>- -</b> eager peak</span></p>')
    note = ("" if d.eager_peak is not None else
            '<p class="note">Eager peak: not known (shapes known only at run time).</p>')
    rows = "".join(f"<tr><td>buf{b.id}</td><td>{escape(b.kind)}</td><td class=\"num\">"
                   f"{'' if b.offset is None else b.offset}</td><td class=\"num\">{b.nbytes:,}</td>"
                   f"<td>{escape(b.dtype)}{escape(str(list(b.shape)))}</td><td>{b.live[0]}–{b.live[1]}</td>"
                   f"<td class=\"num\">{b.inplace}</td><td>{escape(b.op)}</td></tr>" for b in d.plan.buffers)
    table = ("<details><summary>buffers</summary><table><tr><th>buffer</th><th>kind</th><th>offset</th>"
             "<th>bytes</th><th>type</th><th>live</th><th>in place</th><th>made by</th></tr>"
             f"{rows}</table></details>")
    return legend + memory_svg(d.plan, d.eager_peak, d.program_points) + note + table


def _history(d) -> str:
    if d.trace_count <= 1 or not d.history:
        return "<p class=\"note\">Traced once: no retrace history.</p>"
    return "<pre>" + escape("\n".join(d.history)) + "</pre>"


def _sources(d, index) -> str:
    if not d.sources:
        return "<p class=\"note\">The user's source files could not be read.</p>"
    out = []
    for path, lines in d.sources.items():
        f = index[path]
        rows, prev = [], None
        for n, text in lines.items():
            if prev is not None and n != prev + 1:
                rows.append('<tr><td class="n">…</td><td></td></tr>')
            rows.append(f'<tr id="src-{f}-{n}"><td class="n">{n}</td><td><code>{escape(text)}</code></td></tr>')
            prev = n
        out.append(f"<h3>{escape(path)}</h3><table class=\"src\">{''.join(rows)}</table>")
    return "".join(out)


def page(d, graphs: dict) -> str:
    """The HTML text of the report of ``d`` (collect.ReportData) with the graph's
    SVG after fusion (``graphs["fused"]``) and before it (``graphs["l1"]``)."""
    anchor, index = source_anchors(d.sources)
    passes, snaps = _passes(d)
    # JSON inside <script>: "<" escaped so no text can close the element
    snapshots = json.dumps(snaps).replace("<", "\\u003c")
    title = f"tfc compile report: {d.name}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{CSS}</style></head><body>
<header><h1>{escape(title)}</h1><div class="sub">{escape(d.name)}({escape(d.signature)}) · target
{escape(d.target)}</div></header>
<nav><a href="#summary">summary</a><a href="#graph">graph</a><a href="#passes">passes</a>
<a href="#memory">memory plan</a><a href="#kernels">kernels</a><a href="#generated">generated code</a>
<a href="#history">retraces</a><a href="#source">source</a></nav>
<section id="summary"><h2>Summary</h2>{_summary(d)}</section>
<section id="graph"><h2>Graph</h2><p class="note">Each box an op, each edge a tensor (shape, dtype);
after fusion (L2), a green cluster is one fused kernel with its scalar body; orange boxes are library
calls. Click a node for its source line.</p>
<p><button id="graph-show-fused" class="selected">after fusion (L2)</button>
<button id="graph-show-l1">before fusion (L1)</button> <button id="graph-fit">fit width / actual size</button></p>
<div class="graph-view fit" id="graph-fused">{graphs["fused"]}</div>
<div class="graph-view fit" id="graph-l1" hidden>{graphs["l1"]}</div></section>
<section id="passes"><h2>Passes</h2>{passes}</section>
<section id="memory"><h2>Memory plan</h2>{_memory(d)}</section>
<section id="kernels"><h2>Kernels</h2>{_kernels(d, anchor)}</section>
<section id="generated"><h2>Generated code</h2><details><summary>the whole generated
{escape(d.generated_kind)} module</summary><pre>{escape(d.generated)}</pre></details></section>
<section id="history"><h2>Retrace history</h2>{_history(d)}</section>
<section id="source"><h2>Source</h2>{_sources(d, index)}</section>
<script type="application/json" id="tfc-snapshots">{snapshots}</script>
<script>{JS}</script>
</body></html>
"""
