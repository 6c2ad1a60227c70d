"""What ``rocmkit matrix refresh`` was asked to do: one frozen request, checked here, and the
``--write`` run (generate the data from upstream's sources, diff, write) it drives."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.errors import UsageError

if TYPE_CHECKING:
    from rocmkit.cli.request import Output
    from rocmkit.matrix.model import Matrix


@dataclass(frozen=True, kw_only=True)
class CheckRequest:
    directory: Path | None = None
    unconfirmed: bool = False
    with_sources: bool = False  # re-read each fact's source
    recording: Path | None = None  # recorded sources (the layout of tests/data/upstream)
    offline: bool = False  # with_sources: recorded sources only
    ti_clone: Path | None = None  # a clone of pytorch/test-infra
    rock_clone: Path | None = None  # a clone of ROCm/TheRock

    def __post_init__(self) -> None:
        if not self.with_sources and (self.recording or self.offline or self.ti_clone or self.rock_clone):
            raise UsageError("--from, --offline, --test-infra and --therock go with --sources", "add --sources")


def check_data(req: CheckRequest, out: Output) -> None:
    """Load and validate every registered data file; with ``with_sources``, audit the facts."""
    from rocmkit.datafiles import data_files
    from rocmkit.matrix.model import Matrix
    from rocmkit.matrix.show import summary_lines, unconfirmed_lines
    from rocmkit.paths import matrices_dir

    folder = req.directory or matrices_dir()
    matrix: Matrix | None = None
    for entry in data_files():
        loaded = entry.load(folder)
        if isinstance(loaded, Matrix):
            matrix = loaded
            out.lines([f"ok  {line}" for line in summary_lines(loaded)])
        else:
            out.data(f"ok  {', '.join(entry.names)}")
    if req.unconfirmed and matrix is not None:
        lines = unconfirmed_lines(matrix)
        out.data(f"{len(lines)} entries with unconfirmed facts:")
        out.lines([f"  {line}" for line in lines])
    if req.with_sources and matrix is not None:
        _check_sources(matrix, req, out)


def _check_sources(m: Matrix, req: CheckRequest, out: Output) -> None:
    from rocmkit.errors import DataError
    from rocmkit.matrix.sourcecheck import Sources, check_sources
    from rocmkit.paths import shipped_matrices_dir

    clones = {k: v for k, v in (("test-infra", req.ti_clone), ("TheRock", req.rock_clone)) if v is not None}
    recording = req.recording
    if recording is None:
        checkout = shipped_matrices_dir().parent / "tests" / "data" / "upstream"
        recording = checkout if checkout.is_dir() else None
    report = check_sources(m, Sources(recording, offline=req.offline, clones=clones))
    out.lines(report.lines())
    if report.not_stated:
        raise DataError(
            f"{len(report.not_stated)} facts are not stated by the sources they cite",
            "correct them (or their sources) and run `rocmkit matrix refresh --write`",
        )


@dataclass(frozen=True, kw_only=True)
class RefreshRequest:
    directory: Path | None = None
    index_base: str = "https://download.pytorch.org/whl"
    only: tuple[str, ...] = ()
    timeout: float = 20.0
    as_json: bool = False
    write: bool = False
    dry_run: bool = False
    simple_url: str | None = None
    recording: Path | None = None
    test_infra: Path | None = None
    therock: Path | None = None

    def __post_init__(self) -> None:
        if self.timeout <= 0:
            raise UsageError(f"--timeout {self.timeout:g} is not a positive number of seconds", "give e.g. 20")


def refresh_write(req: RefreshRequest, data: Callable[[str], None], message: Callable[[str], None]) -> None:
    """Generate the data files from upstream's sources; ``data`` gets the diff, ``message`` the rest."""
    from rocmkit.matrix import load_matrix
    from rocmkit.matrix.inputs import (
        build_inputs,
        clone_upstream,
        index_inputs,
        recorded_index,
        recorded_upstream,
        recording_meta,
    )
    from rocmkit.matrix.write import plan_refresh, write_refresh
    from rocmkit.paths import matrices_dir, overlay_dir

    source_dir = req.directory or matrices_dir()
    upstream = recorded_upstream(req.recording) if req.recording else {}
    upstream.update(clone_upstream(req.test_infra, req.therock))
    read_on = None
    if req.simple_url is None and req.recording is not None:
        meta = recording_meta(req.recording)
        pages, metadata = recorded_index(req.recording)
        index_url, read_on = meta["index_url"], meta["read_on"]
    else:
        index_url = req.simple_url or load_matrix(source_dir).pypi_url or "https://pypi.org/simple"
        message(f"reading {index_url.rstrip('/')}/{{torch,torchvision,torchaudio}}/")
        pages, metadata = index_inputs(index_url, timeout=req.timeout)
    inputs = build_inputs(
        index_url=index_url, pages=pages, metadata=metadata, upstream=upstream, read_on=read_on
    )
    result = plan_refresh(source_dir, inputs)
    data(result.diff())
    for note in result.outcome.notes:
        message(f"note: {note}")
    if not result.changed:
        message(f"the data in {source_dir} is what the sources say: nothing to write")
        return
    if req.dry_run:
        message(f"--dry-run: {len(result.changed)} file(s) would change; nothing written")
        return
    target = req.directory or overlay_dir()
    written = write_refresh(target, result, source_dir=source_dir)
    message(f"wrote {', '.join(written)}")
    if req.directory is None:
        message(f"rocmkit now reads its data from {target} (remove it to go back to the shipped data)")
