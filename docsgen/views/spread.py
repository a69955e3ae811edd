"""A strip plot as inline SVG (no plotting library on the docs build): one column per
group, one point per value, reference lines across; what a results page shows of a
ratio's spread over seeds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

#: the plot's size and margins, in pixels
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 640, 280, 48, 36, 12


def strip_plot(
    groups: Mapping[str, Sequence[float]], lines: Mapping[str, float], y_label: str
) -> str:
    """``groups`` (name → values) as points over columns, ``lines`` (label → y) dashed."""
    values = [v for vs in groups.values() for v in vs] + list(lines.values())
    top = max(values, default=1.0) * 1.1 or 1.0
    inner_w, inner_h = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP

    def y(v: float) -> float:
        return TOP + inner_h * (1 - v / top)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(y_label)}" font-family="sans-serif" font-size="11">',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + inner_h}" stroke="#444"/>',
        f'<text x="4" y="{TOP + 8}">{escape(y_label)}</text>',
    ]
    for tick in (0.0, top / 2, top):
        parts.append(f'<text x="{LEFT - 4}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.2f}</text>')
    for name, level in lines.items():
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - 8}" y1="{y(level):.1f}" y2="{y(level):.1f}" '
            f'stroke="#999" stroke-dasharray="4 3"/><text x="{WIDTH - 10}" y="{y(level) - 3:.1f}" '
            f'text-anchor="end" fill="#666">{escape(name)}</text>'
        )
    step = inner_w / max(len(groups), 1)
    for i, (name, vs) in enumerate(groups.items()):
        cx = LEFT + step * (i + 0.5)
        parts.append(f'<text x="{cx:.1f}" y="{HEIGHT - 12}" text-anchor="middle">{escape(name)}</text>')
        for j, v in enumerate(vs):
            dx = (j - (len(vs) - 1) / 2) * min(6.0, step / max(len(vs), 1))
            parts.append(
                f'<circle cx="{cx + dx:.1f}" cy="{y(v):.1f}" r="3.5" fill="#1f77b4" fill-opacity="0.7"/>'
            )
    return "".join(parts) + "</svg>"
