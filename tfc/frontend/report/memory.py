"""The memory plan as a picture (inline SVG): each buffer a bar over its live
range (program points, x) at its arena offset (bytes, y); fresh buffers, which
the plan does not place in the arena, stacked above it; in-place reuse marked;
the planned peak and eager execution's peak as horizontal lines."""
from __future__ import annotations

from html import escape

WIDTH, HEIGHT = 960, 380
LEFT, RIGHT, TOP, BOTTOM = 78, 16, 16, 40
ARENA, FRESH, INPLACE = "#7aa6d6", "#e3a15a", "#4f7f3a"


def fresh_rows(buffers) -> dict:
    """buffer id -> its y offset above the arena: fresh buffers stacked so that
    those live at the same time do not overlap (first fit, in plan order)."""
    placed = []  # (y, height, first, last)
    out = {}
    for b in buffers:
        y = 0
        for py, ph, first, last in sorted(placed):
            overlaps = not (b.live[1] < first or last < b.live[0])
            if overlaps and y < py + ph and py < y + b.nbytes:
                y = py + ph
        placed.append((y, b.nbytes, *b.live))
        out[b.id] = y
    return out


def format_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def memory_svg(plan, eager_peak, points: int) -> str:
    """The picture of ``plan`` (MemoryPlan) over ``points`` program points."""
    arena = [b for b in plan.buffers if b.kind == "arena"]
    fresh = [b for b in plan.buffers if b.kind != "arena"]
    stacked = fresh_rows(fresh)
    top = max([plan.arena_size, plan.peak, eager_peak or 0, 1]
              + [plan.arena_size + stacked[b.id] + b.nbytes for b in fresh])
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    points = max(points, 1)

    def x(p):
        return LEFT + w * p / points

    def y(nbytes):
        return TOP + h - h * nbytes / top

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="memory" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="memory plan">',
             '<defs><pattern id="inplace" width="6" height="6" patternUnits="userSpaceOnUse" '
             'patternTransform="rotate(45)"><rect width="6" height="6" fill="#7aa6d6"/>'
             f'<line x1="0" y1="0" x2="0" y2="6" stroke="{INPLACE}" stroke-width="3"/></pattern></defs>',
             f'<rect x="{LEFT}" y="{TOP}" width="{w}" height="{h}" fill="#fafafa" stroke="#ccc"/>']
    if plan.arena_size:  # the arena's extent
        parts.append(f'<rect x="{LEFT}" y="{y(plan.arena_size):.1f}" width="{w}" '
                     f'height="{y(0) - y(plan.arena_size):.1f}" fill="#eef3fa" stroke="none"/>')
    for b in plan.buffers:
        base = b.offset if b.kind == "arena" else plan.arena_size + stacked[b.id]
        x0, x1 = x(b.live[0]), x(b.live[1] + 1)
        y0, y1 = y(base + b.nbytes), y(base)
        fill = "url(#inplace)" if b.inplace else (ARENA if b.kind == "arena" else FRESH)
        cls = "buffer inplace" if b.inplace else f"buffer {b.kind}"
        parts.append(f'<rect class="{cls}" x="{x0:.1f}" y="{y0:.1f}" width="{max(x1 - x0, 1.5):.1f}" '
                     f'height="{max(y1 - y0, 2):.1f}" fill="{fill}" stroke="#333" stroke-width="0.5">'
                     f'<title>{escape(str(b))}</title></rect>')
        if x1 - x0 > 40 and y1 - y0 > 11:
            parts.append(f'<text x="{x0 + 3:.1f}" y="{y1 - 3:.1f}" font-size="10">buf{b.id}</text>')

    def hline(value, label, color, dash, place="end"):
        yy = y(value)
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + w}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="{color}" '
                     f'stroke-width="1.5" stroke-dasharray="{dash}"/>')
        where = {"start": f'x="{LEFT + 4}"', "middle": f'x="{LEFT + w / 2}" text-anchor="middle"',
                 "end": f'x="{LEFT + w - 4}" text-anchor="end"'}[place]
        parts.append(f'<text {where} y="{yy - 4:.1f}" font-size="11" fill="{color}" '
                     f'paint-order="stroke" stroke="#fff" stroke-width="3">{escape(label)}</text>')

    hline(plan.peak, f"planned peak {format_bytes(plan.peak)}", "#c0392b", "0")
    if eager_peak is not None:
        close = abs(y(eager_peak) - y(plan.peak)) < 14  # the two labels would overlap
        hline(eager_peak, f"eager peak {format_bytes(eager_peak)}", "#555", "6 4", "middle" if close else "end")
    if plan.arena_size and fresh:
        hline(plan.arena_size, f"arena {format_bytes(plan.arena_size)} (fresh buffers above)", "#2c5d8f", "2 3",
              "start")
    for i in range(5):  # y ticks
        v = top * i / 4
        parts.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end">'
                     f'{format_bytes(int(v))}</text>')
    step = max(1, points // 10)
    for p in range(0, points + 1, step):  # x ticks
        parts.append(f'<text x="{x(p):.1f}" y="{TOP + h + 14}" font-size="10" text-anchor="middle">{p}</text>')
    parts.append(f'<text x="{LEFT + w / 2}" y="{HEIGHT - 6}" font-size="11" text-anchor="middle">'
                 'program point (preorder index of the L2 ops): each buffer over its live range</text>')
    parts.append(f'<text x="14" y="{TOP + h / 2}" font-size="11" text-anchor="middle" '
                 f'transform="rotate(-90 14 {TOP + h / 2})">arena offset</text>')
    parts.append("</svg>")
    return "\n".join(parts)
