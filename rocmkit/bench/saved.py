"""Saved bench runs read back (``--load``, ``compare``)."""

from __future__ import annotations

from pathlib import Path

from rocmkit.bench.results import SuiteResult


def load_saved(path: Path, notes: list[str] | None = None, meant: list[str] | None = None) -> SuiteResult:
    """A saved run: the ``--json`` document, or a ``--results`` JSON-lines file. Rows of a
    results file that belong to another run are left out and named in ``notes``; the models
    its header says it was to hold go into ``meant`` (a model there without a row did not
    finish: the run was killed or stopped before it)."""
    from rocmkit.bench import runlog
    from rocmkit.errors import DataError
    from rocmkit.util.safeload import load_json_file

    try:
        with path.open("rb") as fh:
            first = fh.readline(4096)
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror}", "pass a file that exists") from exc
    if first.lstrip().startswith(b"{") and runlog.SCHEMA.encode() in first:
        log = runlog.read(path)
        if log.set_aside and notes is not None:
            notes.append(log.set_aside_text())
        listed = log.header.get("models")
        if meant is not None and isinstance(listed, list):
            meant.extend(str(m) for m in listed)
        return runlog.to_suite(log.header, log.rows)
    try:
        data = load_json_file(path, str(path))
    except DataError as exc:
        raise DataError(exc.message, "pass a file written by `rocmkit bench models --json`") from exc
    return SuiteResult.from_dict(data)
