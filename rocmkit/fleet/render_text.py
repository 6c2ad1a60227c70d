"""The fleet summary as plain text for a terminal (stdout)."""

from __future__ import annotations

from collections.abc import Sequence

from rocmkit.fleet.summarize import DrainEntry, FleetSummary, NodeRow

MAX_FIGURE_COLUMNS = 4


def fmt_number(value: float) -> str:
    return f"{value:.4g}"


def short_figure(key: str) -> str:
    """ "triton.vector_add:bandwidth" -> "vector_add.bandwidth" for a column head. Most
    checks already prefix their figures ("attention.sdpa.flash:sdpa.flash.max_abs_error"),
    so the check's part is added only where the figure does not start with it."""
    check, _, fig = key.partition(":")
    short = check.split(".", 1)[-1]
    if fig == short or fig.startswith(short + ".") or fig.startswith(check.rsplit(".", 1)[-1] + "."):
        return fig
    return f"{short}.{fig}"


def node_cells(n: NodeRow, figures: Sequence[str]) -> list[str]:
    cells = [
        n.hostname,
        n.verdict.value,
        ",".join(n.archs) or "-",
        n.rocm or "-",
        n.torch or "-",
    ]
    for key in figures:
        fig = n.figures.get(key)
        cells.append(f"{fmt_number(fig.value)} {fig.unit}" if fig else "-")
    return cells


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(head, widths, strict=True)).rstrip()]
    lines.extend("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)
    return lines


def render(summary: FleetSummary) -> str:
    figures = summary.key_figures[:MAX_FIGURE_COLUMNS]
    head = ["NODE", "VERDICT", "ARCH", "ROCM", "TORCH", *(short_figure(k) for k in figures)]
    counts = ", ".join(f"{v} {k}" for k, v in sorted(summary.counts.items()))
    lines = [f"{len(summary.nodes)} node(s): {counts}", ""]
    lines += _table(head, [node_cells(n, figures) for n in summary.nodes])
    if summary.failures:
        lines += ["", "Problems by cause:"]
        for g in summary.failures:
            lines.append(f"  [{g.status.value}] {g.check} on {len(g.nodes)} node(s): {', '.join(g.nodes)}")
            lines.append(f"      {g.message}")
            if g.remedy:
                lines.append(f"      fix: {g.remedy}")
    if summary.hardware:
        lines += ["", "Hardware (degraded links, memory errors):"]
        for e in summary.hardware:
            lines.append(f"  {e.hostname} GPU {e.gpu}: {'; '.join(e.problems)}")
    if summary.drift:
        lines += ["", "Version drift:"]
        for d in summary.drift:
            parts = [f"{v} ({', '.join(h)})" for v, h in d.values.items()]
            lines.append(f"  {d.field}: majority {d.majority}; " + "; ".join(parts))
    if summary.outliers:
        lines += [
            "",
            f"Performance outliers (worse than the fleet median by more than {summary.threshold:.0%}):",
        ]
        for o in summary.outliers:
            lines.append(
                f"  {o.hostname}: {o.figure} = {fmt_number(o.value)} {o.unit}, median "
                f"{fmt_number(o.median)} {o.unit} over {o.nodes_compared} {o.peers} nodes ({o.deviation:.0%} worse)"
            )
    if summary.drain:
        lines += ["", "Drain list (node, reason):"]
        lines += [f"  {d.hostname}  {d.reason}" for d in summary.drain]
    if summary.superseded:
        lines += [
            "",
            f"Older reports ignored (a newer one from the same node exists): {len(summary.superseded)}",
        ]
    lines += ["", "healthy" if summary.healthy else "NOT healthy"]
    return "\n".join(lines) + "\n"


def render_drain(entries: Sequence[DrainEntry]) -> str:
    """One ``NODE<TAB>REASON`` line per node to drain, e.g. for
    ``scontrol update NodeName=NODE State=DRAIN Reason="REASON"``."""
    return "".join(f"{d.hostname}\t{d.reason}\n" for d in entries)
