"""Kubernetes node-problem-detector's custom-plugin protocol: one status line, an exit code.

NPD runs a custom plugin, reads its exit status (``OK = 0``, ``NonOK = 1``, ``Unknown = 2``:
kubernetes/node-problem-detector pkg/custompluginmonitor/types/types.go) and its standard
output, cut to ``max_output_length`` (80 by default, types/config.go), as the condition's
message. So ``rocmkit doctor --format npd`` prints exactly one line of at most 80 characters
and exits with NPD's code instead of rocmkit's: a failed check is NonOK, a check that could
not run is Unknown, warnings are OK (NonOK with ``--strict``). docs/npd.md has the config.
"""

from __future__ import annotations

from rocmkit.doctor.result import CheckResult, Report, Status

OK, NON_OK, UNKNOWN = 0, 1, 2
MAX_LINE = 80


def fit(text: str, limit: int = MAX_LINE) -> str:
    """One line of at most ``limit`` characters (ASCII ellipsis when cut)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."


def _first(results: tuple[CheckResult, ...], status: Status) -> list[CheckResult]:
    return [r for r in results if r.status is status]


def status(report: Report, *, strict: bool = False) -> tuple[int, str]:
    """(NPD exit code, the status line) for one doctor run."""
    fails = _first(report.results, Status.FAIL)
    warns = _first(report.results, Status.WARN)
    errors = _first(report.results, Status.ERROR)
    if strict:
        fails = fails + warns
    if fails:
        more = f" (+{len(fails) - 1})" if len(fails) > 1 else ""
        return NON_OK, fit(f"{fails[0].name}{more}: {fails[0].message}")
    if errors:
        more = f" (+{len(errors) - 1})" if len(errors) > 1 else ""
        return UNKNOWN, fit(f"could not run {errors[0].name}{more}: {errors[0].message}")
    ran = len(report.results) - len(_first(report.results, Status.SKIP))
    tail = f", {len(warns)} warning(s): {', '.join(r.name for r in warns)}" if warns else ""
    return OK, fit(f"rocmkit level {report.level}: {ran} checks ok{tail}")


def unknown(message: str) -> tuple[int, str]:
    """rocmkit itself could not judge the node (bad input, unreadable data): Unknown."""
    return UNKNOWN, fit(f"rocmkit could not run: {message}")
