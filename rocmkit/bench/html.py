"""The picture: speedup per model as an inline SVG bar chart, with parity and geomean lines.

``render_svg`` gives the chart alone; ``render_page`` a self-contained HTML page
(the chart, the table, the method) with no scripts and nothing fetched from
the network, so it opens from a CI artifact or an air-gapped cluster.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

from rocmkit.bench.results import ModelResult, SuiteResult

if TYPE_CHECKING:
    from rocmkit.bench.compare import Reference

ROW_H = 30
LABEL_W = 150
BAR_W = 460
VALUE_W = 190
TOP = 56
BOTTOM = 40

COLOR_FASTER = "#2e7d32"
COLOR_SLOWER = "#e65100"
COLOR_FAILED = "#9e9e9e"
COLOR_GEOMEAN = "#1565c0"
COLOR_REFERENCE = "#c62828"


def _scale_max(models: tuple[ModelResult, ...], geomean: float | None) -> float:
    # Scaled to the speedups, not their whiskers: a noisy model's whisker is clipped at the edge
    # rather than squeezing every bar.
    top = max([m.speedup or 0.0 for m in models] + [geomean or 0.0, 1.0])
    # Round up to a half so the ticks land on readable values.
    return max(2.0, math.ceil(top * 1.1 * 2) / 2)


def render_svg(suite: SuiteResult, references: Sequence[Reference] = ()) -> str:
    """The chart; ``references`` (published figures for this suite and mode) as dashed red lines."""
    s = suite.summary
    models = suite.models
    width = LABEL_W + BAR_W + VALUE_W
    height = TOP + ROW_H * max(1, len(models)) + BOTTOM + 16 * len(references)
    xmax = max(_scale_max(models, s.geomean_speedup), *(r.speedup * 1.1 for r in references), 0.0)

    def x(v: float) -> float:
        return LABEL_W + BAR_W * min(v, xmax) / xmax

    title = f"torch.compile speedup over eager ({suite.mode}, {suite.dtype}, {suite.size}) on {suite.device}"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="13" role="img">',
        f"<title>{escape(title)}</title>",
        f'<text x="8" y="20" font-size="15" font-weight="bold">{escape(title)}</text>',
    ]
    axis_y = TOP + ROW_H * max(1, len(models))
    step = 0.5 if xmax <= 4 else float(math.ceil(xmax / 8))
    failed: list[str] = []
    tick = 0.0
    while tick <= xmax + 1e-9:
        tx = x(tick)
        out.append(f'<line x1="{tx:.1f}" y1="{TOP - 6}" x2="{tx:.1f}" y2="{axis_y}" stroke="#eeeeee"/>')
        out.append(f'<text x="{tx:.1f}" y="{axis_y + 16}" text-anchor="middle" fill="#555">{tick:g}x</text>')
        tick += step
    for i, m in enumerate(models):
        y = TOP + i * ROW_H
        mid = y + ROW_H / 2
        out.append(f'<text x="{LABEL_W - 8}" y="{mid + 4:.1f}" text-anchor="end">{escape(m.name)}</text>')
        if m.status == "pass" and m.speedup is not None:
            color = COLOR_FASTER if m.speedup >= 1.0 else COLOR_SLOWER
            out.append(
                f'<rect x="{LABEL_W}" y="{y + 6}" width="{x(m.speedup) - LABEL_W:.1f}" height="{ROW_H - 12}" '
                f'fill="{color}"><title>{escape(m.name)}: {m.speedup:.3f}x</title></rect>'
            )
            if m.speedup_q1 is not None and m.speedup_q3 is not None:
                x1, x3 = x(m.speedup_q1), x(m.speedup_q3)
                out.append(
                    f'<line x1="{x1:.1f}" y1="{mid:.1f}" x2="{x3:.1f}" y2="{mid:.1f}" stroke="#212121"/>'
                )
                # No end cap where the whisker runs off the scale.
                for xe in [xv for xv, v in ((x1, m.speedup_q1), (x3, m.speedup_q3)) if v <= xmax]:
                    out.append(
                        f'<line x1="{xe:.1f}" y1="{mid - 5:.1f}" x2="{xe:.1f}" y2="{mid + 5:.1f}" stroke="#212121"/>'
                    )
            label = f"{m.speedup:.2f}x" + (" (within noise)" if m.noisy else "")
            out.append(f'<text x="{LABEL_W + BAR_W + 8}" y="{mid + 4:.1f}">{escape(label)}</text>')
        else:
            # Drawn last, over the grid and the parity/geomean lines, so the status stays readable.
            text = m.status + (f": {m.message}" if m.message else "")
            short = text if len(text) <= 62 else text[:61] + "…"
            failed.append(
                f'<rect x="{LABEL_W}" y="{y + 6}" width="{BAR_W}" height="{ROW_H - 12}" fill="#fafafa" '
                f'stroke="{COLOR_FAILED}" stroke-dasharray="4 3"><title>{escape(text)}</title></rect>'
            )
            failed.append(f'<text x="{LABEL_W + 8}" y="{mid + 4:.1f}" fill="#616161">{escape(short)}</text>')
    one = x(1.0)
    out.append(
        f'<line x1="{one:.1f}" y1="{TOP - 6}" x2="{one:.1f}" y2="{axis_y}" stroke="#424242" stroke-width="1.5"/>'
    )
    out.append(f'<text x="{one:.1f}" y="{TOP - 10}" text-anchor="middle" fill="#424242">parity</text>')
    if s.geomean_speedup is not None:
        g = x(s.geomean_speedup)
        out.append(
            f'<line x1="{g:.1f}" y1="{TOP - 6}" x2="{g:.1f}" y2="{axis_y}" stroke="{COLOR_GEOMEAN}" '
            f'stroke-width="2" stroke-dasharray="6 4"/>'
        )
        out.append(
            f'<text x="{width - 8}" y="{axis_y + 32}" text-anchor="end" fill="{COLOR_GEOMEAN}">'
            f"geomean {s.geomean_speedup:.2f}x (dashed; clipped at 1: "
            f"{s.geomean_speedup_clipped or 0:.2f}x), pass rate {escape(s.pass_rate)}</text>"
        )
    for k, r in enumerate(references):
        rx = x(r.speedup)
        out.append(
            f'<line x1="{rx:.1f}" y1="{TOP - 6}" x2="{rx:.1f}" y2="{axis_y}" stroke="{COLOR_REFERENCE}" '
            f'stroke-width="2" stroke-dasharray="2 3"><title>{escape(r.label)}</title></line>'
        )
        out.append(
            f'<text x="8" y="{axis_y + 50 + 16 * k}" fill="{COLOR_REFERENCE}">reference (dotted red): '
            f"{escape(r.label)}</text>"
        )
    out += failed
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _cell(v: float | None, fmt: str = "{:.3g}") -> str:
    return "" if v is None else fmt.format(v)


def render_page(suite: SuiteResult, references: Sequence[Reference] = ()) -> str:
    s = suite.summary
    rows = []
    for m in suite.models:
        iqr = f"{m.speedup_q1:.2f}–{m.speedup_q3:.2f}" if m.speedup_q1 and m.speedup_q3 else ""
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{escape(c)}</td>"
                for c in (
                    m.name,
                    m.status,
                    _cell(m.speedup, "{:.2f}x"),
                    iqr,
                    _cell(m.eager_ms),
                    _cell(m.compiled_ms),
                    _cell(m.compile_s, "{:.1f}"),
                    _cell(m.eager_peak_mb, "{:.0f}"),
                    _cell(m.compiled_peak_mb, "{:.0f}"),
                    m.accuracy.method if m.accuracy else "",
                    m.message,
                )
            )
            + "</tr>"
        )
    versions = ", ".join(f"{k} {v}" for k, v in suite.versions.items() if v)
    mem = "GPU allocator peak" if suite.backend != "cpu" else "peak RSS growth of the child process"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>rocmkit bench models: {escape(suite.device)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #212121; }}
table {{ border-collapse: collapse; margin-top: 1em; }}
td, th {{ border: 1px solid #ddd; padding: 4px 8px; text-align: left; font-size: 13px; }}
th {{ background: #f5f5f5; }}
p.note {{ color: #555; font-size: 13px; max-width: 60em; }}
</style></head><body>
<h1>torch.compile vs eager</h1>
<p>{escape(suite.device)} ({escape(suite.backend)}) · {escape(suite.mode)} · {escape(suite.dtype)} ·
size {escape(suite.size)} · {suite.repeat} repeats · {escape(versions)} · {escape(suite.finished_at)}</p>
{render_svg(suite, references)}
<p><b>Pass rate {escape(s.pass_rate)}</b>; geomean speedup over passing models
<b>{_cell(s.geomean_speedup, "{:.2f}x") or "n/a"}</b> (slowdowns included; the dashed line),
{_cell(s.geomean_speedup_clipped, "{:.2f}x") or "n/a"} with each speedup clipped at 1.0 as
PyTorch's dashboard does.</p>
<table><tr><th>model</th><th>status</th><th>speedup</th><th>IQR of paired ratios</th><th>eager ms</th>
<th>compiled ms</th><th>compile s</th><th>eager peak MB</th><th>compiled peak MB</th><th>accuracy</th>
<th>message</th></tr>
{"".join(rows)}
</table>
<p class="note">Method: warm-up, then eager and compiled runs interleaved; speedup = median eager /
median compiled. Whiskers: the 25th–75th percentile of the per-repeat ratios; when they include 1.0
the speedup is within the noise. Accuracy: compiled against eager with allclose at the suite's
tolerance, then an fp64 reference (RMSE) or cosine &ge; 0.99. Memory: {escape(mem)}.
Command: <code>{escape(suite.command)}</code></p>
</body></html>
"""
