"""node_exporter textfile format, for cluster monitoring.

Write the file with :func:`write_atomic`: node_exporter's textfile collector may
read it at any moment, and a half-written file is a scrape error.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from rocmkit.doctor.result import EXIT_CODES, Report, Status

_VERDICT_VALUE = {s: EXIT_CODES[s] for s in Status}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _unit_label(unit: str) -> str:
    return re.sub(r"\s+", "", unit)


def _unique(names: list[str]) -> list[str]:
    """Prometheus rejects two series with the same labels: a second result (or figure)
    under one name, one per GPU say, becomes ``name#2``, then ``name#3``."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


def render(report: Report) -> str:
    host = report.hostname
    checks = list(zip(_unique([r.name for r in report.results]), report.results, strict=True))
    lines: list[str] = [
        "# HELP rocmkit_check_status 1 for the status each doctor check ended with, 0 for the others.",
        "# TYPE rocmkit_check_status gauge",
    ]
    for name, r in checks:
        for s in Status:
            value = 1 if r.status is s else 0
            lines.append(
                f"rocmkit_check_status{_labels(host=host, check=name, status=s.value, level=str(r.level))} {value}"
            )
    lines += [
        "# HELP rocmkit_check_duration_seconds Wall time of each doctor check.",
        "# TYPE rocmkit_check_duration_seconds gauge",
    ]
    for name, r in checks:
        lines.append(
            f"rocmkit_check_duration_seconds{_labels(host=host, check=name)} {_number(r.duration_s)}"
        )
    figure_lines = [
        f"rocmkit_figure{_labels(host=host, check=name, name=fig_name, unit=_unit_label(f.unit))} "
        f"{_number(f.value)}"
        for name, r in checks
        for fig_name, f in zip(_unique([f.name for f in r.figures]), r.figures, strict=True)
    ]
    if figure_lines:
        lines += [
            "# HELP rocmkit_figure A number a doctor check measured (bandwidth, TFLOP/s, speedup, compile time).",
            "# TYPE rocmkit_figure gauge",
            *figure_lines,
        ]
    # The floors of the GPU model (matrices/sku.toml) the figures were held to, where one applied.
    floor_lines = [
        f"rocmkit_figure_floor{_labels(host=host, check=name, name=fig_name, unit=_unit_label(f.unit), sku=f.sku or '')} "
        f"{_number(f.floor)}"
        for name, r in checks
        for fig_name, f in zip(_unique([f.name for f in r.figures]), r.figures, strict=True)
        if f.floor is not None
    ]
    peak_lines = [
        f"rocmkit_figure_peak_ratio{_labels(host=host, check=name, name=fig_name, sku=f.sku or '')} "
        f"{_number(f.pct_of_peak / 100.0)}"
        for name, r in checks
        for fig_name, f in zip(_unique([f.name for f in r.figures]), r.figures, strict=True)
        if f.pct_of_peak is not None
    ]
    if floor_lines:
        lines += [
            "# HELP rocmkit_figure_floor The least the figure may be on this GPU model (below it: a warning).",
            "# TYPE rocmkit_figure_floor gauge",
            *floor_lines,
        ]
    if peak_lines:
        lines += [
            "# HELP rocmkit_figure_peak_ratio The figure as a share of the GPU model's peak (0 to 1).",
            "# TYPE rocmkit_figure_peak_ratio gauge",
            *peak_lines,
        ]
    lines += [
        "# HELP rocmkit_doctor_verdict The doctor's exit code: 0 pass, 1 fail, 2 warnings only, 3 could not run.",
        "# TYPE rocmkit_doctor_verdict gauge",
        f"rocmkit_doctor_verdict{_labels(host=host, verdict=report.verdict.value, level=str(report.level))} "
        f"{_VERDICT_VALUE[report.verdict]}",
        "# HELP rocmkit_doctor_last_run_timestamp_seconds When the doctor run finished (Unix time).",
        "# TYPE rocmkit_doctor_last_run_timestamp_seconds gauge",
        f"rocmkit_doctor_last_run_timestamp_seconds{_labels(host=host)} {_number(_unix(report.finished_at))}",
    ]
    return "\n".join(lines) + "\n"


def _unix(iso: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("nan")


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` in one step, readable by node_exporter (0644) whatever the umask."""
    from rocmkit.util.atomicio import write_text_atomic

    write_text_atomic(Path(path), text, mode=0o644)
