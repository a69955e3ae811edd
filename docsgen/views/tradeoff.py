"""A trade-off plot as inline SVG (no plotting library on the docs build): per panel one
curve (a method at several settings, joined in order) and other methods' single points,
wastage on a log axis against failures; what a results page shows of whether a curve
dominates the points."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

#: one panel's size and margins, and panels per row, in pixels
PANEL_W, PANEL_H, LEFT, BOTTOM, TOP, COLUMNS = 300, 200, 44, 30, 18, 3

Point = tuple[float, float]


def curve_plot(
    panels: Mapping[str, tuple[Sequence[Point], Mapping[str, Point]]], x_label: str, y_label: str
) -> str:
    """``panels``: name → (the curve's (x, y) points in order, label → another method's
    point); x (wastage) on a log scale, y (failures) from 0."""
    rows = max(math.ceil(len(panels) / COLUMNS), 1)
    width, height = PANEL_W * min(len(panels), COLUMNS), PANEL_H * rows + 16
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(y_label)} against {escape(x_label)}" font-family="sans-serif" '
        f'font-size="10">',
        f'<text x="4" y="{height - 4}">x: {escape(x_label)} (log); y: {escape(y_label)}; '
        "line: the curve, dots: the others</text>",
    ]
    for k, (name, (curve, points)) in enumerate(panels.items()):
        ox, oy = PANEL_W * (k % COLUMNS), PANEL_H * (k // COLUMNS)
        parts.append(_panel(name, curve, points, ox, oy))
    return "".join(parts) + "</svg>"


def _panel(
    name: str, curve: Sequence[Point], points: Mapping[str, Point], ox: float, oy: float
) -> str:
    every = [*curve, *points.values()]
    xs = [math.log10(max(x, 1e-12)) for x, _ in every] or [0.0]
    lo, hi = min(xs), max(xs)
    lo, hi = (
        (lo - 0.5, hi + 0.5) if hi - lo < 1e-9 else (lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
    )
    top = max((y for _, y in every), default=1.0) * 1.1 or 1.0
    inner_w, inner_h = PANEL_W - LEFT - 10, PANEL_H - BOTTOM - TOP

    def at(x: float, y: float) -> tuple[float, float]:
        lx = math.log10(max(x, 1e-12))
        return ox + LEFT + inner_w * (lx - lo) / (hi - lo), oy + TOP + inner_h * (1 - y / top)

    x0, y0 = ox + LEFT, oy + TOP + inner_h
    parts = [
        f'<text x="{ox + LEFT}" y="{oy + 12}" font-weight="bold">{escape(name)}</text>',
        f'<line x1="{x0}" y1="{oy + TOP}" x2="{x0}" y2="{y0}" stroke="#444"/>',
        f'<line x1="{x0}" y1="{y0}" x2="{ox + PANEL_W - 10}" y2="{y0}" stroke="#444"/>',
        f'<text x="{x0 - 3}" y="{oy + TOP + 4}" text-anchor="end">{top:.0f}</text>',
        f'<text x="{x0 - 3}" y="{y0 + 3}" text-anchor="end">0</text>',
        f'<text x="{x0}" y="{y0 + 12}">{10**lo:.3g}</text>',
        f'<text x="{ox + PANEL_W - 10}" y="{y0 + 12}" text-anchor="end">{10**hi:.3g}</text>',
    ]
    line = " ".join("{:.1f},{:.1f}".format(*at(x, y)) for x, y in curve)
    parts.append(f'<polyline points="{line}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>')
    for x, y in curve:
        cx, cy = at(x, y)
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3" fill="#1f77b4"/>')
    for label, (x, y) in points.items():
        cx, cy = at(x, y)
        parts.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3" fill="#d62728" fill-opacity="0.7"/>'
            f'<text x="{cx + 4:.1f}" y="{cy - 3:.1f}" fill="#666" font-size="8">{escape(label)}</text>'
        )
    return "".join(parts)
