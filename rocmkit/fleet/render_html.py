"""The fleet summary as one self-contained HTML page (inline CSS, no scripts, no fetches)."""

from __future__ import annotations

from html import escape

from rocmkit.fleet.render_text import fmt_number, node_cells, short_figure
from rocmkit.fleet.summarize import FleetSummary

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
.pass{color:#176f2c}.warn{color:#9a6700}.fail,.error{color:#b42318;font-weight:bold}.skip{color:#666}
code{background:#f6f6f6;padding:0 .2em}
"""


def _tr(cells: list[str], tag: str = "td") -> str:
    return "<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in cells) + "</tr>"


def render(summary: FleetSummary, *, title: str = "rocmkit fleet summary") -> str:
    figures = list(summary.key_figures)
    head = ["Node", "Verdict", "Arch", "ROCm", "Torch", *(short_figure(k) for k in figures)]
    rows = []
    for n in summary.nodes:
        cells = [escape(c) for c in node_cells(n, figures)]
        cells[1] = f'<span class="{escape(n.verdict.value)}">{cells[1]}</span>'
        rows.append(_tr(cells))
    counts = ", ".join(f"{v} {escape(k)}" for k, v in sorted(summary.counts.items()))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<p>{len(summary.nodes)} node(s): {counts}. "
        f"<strong>{'Healthy' if summary.healthy else 'Not healthy'}</strong>.</p>",
        "<h2>Nodes</h2><table>",
        _tr([escape(h) for h in head], "th"),
        *rows,
        "</table>",
    ]
    if summary.failures:
        parts += [
            "<h2>Problems by cause</h2><table>",
            _tr(["Status", "Check", "Nodes", "Message", "Fix"], "th"),
        ]
        for g in summary.failures:
            parts.append(
                _tr(
                    [
                        f'<span class="{escape(g.status.value)}">{escape(g.status.value)}</span>',
                        escape(g.check),
                        f"{len(g.nodes)}: {escape(', '.join(g.nodes))}",
                        escape(g.message),
                        f"<code>{escape(g.remedy)}</code>" if g.remedy else "",
                    ]
                )
            )
        parts.append("</table>")
    if summary.hardware:
        parts += ["<h2>Hardware (degraded links, memory errors)</h2><table>", _tr(["Node", "GPU", "Found"], "th")]
        for e in summary.hardware:
            parts.append(_tr([escape(e.hostname), escape(e.gpu), escape("; ".join(e.problems))]))
        parts.append("</table>")
    if summary.drift:
        parts += ["<h2>Version drift</h2><table>", _tr(["What", "Majority", "Values (nodes)"], "th")]
        for d in summary.drift:
            values = "<br>".join(f"{escape(v)}: {escape(', '.join(h))}" for v, h in d.values.items())
            parts.append(_tr([escape(d.field), escape(d.majority), values]))
        parts.append("</table>")
    if summary.outliers:
        parts += [
            f"<h2>Performance outliers (worse than the median by more than {summary.threshold:.0%})</h2><table>",
            _tr(["Node", "Figure", "Value", "Fleet median", "Worse by"], "th"),
        ]
        for o in summary.outliers:
            parts.append(
                _tr(
                    [
                        escape(o.hostname),
                        escape(o.figure),
                        escape(f"{fmt_number(o.value)} {o.unit}"),
                        escape(f"{fmt_number(o.median)} {o.unit} ({o.nodes_compared} {o.peers} nodes)"),
                        f"{o.deviation:.0%}",
                    ]
                )
            )
        parts.append("</table>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
