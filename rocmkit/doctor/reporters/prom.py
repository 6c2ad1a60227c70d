"""node_exporter textfile format, for cluster monitoring.

Write the file with :func:`write_atomic`: node_exporter's textfile collector may
read it at any moment, and a half-written file is a scrape error.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from rocmkit.doctor.result import EXIT_CODES, Report, Status
from rocmkit.machine import GpuHealth

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
    lines += health_lines(report)
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


# One gauge per hardware fact (docs/hardware.md), so that an admin alerts on a trend (ECC
# counts rising, a link that trained down after a reboot), not only on the checks' verdicts.
_HEALTH_GAUGES: tuple[tuple[str, str], ...] = (
    ("pcie_link_width", "Lanes the GPU's PCIe link trained at."),
    ("pcie_link_width_max", "Lanes the GPU supports."),
    ("pcie_link_speed_gts", "Current PCIe link speed (GT/s; an idle GPU may lower it)."),
    ("pcie_link_speed_max_gts", "The GPU's maximum PCIe link speed (GT/s)."),
    ("ecc_uncorrectable", "Uncorrectable ECC errors per block (since driver load; *_lifetime: NVIDIA aggregate)."),
    ("ecc_correctable", "Correctable ECC errors per block (since driver load; *_lifetime: NVIDIA aggregate)."),
    ("retired_pages", "Retired (bad) memory pages."),
    ("remapped_rows_uncorrectable", "NVIDIA rows remapped for uncorrectable errors."),
    ("power_cap_watts", "The GPU's power cap."),
    ("power_cap_default_watts", "The board's default power cap."),
    ("temperature_celsius", "Temperature per sensor."),
    ("clock_mhz", "Current graphics clock."),
    ("throttle_reasons_active", "Throttle reasons active (idle and settings not counted)."),
    ("xgmi_links_down", "XGMI hive peers this GPU has no link to."),
    ("nvlink_links_down", "NVLink links not up."),
)


def health_facts(h: GpuHealth) -> list[tuple[str, dict[str, str], float]]:
    """(gauge, extra labels, value) for each numeric fact of one GPU."""
    out: list[tuple[str, dict[str, str], float]] = []
    for name, value in (
        ("pcie_link_width", h.link_width),
        ("pcie_link_width_max", h.link_width_max),
        ("pcie_link_speed_gts", h.link_speed_gts),
        ("pcie_link_speed_max_gts", h.link_speed_max_gts),
        ("retired_pages", h.retired_pages),
        ("remapped_rows_uncorrectable", h.remapped_rows_uncorrectable),
        ("power_cap_watts", h.power_cap_w),
        ("power_cap_default_watts", h.power_cap_default_w),
        ("clock_mhz", h.clock_mhz),
        ("throttle_reasons_active", len(h.throttle)),
        ("xgmi_links_down", max(0, sum(1 for n in h.xgmi_links if n == 0) - 1) if h.xgmi_links else None),
        ("nvlink_links_down", h.nvlink_total - (h.nvlink_up or 0) if h.nvlink_total else None),
    ):
        if value is not None:
            out.append((name, {}, float(value)))
    out += [("ecc_uncorrectable", {"block": b}, float(n)) for b, n in h.ecc_uncorrectable.items()]
    out += [("ecc_correctable", {"block": b}, float(n)) for b, n in h.ecc_correctable.items()]
    out += [("temperature_celsius", {"sensor": k}, float(v)) for k, v in h.temperatures_c.items()]
    return out


def health_lines(report: Report) -> list[str]:
    records = []
    for entry in report.machine.get("health") or ():
        try:
            records.append(GpuHealth.from_dict(entry))
        except (TypeError, ValueError):
            continue  # a report from another rocmkit: the checks' verdicts still stand
    by_gauge: dict[str, list[str]] = {}
    for h in records:
        for name, extra, value in health_facts(h):
            labels = _labels(host=report.hostname, gpu=h.pci_bus_id, vendor=h.vendor, **extra)
            by_gauge.setdefault(name, []).append(f"rocmkit_hw_{name}{labels} {_number(value)}")
    lines: list[str] = []
    for name, help_text in _HEALTH_GAUGES:
        if name in by_gauge:
            lines += [f"# HELP rocmkit_hw_{name} {help_text}", f"# TYPE rocmkit_hw_{name} gauge", *by_gauge[name]]
    return lines
