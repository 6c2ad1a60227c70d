"""Read doctor reports from files and folders."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from rocmkit.doctor.result import SCHEMA, Report
from rocmkit.errors import DataError, RocmkitError, UsageError


@dataclass(frozen=True, kw_only=True)
class LoadedReport:
    path: Path
    report: Report


@dataclass(frozen=True, kw_only=True)
class LoadResult:
    reports: tuple[LoadedReport, ...]
    # Files met while scanning a folder that are not doctor reports (other JSON).
    skipped: tuple[Path, ...] = ()
    # Older reports of a node that also has a newer one (a node re-run).
    superseded: tuple[Path, ...] = ()


def read_report(path: Path) -> Report:
    """One report file; anything unreadable is a DataError naming the file."""
    from rocmkit.util.safeload import load_json_file

    # Bounded: a report comes from another node (size, nesting and NaN capped).
    try:
        data = load_json_file(path, str(path))
    except DataError as exc:
        raise DataError(exc.message, "regenerate it with `rocmkit doctor --json > FILE`") from exc
    try:
        return Report.from_dict(data)
    except DataError as exc:
        raise DataError(f"{path}: {exc.message}", exc.fixes) from exc


def _is_report(path: Path) -> bool:
    # A cheap look before a full parse: folders of reports often hold other JSON too.
    from rocmkit.util.safeload import load_json_file

    try:
        data = load_json_file(path, str(path))
    except RocmkitError:
        return False
    return isinstance(data, dict) and data.get("schema") == SCHEMA


def load_reports(paths: Iterable[Path]) -> LoadResult:
    """Files are read as given (a bad one is an error); folders are searched for
    ``*.json`` reports (other JSON there is skipped). Of several reports from one
    node (same ``host_id``), the newest one is kept."""
    files: list[Path] = []
    skipped: list[Path] = []
    for p in paths:
        if p.is_dir():
            for f in sorted(p.rglob("*.json")):
                (files if _is_report(f) else skipped).append(f)
        elif p.exists():
            files.append(p)
        else:
            raise UsageError(
                f"{p} does not exist", "pass report files or folders written by `rocmkit doctor --json`"
            )
    if not files:
        where = ", ".join(str(p) for p in paths) or "(nothing given)"
        raise UsageError(
            f"no rocmkit.report/1 files in {where}", "run `rocmkit doctor --json > NODE.json` on each node"
        )
    newest: dict[str, LoadedReport] = {}
    superseded: list[Path] = []
    for f in files:
        loaded = LoadedReport(path=f, report=read_report(f))
        key = loaded.report.host_id
        old = newest.get(key)
        if old is None:
            newest[key] = loaded
        elif loaded.report.finished_at > old.report.finished_at:  # ISO 8601 UTC sorts as text
            superseded.append(old.path)
            newest[key] = loaded
        else:
            superseded.append(f)
    ordered = sorted(newest.values(), key=lambda lr: (lr.report.hostname, lr.report.host_id))
    return LoadResult(reports=tuple(ordered), skipped=tuple(skipped), superseded=tuple(superseded))
