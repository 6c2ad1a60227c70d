"""The results file of a suite run: JSON lines, one row appended per model as it finishes.

Line 1 is a header (what was run: suite, mode, dtype, size, repeats, compile
mode, the shard and its models, the device and versions); every further line
is one :class:`~rocmkit.bench.results.ModelResult`. Each row is written and
fsynced on its own, so a crash, a timeout or ``kill -9`` loses at most the
model that was running; a torn last line is ignored on reading. ``--resume``
reads the file back and runs only the models without a row.

``--shard I/N`` takes every N-th model of the suite's order, starting at the
I-th (round robin keeps big and small models spread over the shards);
:func:`merge` joins the shards' files into one result.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from rocmkit.bench.results import ModelResult, SuiteResult
from rocmkit.errors import DataError, UsageError
from rocmkit.util.safeload import loads_json

SCHEMA = "rocmkit.bench.rows/1"
# The header fields two files must share to be resumed or merged as one run: what was run, and
# where (a row from another device or another torch/Triton is another experiment, whatever its
# model name says).
SAME_RUN = ("suite", "mode", "dtype", "size", "repeat", "compile_mode", "backend", "device")
SAME_VERSIONS = ("torch", "triton")

T = TypeVar("T")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        try:
            left, right = text.split("/")
            index, count = int(left), int(right)
        except ValueError:
            raise UsageError(
                f"--shard {text!r} is not I/N", "e.g. --shard 2/4 (the second of four)"
            ) from None
        if count < 1 or not 1 <= index <= count:
            raise UsageError(f"--shard {text}: I must be between 1 and N", "e.g. --shard 1/4 ... 4/4")
        return cls(index, count)

    def take(self, items: Sequence[T]) -> list[T]:
        return [item for i, item in enumerate(items) if i % self.count == self.index - 1]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True, kw_only=True)
class SetAside:
    """A row read but not used, and why (another run's, or a model this file is not for)."""

    name: str
    line: int
    why: str


@dataclass(frozen=True, kw_only=True)
class RunLog:
    header: dict[str, Any]
    rows: tuple[ModelResult, ...]
    path: Path | None = None
    set_aside: tuple[SetAside, ...] = ()

    def set_aside_text(self) -> str:
        """One line naming the rows left out, for stderr ("" when none were)."""
        if not self.set_aside:
            return ""
        shown = "; ".join(f"{s.name} (line {s.line}: {s.why})" for s in self.set_aside[:5])
        more = f"; and {len(self.set_aside) - 5} more" if len(self.set_aside) > 5 else ""
        return f"{self.path or 'results file'}: {len(self.set_aside)} row(s) set aside, not counted: {shown}{more}"


def _versions(header: dict[str, Any]) -> dict[str, Any]:
    versions = header.get("versions")
    return versions if isinstance(versions, dict) else {}


def run_id(header: dict[str, Any]) -> str:
    """The run a row belongs to: a digest of what was run and where (the same-run fields, and
    torch's and Triton's versions). Every row carries it; a row with another id was appended
    from another run (another device, backend or build) and is set aside on reading, so it
    cannot move this run's geomean."""
    versions = _versions(header)
    key = [str(header.get(k)) for k in SAME_RUN] + [str(versions.get(k)) for k in SAME_VERSIONS]
    return hashlib.sha256("\x1f".join(key).encode("utf-8")).hexdigest()[:16]


def header_of(
    suite: SuiteResult, *, suite_name: str, models: Sequence[str], order: Sequence[str], shard: str
) -> dict[str, Any]:
    d = suite.to_dict()
    return {
        "schema": SCHEMA,
        "suite": suite_name,
        "mode": d["mode"],
        "dtype": d["dtype"],
        "size": d["size"],
        "repeat": d["repeat"],
        "compile_mode": d["compile_mode"],
        "threads": d["threads"],
        "backend": d["backend"],
        "device": d["device"],
        "versions": d["versions"],
        "started_at": d["started_at"],
        "command": d["command"],
        "shard": shard,
        "models": list(models),  # what this file is to hold
        "order": list(order),  # the whole selection, before sharding: the merged order
    } | {"run": run_id(d)}


def _append(path: Path, record: dict[str, Any]) -> None:
    line = json.dumps(record, sort_keys=True) + "\n"
    # O_APPEND and one write per row: a row is either wholly in the file or not at all.
    # Never through a symlink (--results may name a path in a folder others can write).
    from rocmkit.util.trust import append_fd

    fd = append_fd(path, mode=0o644)
    try:
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def start(path: Path, header: dict[str, Any], rows: Sequence[ModelResult] = ()) -> None:
    """Begin a results file: fresh, or (resuming) the rows read back, without a torn last line.

    Written to a temporary file and renamed, so a kill here leaves the old file whole.
    """
    stamp = header.get("run")
    lines = [json.dumps(header, sort_keys=True)] + [
        json.dumps({"row": r.to_dict(), "run": stamp}, sort_keys=True) for r in rows
    ]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise UsageError(
            f"cannot write results file {path}: {exc.strerror}", "choose a writable --results path"
        ) from exc


def append_row(path: Path, row: ModelResult, *, run: str | None) -> None:
    """Append ``row``, stamped with its run's id (the header's ``run``)."""
    try:
        _append(path, {"row": row.to_dict(), "run": run})
    except OSError as exc:
        raise UsageError(f"cannot append to results file {path}: {exc.strerror}", "check the disk") from exc


# What every results file's header says (to_suite reads them): text, plus the integer repeat.
_HEADER_KEYS = ("backend", "device", "mode", "dtype", "size")


def parse(lines: Iterable[str], where: str) -> RunLog:
    it = iter(lines)
    first = next(it, "")
    try:
        # Bounded (nesting, size, finite numbers): results files are passed around between nodes.
        header = loads_json(first, where)
    except DataError:
        header = None
    if not isinstance(header, dict) or header.get("schema") != SCHEMA:
        raise DataError(
            f"{where} is not a {SCHEMA} results file",
            "pass a file written by `rocmkit bench models --results`",
        )
    rows: dict[str, ModelResult] = {}
    aside: list[SetAside] = []
    stamp = header.get("run")  # None in files written before rows were stamped
    meant = header.get("models")
    meant_for = set(meant) if isinstance(meant, list) and all(isinstance(m, str) for m in meant) else None
    pending: list[str] = list(it)
    for n, line in enumerate(pending, start=2):
        if not line.strip():
            continue
        try:
            record = loads_json(line, f"{where}: line {n}")
        except DataError as exc:
            if "nests deeper" in exc.message or "over rocmkit's limit" in exc.message:
                raise
            if n == len(pending) + 1:
                break  # the last line was torn by a kill mid-write: that model simply has no row
            raise DataError(f"{where}: line {n} is not JSON", "the file was edited or damaged") from None
        if not isinstance(record, dict) or not isinstance(record.get("row"), dict):
            raise DataError(f"{where}: line {n} is not a row")
        row = ModelResult.from_dict(record["row"])
        if stamp is not None and record.get("run") != stamp:
            why = "no run stamp" if record.get("run") is None else "from another run (device, backend or versions)"
            aside.append(SetAside(name=row.name, line=n, why=why))
            continue
        if meant_for is not None and row.name not in meant_for:
            aside.append(SetAside(name=row.name, line=n, why="not a model of this file's header"))
            continue
        rows[row.name] = row  # a model run twice (a resumed retry) keeps its latest row
    return RunLog(header=header, rows=tuple(rows.values()), set_aside=tuple(aside))


MAX_FILE_BYTES = 256 * 1024 * 1024  # thousands of rows; anything larger was not written by rocmkit


def read(path: Path) -> RunLog:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise DataError(
                f"{path} is larger than {MAX_FILE_BYTES >> 20} MiB", "pass a results file written by `rocmkit bench models`"
            )
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(
            f"cannot read {path}: {exc}", "pass a results file written by `rocmkit bench models`"
        ) from exc
    log = parse(text.splitlines(), str(path))
    return replace(log, path=path)


def to_suite(header: dict[str, Any], rows: Iterable[ModelResult], *, finished_at: str = "") -> SuiteResult:
    """A :class:`SuiteResult` of the rows, in the header's order."""
    lacking = [k for k in _HEADER_KEYS if not isinstance(header.get(k), str)]
    if lacking or isinstance(header.get("repeat"), bool) or not isinstance(header.get("repeat"), int):
        what = f"no {lacking[0]}" if lacking else "no whole repeat count"
        raise DataError(
            f"a results file's header line has {what}",
            "pass a file written by `rocmkit bench models --results`, unedited",
        )
    by_name = {r.name: r for r in rows}
    order = [n for n in header.get("order") or header.get("models") or [] if n in by_name]
    order += [n for n in by_name if n not in order]
    return SuiteResult(
        backend=str(header["backend"]),
        device=str(header["device"]),
        mode=str(header["mode"]),
        dtype=str(header["dtype"]),
        size=str(header["size"]),
        repeat=int(header["repeat"]),
        models=tuple(by_name[n] for n in order),
        versions=dict(header.get("versions") or {}),
        started_at=str(header.get("started_at", "")),
        finished_at=finished_at,
        command=str(header.get("command", "")),
        compile_mode=str(header.get("compile_mode", "default")),
        threads=header.get("threads"),
        suite=str(header.get("suite", "builtin")),
        shard=str(header.get("shard", "")),
    )


def mismatch(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """How two headers differ in what was run and where ([] when they are one run)."""
    va, vb = _versions(a), _versions(b)
    return [f"{k} {a.get(k)!r} vs {b.get(k)!r}" for k in SAME_RUN if a.get(k) != b.get(k)] + [
        f"{k} {va.get(k)!r} vs {vb.get(k)!r}" for k in SAME_VERSIONS if va.get(k) != vb.get(k)
    ]


@dataclass(frozen=True, kw_only=True)
class Merged:
    suite: SuiteResult
    missing: tuple[str, ...]  # models of the whole selection that no file has a row for


def _shard_of(log: RunLog) -> Shard | None:
    """The shard a results file says it is; :class:`DataError` for one no run could write
    (``9/2``, ``0/3``, not ``I/N``)."""
    text = str(log.header.get("shard") or "")
    if not text:
        return None
    try:
        return Shard.parse(text)
    except UsageError:
        raise DataError(
            f"{log.path} says it is shard {text[:40]!r}, which is not I/N with 1 <= I <= N",
            "merge files written by `rocmkit bench models --shard I/N`, unedited",
        ) from None


def merge(logs: Sequence[RunLog]) -> Merged:
    """Join shard files of one run. They must agree on what was run; a model in two shards is an error."""
    if not logs:
        raise UsageError("nothing to merge", "name the shard files: rocmkit bench merge a.jsonl b.jsonl")
    first = logs[0]
    rows: dict[str, ModelResult] = {}
    for log in logs:
        shard = _shard_of(log)
        if shard is not None and shard.count != (_shard_of(first) or shard).count:
            raise UsageError(
                f"{log.path} is shard {shard}, {first.path} shard {_shard_of(first)}: not one split",
                "merge only the shards of one `rocmkit bench models --shard I/N` run",
            )
        diff = mismatch(first.header, log.header)
        if diff:
            raise UsageError(
                f"{log.path} is not from the same run as {first.path}: {'; '.join(diff)}",
                "merge only the shards of one `rocmkit bench models` command",
            )
        for row in log.rows:
            if row.name in rows:
                raise UsageError(
                    f"{row.name} has a row in more than one file (the second: {log.path})",
                    "merge each shard once; shards of one run never share a model",
                )
            rows[row.name] = row
    order = list(first.header.get("order") or [])
    missing = tuple(n for n in order if n not in rows)
    finished = max((str(log.header.get("started_at", "")) for log in logs), default="")
    whole = replace(to_suite(first.header, rows.values(), finished_at=finished), shard="")
    return Merged(suite=whole, missing=missing)
