"""Every figure of a ``rocmkit doctor --json`` report against its GPU model's floor, as Markdown.

``benchmarks/gpu/run.sh`` writes the table next to the report: per figure its value, the share
of the GPU's peak and the floor it was held to (``matrices/sku.toml``), and the verdicts of the
checks that have none (compile.correctness, the caches, the APU memory).

    python benchmarks/gpu/floors.py report.json [more.json ...] > floors.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rocmkit.doctor.result import Figure, Report
from rocmkit.errors import DataError


def _num(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:.4g}{(' ' + unit) if unit else ''}"


def _floor(f: Figure) -> str:
    parts = []
    if f.floor is not None:
        parts.append(_num(f.floor, f.unit))
    if f.floor_fraction is not None:
        parts.append(f"{f.floor_fraction:g}x reference")
    if f.reference_floor is not None:
        parts.append(f"reference >= {_num(f.reference_floor, f.unit)}")
    return ", ".join(parts) or "-"


def table(report: Report) -> str:
    gpu = next((f.sku for r in report.results for f in r.figures if f.sku), None)
    lines = [
        f"# {report.hostname}: doctor level {report.level}, verdict {report.verdict.value}",
        "",
        f"GPU model row: {gpu or 'none (no floors applied: unknown GPU, or the CPU backend)'}; "
        f"torch {report.versions.get('torch')}, {report.versions.get('triton')}",
        "",
        "| check | status | figure | value | reference | % of peak | floor | below |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in report.results:
        for f in r.figures:
            lines.append(
                f"| {r.name} | {r.status.value} | {f.name} | {_num(f.value, f.unit)} | {_num(f.reference, f.unit)} | "
                f"{_num(f.pct_of_peak, '%')} | {_floor(f)} | {'BELOW' if f.below_floor else ''} |"
            )
        if not r.figures:
            lines.append(f"| {r.name} | {r.status.value} | - | - | - | - | - | |")
    lines += ["", "Messages:", ""]
    lines += [f"- `{r.name}` {r.status.value}: {r.message}" for r in report.results]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: floors.py REPORT.json [REPORT.json ...]", file=sys.stderr)
        return 4
    out: list[str] = []
    for path in argv:
        try:
            out.append(table(Report.from_dict(json.loads(Path(path).read_text()))))
        except (OSError, ValueError, DataError) as exc:
            print(f"error: cannot read {path}: {exc}", file=sys.stderr)
            return 4
    sys.stdout.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
