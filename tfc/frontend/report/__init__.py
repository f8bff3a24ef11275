"""The compile report: one self-contained HTML page showing what the compiler did
with a function: its graph (Graphviz), every pass with its diff, time and op
counts, the memory plan as a picture, the kernels with their generated code,
and the retrace history. ``ConcreteFunction.report(path)``, ``_repr_html_`` in
Jupyter, and ``tfc compile MODEL.py --report OUT.html`` call in here
(docs/report.md)."""
from __future__ import annotations

import os

__all__ = ["render", "render_many", "notebook_html", "write_report", "write_reports"]


def render(compiled) -> str:
    """The HTML text of ``compiled``'s report: a ConcreteFunction (tfc.compile,
    get_concrete_function) or a tfc.function (its latest trace).
    UnavailableError naming the Debian package ``graphviz`` where ``dot`` is missing."""
    from tfc.frontend.report.collect import collect
    from tfc.frontend.report.graph import dot_program, render_svg, to_dot
    from tfc.frontend.report.page import source_anchors, page

    dot_program()  # before any work: the error names the package to install
    data = collect(compiled)
    anchor, _ = source_anchors(data.sources)
    from concurrent.futures import ThreadPoolExecutor

    dots = {stage: to_dot(module, anchor, data.library_sites)
            for stage, module in (("fused", data.graph_module), ("l1", data.l1_module))}
    with ThreadPoolExecutor(len(dots)) as pool:  # two dot processes at once
        graphs = dict(zip(dots, pool.map(render_svg, dots.values())))
    return page(data, graphs)


def write_report(compiled, path) -> str:
    """Write ``render(compiled)`` to ``path`` whole or not at all; returns the path."""
    path = _path(path)
    return _write(path, render(compiled))


def _path(path) -> str:
    """``path`` as a str, or a TypeError naming what was given instead."""
    try:
        return os.fspath(path)
    except TypeError:
        raise TypeError(f"report: the path must be a str or an os.PathLike, got {type(path).__name__} "
                        f"{path!r}") from None


def _write(path: str, text: str) -> str:
    """``text`` written to ``path`` whole or not at all; an OSError names ``path``
    (not the temporary file written first)."""
    from tfc.core.files import write_atomically

    try:
        write_atomically(path, text)
    except OSError as e:
        raise type(e)(e.errno, e.strerror, path) from None
    return path


def notebook_html(compiled) -> str:
    """The report for a notebook cell (``_repr_html_``): the page in a frame of its
    own (``srcdoc``, escaped), so its styles and script touch nothing of the notebook's."""
    from html import escape

    return (f'<iframe title="tfc compile report" srcdoc="{escape(render(compiled), quote=True)}" '
            'style="width:100%;height:820px;border:1px solid #ccc"></iframe>')


def render_many(named) -> str:
    """One page holding the reports of several compiled functions, ``[(name,
    compiled), ...]``: a list of their names, each report in a frame of its own
    (``srcdoc``, escaped: the pages stay separate documents). One function: its page."""
    from html import escape

    named = list(named)
    if len(named) == 1:
        return render(named[0][1])
    pages = [(name, render(c)) for name, c in named]
    links = "".join(f'<li><a href="#fn-{i}">{escape(name)}</a></li>' for i, (name, _) in enumerate(pages))
    frames = "".join(f'<h2 id="fn-{i}">{escape(name)}</h2><iframe title="{escape(name)}" '
                     f'srcdoc="{escape(text, quote=True)}"></iframe>' for i, (name, text) in enumerate(pages))
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>tfc compile report</title>"
            "<style>body{font:14px Helvetica,Arial,sans-serif;margin:16px 24px}iframe{width:100%;height:90vh;"
            "border:1px solid #ccc}</style></head><body><h1>tfc compile report</h1><ul>"
            f"{links}</ul>{frames}</body></html>\n")


def write_reports(named, path) -> str:
    """Write ``render_many(named)`` to ``path`` whole or not at all; returns the path."""
    path = _path(path)
    return _write(path, render_many(named))
