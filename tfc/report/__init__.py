"""The compile report: one self-contained HTML page showing what the compiler did
with a function: its graph (Graphviz), every pass with its diff, time and op
counts, the memory plan as a picture, the kernels with their generated code,
and the retrace history. ``ConcreteFunction.report(path)``, ``_repr_html_`` in
Jupyter, and ``tfc compile MODEL.py --report OUT.html`` call in here
(docs/report.md)."""
from __future__ import annotations

import os

__all__ = ["render", "write_report"]


def render(compiled) -> str:
    """The HTML text of ``compiled``'s report: a ConcreteFunction (tfc.compile,
    get_concrete_function) or a tfc.function (its latest trace).
    UnavailableError naming the Debian package ``graphviz`` where ``dot`` is missing."""
    from tfc.report.collect import collect
    from tfc.report.graph import dot_program, render_svg, to_dot
    from tfc.report.page import _anchors, page

    dot_program()  # before any work: the error names the package to install
    data = collect(compiled)
    anchor, _ = _anchors(data.sources)
    svg = render_svg(to_dot(data.graph_module, anchor, data.library_sites))
    return page(data, svg)


def write_report(compiled, path) -> str:
    """Write ``render(compiled)`` to ``path`` whole or not at all; returns the path."""
    from tfc.cli import write_atomically

    path = os.fspath(path)
    write_atomically(path, render(compiled))
    return path
