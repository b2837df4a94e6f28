"""Server-side SVG charts: geometry computed here, drawn by `templates/dashboards/_chart.html`.

No JavaScript and no CDN: a chart is a list of shapes with numeric coordinates and text that the
template escapes. Colours are CSS classes (`static/dashboards/dashboards.css`) except the heatmap
cells, whose fill is computed here as a hex colour (an SVG presentation attribute, allowed by
the Content-Security-Policy, unlike inline `style`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from review.stats import TOO_FEW_TASKS, interval_shown


@dataclass(frozen=True)
class Shape:
    kind: str  # rect | line | polyline | polygon | circle | text
    cls: str = ""
    x: float = 0
    y: float = 0
    w: float = 0
    h: float = 0
    x2: float = 0
    y2: float = 0
    r: float = 0
    points: str = ""
    text: str = ""
    anchor: str = "start"
    fill: str = ""
    title: str = ""


@dataclass
class Chart:
    title: str
    csv: str  # chart name for the CSV download
    width: int = 640
    height: int = 260
    shapes: list[Shape] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)  # (css class, label)
    note: str = ""  # how to read the chart, in words (shown under it)
    empty: str = ""  # shown instead of the drawing when there is nothing to draw

    def add(self, kind: str, **kw: object) -> None:
        self.shapes.append(Shape(kind, **kw))  # type: ignore[arg-type]


PAD_L, PAD_R, PAD_T, PAD_B = 56, 16, 16, 40


def fmt(v: float | None, digits: int = 2) -> str:
    return "—" if v is None else f"{v:.{digits}f}"


def nice_ticks(top: float, *, count: int = 4) -> tuple[list[float], int]:
    """Round ticks from 0 to at least `top` (steps of 1, 2, 2.5 or 5 × 10^k), and the digits
    their labels need: 0 / 1 / 2 / 3 rather than 0 / 1.31 / 2.63 printed as 0 / 1 / 3."""
    if not top > 0 or not math.isfinite(top):
        return [0.0, 1.0], 0
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    n = math.ceil(top / step - 1e-9)
    ticks = [round(step * k, 10) for k in range(n + 1)]
    digits = max(0, -math.floor(math.log10(step) + 1e-9)) + (1 if step / power == 2.5 else 0)
    return ticks, digits


def precise(v: float) -> str:
    """A value label with sensible precision: three significant figures, never rounded to a
    misleading integer (1.31 stays 1.31, 42.4 stays 42.4, 1234 is 1234)."""
    if v == 0:
        return "0"
    digits = max(0, 2 - math.floor(math.log10(abs(v))))
    return f"{v:.{digits}f}"


class _Scale:
    def __init__(self, lo: float, hi: float, a: float, b: float) -> None:
        self.lo, self.hi, self.a, self.b = lo, hi if hi > lo else lo + 1, a, b

    def __call__(self, v: float) -> float:
        return round(self.a + (v - self.lo) / (self.hi - self.lo) * (self.b - self.a), 2)


def _y_axis(c: Chart, y: _Scale, ticks: Sequence[float], digits: int = 1) -> None:
    for t in ticks:
        c.add("line", cls="grid", x=PAD_L, y=y(t), x2=c.width - PAD_R, y2=y(t))
        c.add("text", cls="tick", x=PAD_L - 6, y=y(t) + 4, text=fmt(t, digits), anchor="end")


def _ci_drawn(ci: dict | None) -> bool:
    if not ci or ci["estimate"] is None:
        return False
    return interval_shown(int(ci.get("n_tasks") or 0), ci["low"], ci["high"])


def ci_rows(title: str, csv: str, rows: Sequence[tuple[str, dict | None]]) -> Chart:
    """One horizontal row per label: the estimate as a dot, the 95% CI as a bar.

    A row without an interval (no estimate, or too few tasks for one) gets no dot: a point on
    the shared axis reads as a measurement (a one-task κ of 0 from a grader giving one tier
    read as "κ = 0"). It says "no estimate" and why in words, from the plot's left edge so the
    words fit (placed after a dot near 1 they ran off the chart), with any point value.
    """
    height = PAD_T + PAD_B + 28 * max(len(rows), 1)
    c = Chart(title, csv, height=height)
    drawn = [ci for _, ci in rows if ci and _ci_drawn(ci)]
    vals = [v for ci in drawn for v in (ci["low"], ci["high"], ci["estimate"])]
    if not drawn and not any(ci and ci["estimate"] is not None for _, ci in rows):
        c.empty = "No data for this chart in the current slice."
        return c
    lo, hi = min([0.0, *vals]), max([1.0, *vals])
    left = 200
    x = _Scale(lo, hi, left, c.width - PAD_R)
    for t in (lo, (lo + hi) / 2, hi) if lo < 0 else (0.0, 0.25, 0.5, 0.75, 1.0):
        c.add("line", cls="grid", x=x(t), y=PAD_T, x2=x(t), y2=height - PAD_B + 6)
        c.add("text", cls="tick", x=x(t), y=height - PAD_B + 20, text=fmt(t), anchor="middle")
    for i, (label, ci) in enumerate(rows):
        cy = PAD_T + 14 + 28 * i
        c.add("text", cls="label", x=left - 8, y=cy + 4, text=label[:30], anchor="end")
        if ci and _ci_drawn(ci):
            tip = f"{label}: {fmt(ci['estimate'], 3)} [{fmt(ci['low'], 3)}, {fmt(ci['high'], 3)}]"
            c.add("line", cls="ci", x=x(ci["low"]), y=cy, x2=x(ci["high"]), y2=cy, title=tip)
            c.add("circle", cls="point", x=x(ci["estimate"]), y=cy, r=5, title=tip)
            continue
        if not ci or ci["estimate"] is None:
            note = "no estimate"
        else:
            n = int(ci.get("n_tasks") or 0)
            note = (
                f"no estimate: {TOO_FEW_TASKS} ({n} task{'' if n == 1 else 's'}; "
                f"point value {fmt(ci['estimate'])})"
            )
        c.add("text", cls="muted no-estimate", x=left + 4, y=cy + 4, text=note)
    return c


def heatmap(
    title: str,
    csv: str,
    matrix: list[list[int]],
    labels: Sequence[str],
    *,
    row_labels: Sequence[str] | None = None,
) -> Chart:
    """Rows: grader; columns: human consensus. Shade by count relative to the largest cell, so
    equal counts get equal shades anywhere in the matrix (a per-row share shaded a lone
    candidate as dark as forty)."""
    size, left, top = 64, 150, 40
    n = len(labels)
    rows = list(row_labels or [f"grader {lab}" for lab in labels])
    c = Chart(title, csv, width=left + size * n + 40, height=top + size * len(matrix) + 30)
    if not any(any(r) for r in matrix):
        c.empty = "No candidate is both graded and reviewed in this slice."
        return c
    peak = max(max(r) for r in matrix)
    c.note = (
        f"Each cell counts candidates; the darker the cell, the larger its count (the darkest "
        f"is {peak}). Green: grader and humans agree; blue: they differ."
    )
    c.add("text", cls="axis", x=left + size * n / 2, y=16, text="human consensus", anchor="middle")
    for j, lab in enumerate(labels):
        c.add(
            "text", cls="tick", x=left + size * j + size / 2, y=top - 8, text=lab, anchor="middle"
        )
    for i, row in enumerate(matrix):
        c.add(
            "text",
            cls="tick",
            x=left - 8,
            y=top + size * i + size / 2 + 4,
            text=rows[i],
            anchor="end",
        )
        for j, v in enumerate(row):
            shade = int(245 - (v / peak) * 170)
            fill = (
                f"#{shade:02x}{min(255, shade + 12):02x}ff"
                if i != j
                else f"#{shade:02x}ff{shade:02x}"
            )
            c.add(
                "rect",
                cls="cell",
                x=left + size * j,
                y=top + size * i,
                w=size - 2,
                h=size - 2,
                fill=fill,
                title=f"{rows[i]}, humans {labels[j]}: {v}",
            )
            c.add(
                "text",
                cls="cellnum",
                x=left + size * j + size / 2 - 1,
                y=top + size * i + size / 2 + 5,
                text=str(v),
                anchor="middle",
            )
    return c


def lines(
    title: str,
    csv: str,
    x_labels: Sequence[str],
    series: Sequence[
        tuple[str, Sequence[float | None], Sequence[tuple[float | None, float | None]] | None]
    ],
    *,
    y_range: tuple[float, float] = (0.0, 1.0),
    dots: Sequence[tuple[str, Sequence[tuple[float, float]]]] = (),
    x_values: Sequence[float] | None = None,
    markers: bool = True,
) -> Chart:
    """Line per series over x (step labels, or numeric `x_values`), with an optional CI band."""
    c = Chart(title, csv)
    n = len(x_labels)
    if not n or all(all(v is None for v in s[1]) for s in series):
        c.empty = "No data for this chart in the current slice."
        return c
    xs = list(x_values) if x_values is not None else list(range(n))
    x = _Scale(min(xs), max(xs), PAD_L + 10, c.width - PAD_R - 10)
    y = _Scale(y_range[0], y_range[1], c.height - PAD_B, PAD_T)
    _y_axis(c, y, [y_range[0] + (y_range[1] - y_range[0]) * k / 4 for k in range(5)], 2)
    every = max(1, n // 8)
    for i in range(0, n, every):
        c.add(
            "text",
            cls="tick",
            x=x(xs[i]),
            y=c.height - PAD_B + 18,
            text=x_labels[i],
            anchor="middle",
        )
    for k, (name, values, band) in enumerate(series):
        cls = f"s{k}"
        c.legend.append((cls, name))
        if band:
            upper = [
                (x(xs[i]), y(hi))
                for i, (lo, hi) in enumerate(band)
                if lo is not None and hi is not None
            ]
            lower = [
                (x(xs[i]), y(lo))
                for i, (lo, hi) in enumerate(band)
                if lo is not None and hi is not None
            ]
            if len(upper) > 1:
                pts = " ".join(f"{a},{b}" for a, b in upper + lower[::-1])
                c.add("polygon", cls=f"band {cls}", points=pts)
        at = [(x(xs[i]), y(v)) for i, v in enumerate(values) if v is not None]
        if len(at) > 1:
            c.add("polyline", cls=f"line {cls}", points=" ".join(f"{a},{b}" for a, b in at))
        for i, v in enumerate(values):
            if v is not None and (markers or len(at) == 1):
                c.add(
                    "circle",
                    cls=f"dot {cls}",
                    x=x(xs[i]),
                    y=y(v),
                    r=3,
                    title=f"{name} at {x_labels[i]}: {fmt(v, 3)}",
                )
    for k, (name, pts2) in enumerate(dots):
        cls = f"s{k} hollow"
        c.legend.append((cls, name))
        for px, py in pts2:
            c.add(
                "circle",
                cls=f"dot {cls}",
                x=x(px),
                y=y(py),
                r=4,
                title=f"{name}: {fmt(py)} at {fmt(px)}",
            )
    return c


def bars(
    title: str,
    csv: str,
    labels: Sequence[str],
    values: Sequence[float | None],
    *,
    unit: str = "",
) -> Chart:
    c = Chart(title, csv, width=300, height=220)
    real = [v for v in values if v is not None]
    if not real:
        c.empty = "No data."
        return c
    ticks, tick_digits = nice_ticks(max(real) or 1.0)
    y = _Scale(0, ticks[-1] * 1.1, c.height - PAD_B, PAD_T)
    slot = (c.width - PAD_L - PAD_R) / max(len(labels), 1)
    _y_axis(c, y, ticks, tick_digits)
    for i, (lab, v) in enumerate(zip(labels, values, strict=True)):
        x0 = PAD_L + slot * i + slot * 0.2
        c.add(
            "text",
            cls="tick",
            x=x0 + slot * 0.3,
            y=c.height - PAD_B + 18,
            text=lab,
            anchor="middle",
        )
        if v is None:
            continue
        c.add(
            "rect",
            cls=f"bar t{i}",
            x=x0,
            y=y(v),
            w=slot * 0.6,
            h=y(0) - y(v),
            title=f"{lab}: {precise(v)}{unit}",
        )
        c.add(
            "text",
            cls="barnum",
            x=x0 + slot * 0.3,
            y=y(v) - 4,
            text=precise(v),
            anchor="middle",
        )
    return c
