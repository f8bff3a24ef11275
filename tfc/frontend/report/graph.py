"""The report's graph: the fused module (L1's ops after fusion) as a Graphviz
drawing. Ops are nodes, tensors are edges labeled with shape and dtype, each
fused kernel is a cluster holding its scalar body, library calls are marked,
and each node links to the user's source line (an anchor of the report's source
section). Rendered by the system's ``dot`` program to SVG, inlined in the page."""
from __future__ import annotations

import re
import shutil
import subprocess

from tfc.core.errors import UnavailableError

LARGE = 150  # nodes: above this, dot is told to spend less time on the layout (a 500-op step: 5.6 -> 1.4 s)
COLORS = {"op": "#dbe8f6", "library": "#f8d49a", "scalar": "#e4f2dc", "input": "#ffffff",
          "output": "#ffffff", "const": "#f2f2f2", "region": "#ece4f4"}


def dot_program() -> str:
    """The path of Graphviz's ``dot``; UnavailableError naming the package where it is missing."""
    path = shutil.which("dot")
    if path is None:
        raise UnavailableError("the compile report draws its graph with Graphviz's `dot` program, which is "
                               "not on PATH: install the Debian/Ubuntu package `graphviz` "
                               "(sudo apt-get install graphviz; `make sysdeps` does it)")
    return path


def quote(text: str) -> str:
    """``text`` as a DOT string literal (no Graphviz escape such as \\N or \\l survives)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def type_label(t) -> str:
    """``4x5 f32`` for a tensor or memref type, the type's text otherwise."""
    from tfc.dialects.tensor import RefType

    if isinstance(t, RefType):
        return "variable"
    shape = getattr(t, "get_shape", None)
    if shape is None:
        return str(t)
    dims = "x".join("?" if d < 0 else str(d) for d in shape())
    return f"{dims or 'scalar'} {t.element_type}"


class _Dot:
    def __init__(self, anchor, library_sites):
        self.anchor = anchor                # location text -> "#src-..." or None
        self.library_sites = library_sites  # (callee, location) of L3's library calls
        self.lines = []
        self.edges = []  # written after every cluster: an edge inside one would pull its ends in
        self.node_of = {}                   # SSA value -> (node id, edge label)
        self.count = 0

    def new_node(self, label, kind, tooltip="", href=None, shape="box"):
        self.count += 1
        node = f"n{self.count}"
        attrs = [f"label={quote(label)}", f"shape={shape}", "style=\"filled,rounded\"",
                 f"fillcolor=\"{COLORS[kind]}\"", f"tooltip={quote(tooltip or label)}"]
        if href:
            attrs.append(f"href=\"{href}\"")  # a "#src-N-L" anchor: no user text
            attrs.append("target=\"_self\"")
        self.lines.append(f"{node} [{', '.join(attrs)}];")
        return node

    def edge(self, value, to, label=True):
        src = self.node_of.get(value)
        if src is None:
            return
        node, text = src
        self.edges.append(f"{node} -> {to}" + (f" [label={quote(text)}];" if label and text else ";"))

    def op_node(self, op):
        from tfc.dialects.tensor import loc_str

        where = loc_str(op)
        short = op.name[4:] if op.name.startswith("tfc.") else op.name
        kind = "op"
        label = short
        if (short, where) in self.library_sites:
            kind, label = "library", f"{short}\n[library call]"
        elif op.name == "tfc.constant":
            kind = "const"
        tooltip = f"{op.name} at {where}"
        return self.new_node(label, kind, tooltip, self.anchor(where))

    def block(self, block, enclosing=None):
        """Nodes and edges of ``block``'s ops; region ops draw their regions as
        clusters; a terminator feeds ``enclosing`` (the op holding the region)."""
        from xdsl.dialects import func

        from tfc.dialects.fused import FusedOp

        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                node = self.new_node("return", "output", shape="ellipse")
                for v in op.operands:
                    self.edge(v, node)
            elif isinstance(op, FusedOp):
                self.fused(op)
            elif op.regions:
                node = self.op_node(op)
                for v in op.operands:
                    self.edge(v, node)
                for r in op.results:
                    self.node_of[r] = (node, type_label(r.type))
                for i, region in enumerate(op.regions):
                    self.count += 1
                    self.lines.append(f"subgraph cluster_{self.count} {{")
                    self.lines.append(f"label={quote(f'{op.name}: region {i}')}; style=filled; "
                                      f"color=\"{COLORS['region']}\";")
                    for b in region.blocks:
                        for a in b.args:
                            self.node_of[a] = (node, type_label(a.type))
                        self.block(b, node)
                    self.lines.append("}")
            elif enclosing is not None and not op.results and op is block.last_op:
                for v in op.operands:  # a region's yield: its values go back to the op
                    self.edge(v, enclosing)
            else:
                node = self.op_node(op)
                for v in op.operands:
                    self.edge(v, node)
                for r in op.results:
                    self.node_of[r] = (node, type_label(r.type))

    def fused(self, op):
        """A fused kernel: a cluster of its scalar body; its inputs' edges go to
        the body ops reading them, its results leave from an output node."""
        from tfc.dialects.tensor import loc_str

        where = loc_str(op)
        reduce = [a.data for a in op.reduce.data] if op.reduce is not None else []
        kinds = ", ".join(k for k in reduce if k != "none")
        self.count += 1
        self.lines.append(f"subgraph cluster_{self.count} {{")
        title = "fused kernel" + (f" (reduce {kinds})" if kinds else "") + f"  {where}"
        self.lines.append(f"label={quote(title)}; style=\"filled,rounded\"; color=\"#9bbf8a\"; "
                          f"fillcolor=\"#f5fbf2\";")
        (body,) = op.body.blocks
        for arg, v in zip(body.args, op.operands):
            self.node_of[arg] = self.node_of.get(v, (None, ""))
        constants = {}  # scalar constants are written into their readers' labels, not drawn
        for inner in body.ops:
            if inner.name == "arith.constant":
                constants[inner.results[0]] = _constant_text(inner)
                continue
            if inner is body.last_op:  # tfc.fused_yield: one output node per result
                for r, v in zip(op.results, inner.operands):
                    out = self.new_node("out" if not kinds else "reduce", "scalar", type_label(r.type),
                                        self.anchor(where), shape="ellipse")
                    self.edge(v, out, label=False)
                    self.node_of[r] = (out, type_label(r.type))
                continue
            args = [constants[v] for v in inner.operands if v in constants]
            label = inner.name.split(".", 1)[-1] + (f" ({', '.join(args)})" if args else "")
            node = self.new_node(label, "scalar", f"{inner.name} in fused kernel at {where}",
                                 self.anchor(where))
            for v in inner.operands:
                self.edge(v, node, label=v in body.args)
            for r in inner.results:
                self.node_of[r] = (node, "")
        self.lines.append("}")


def _constant_text(op) -> str:
    """The value of an ``arith.constant`` as a short label (``1.0``, ``-inf``, ``3``)."""
    value = op.value
    data = getattr(value, "value", None)
    data = getattr(data, "data", data)
    return repr(data) if isinstance(data, (int, float)) else str(value)


def to_dot(module, anchor, library_sites) -> str:
    """The DOT text of ``module``'s one function (see the module docstring).
    ``anchor(location)`` gives a node's link target or None."""
    from xdsl.dialects import func

    (f,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    d = _Dot(anchor, library_sites)
    d.lines.append("digraph tfc {")
    d.lines.append("graph [rankdir=TB, fontname=\"Helvetica\", fontsize=11, nodesep=0.25, ranksep=0.35];")
    d.lines.append("node [fontname=\"Helvetica\", fontsize=10, height=0.3];")
    d.lines.append("edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\", fontcolor=\"#333333\"];")
    for a in f.body.block.args:
        name = a.name_hint or f"arg{a.index}"
        node = d.new_node(name, "input", f"argument {name}: {a.type}", shape="ellipse")
        d.node_of[a] = (node, type_label(a.type))
    d.block(f.body.block)
    if d.count > LARGE:  # fewer crossing-minimization and network-simplex rounds: ~4x faster, a bit less tidy
        d.lines.insert(1, "graph [mclimit=0.3, nslimit=1, nslimit1=1];")
    d.lines += d.edges
    d.lines.append("}")
    return "\n".join(d.lines) + "\n"


def render_svg(dot_text: str, timeout: float = 120) -> str:
    """``dot_text`` drawn by ``dot`` as an SVG element for inlining in HTML."""
    try:
        done = subprocess.run([dot_program(), "-Tsvg"], input=dot_text, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        nodes = dot_text.count(" [label=")
        raise RuntimeError(f"Graphviz's dot took over {timeout:.0f} s to draw the report's graph "
                           f"({nodes} nodes)") from None
    if done.returncode != 0:
        raise RuntimeError(f"Graphviz's dot failed on the report's graph: {done.stderr.strip()}")
    svg = done.stdout
    start = svg.find("<svg")
    if start < 0:
        raise RuntimeError("Graphviz's dot wrote no SVG for the report's graph")
    svg = svg[start:]
    return re.sub(r"<!--.*?-->", "", svg, flags=re.S)  # dot's comments carry node ids only
