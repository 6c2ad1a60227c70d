"""``rocmkit matrix check|show|refresh``: validate, print and compare the compatibility data."""

from __future__ import annotations

import json
from pathlib import Path

import click

_DIR = click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    help="Matrix folder (default: the one shipped with rocmkit; env ROCMKIT_MATRICES_DIR).",
)


@click.group("matrix")
def cli() -> None:
    """Check, show and refresh the compatibility matrices (matrices/*.toml).

    \b
    Exit codes: 0 ok, 4 bad argument, 5 invalid matrix data, 9 index unreachable.
    """


@cli.command("check")
@_DIR
@click.option("--unconfirmed", is_flag=True, help="Also list every fact marked unconfirmed.")
@click.option(
    "--sources",
    "with_sources",
    is_flag=True,
    help="Re-read each fact's source and list the facts it does not state (exit 5 if any).",
)
@click.option(
    "--from",
    "recording",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="With --sources: recorded sources (the layout of tests/data/upstream; default: the "
    "checkout's, when there is one); sources not recorded are read live.",
)
@click.option("--offline", is_flag=True, help="With --sources: read recorded sources only.")
@click.option(
    "--test-infra",
    "ti_clone",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="With --sources: a clone of pytorch/test-infra to read cited revisions from.",
)
@click.option(
    "--therock",
    "rock_clone",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="With --sources: a clone of ROCm/TheRock.",
)
def check(
    directory: Path | None,
    unconfirmed: bool,
    with_sources: bool,
    recording: Path | None,
    offline: bool,
    ti_clone: Path | None,
    rock_clone: Path | None,
) -> None:
    """Validate every data file in the matrix folder (the registry in rocmkit.datafiles)."""
    from rocmkit.datafiles import data_files
    from rocmkit.matrix.model import Matrix
    from rocmkit.matrix.show import summary_lines, unconfirmed_lines
    from rocmkit.paths import matrices_dir

    folder = directory or matrices_dir()
    matrix: Matrix | None = None
    for entry in data_files():
        loaded = entry.load(folder)
        if isinstance(loaded, Matrix):
            matrix = loaded
            for line in summary_lines(loaded):
                click.echo(f"ok  {line}")
        else:
            click.echo(f"ok  {', '.join(entry.names)}")
    if unconfirmed and matrix is not None:
        lines = unconfirmed_lines(matrix)
        click.echo(f"{len(lines)} entries with unconfirmed facts:")
        for line in lines:
            click.echo(f"  {line}")
    if with_sources and matrix is not None:
        clones = {k: v for k, v in (("test-infra", ti_clone), ("TheRock", rock_clone)) if v is not None}
        _check_sources(matrix, recording, offline, clones)


def _check_sources(m: object, recording: Path | None, offline: bool, clones: dict[str, Path]) -> None:
    from rocmkit.errors import DataError
    from rocmkit.matrix import Matrix
    from rocmkit.matrix.sourcecheck import Sources, check_sources
    from rocmkit.paths import shipped_matrices_dir

    assert isinstance(m, Matrix)
    if recording is None:
        checkout = shipped_matrices_dir().parent / "tests" / "data" / "upstream"
        recording = checkout if checkout.is_dir() else None
    report = check_sources(m, Sources(recording, offline=offline, clones=clones))
    for line in report.lines():
        click.echo(line)
    if report.not_stated:
        raise DataError(
            f"{len(report.not_stated)} facts are not stated by the sources they cite",
            "correct them (or their sources) and run `rocmkit matrix refresh --write`",
        )


@cli.command("show")
@_DIR
@click.option("--torch", "torch_spec", metavar="X.Y[.Z]", help="One release series (2.7) or release (2.7.1).")
@click.option("--gfx", metavar="gfxNNNN", help="One GPU arch: products, PCI ids, wheels that carry it.")
def show(directory: Path | None, torch_spec: str | None, gfx: str | None) -> None:
    """Print the releases, or one release series, or what the matrix knows about one arch."""
    from rocmkit.matrix import load_matrix
    from rocmkit.matrix.show import gfx_lines, releases_table, torch_lines

    m = load_matrix(directory)
    from rocmkit.matrix.show import origin_line
    from rocmkit.paths import matrices_dir, matrices_origin

    # Which data, and how old: a message (stderr), so stdout stays the table.
    click.echo(
        origin_line(m, directory or matrices_dir(), "from --dir" if directory else matrices_origin()),
        err=True,
    )
    lines: list[str] = []
    if torch_spec:
        lines += torch_lines(m, torch_spec)
    if gfx:
        lines += ([""] if lines else []) + gfx_lines(m, gfx)
    if not lines:
        lines = releases_table(m)
    click.echo("\n".join(lines))


@cli.command("refresh")
@_DIR
@click.option(
    "--index",
    "index_base",
    metavar="URL",
    default="https://download.pytorch.org/whl",
    show_default=True,
    help="The root that holds the indexes (<URL>/rocm6.2/torch/ ...).",
)
@click.option(
    "--only", "only", multiple=True, metavar="NAME", help="Compare only these indexes (rocm6.2, cu124, cpu)."
)
@click.option("--timeout", type=float, default=20.0, show_default=True, help="Seconds per HTTP request.")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.option(
    "--write",
    is_flag=True,
    help="Generate torch.toml and channels.toml from upstream's sources, show the diff, write atomically "
    "(into --dir, else an overlay in rocmkit's user data folder).",
)
@click.option("--dry-run", is_flag=True, help="With --write: show the diff, write nothing.")
@click.option(
    "--simple",
    "simple_url",
    metavar="URL",
    help="With --write: the simple index for release facts (default: channels.toml [pytorch].pypi).",
)
@click.option(
    "--from",
    "recording",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="With --write: replay recorded upstream files (the layout of tests/data/upstream).",
)
@click.option(
    "--test-infra",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="With --write: a clone of pytorch/test-infra (its build-matrix history).",
)
@click.option(
    "--therock",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="With --write: a clone of ROCm/TheRock.",
)
def refresh(
    directory: Path | None,
    index_base: str,
    only: tuple[str, ...],
    timeout: float,
    as_json: bool,
    write: bool,
    dry_run: bool,
    simple_url: str | None,
    recording: Path | None,
    test_infra: Path | None,
    therock: Path | None,
) -> None:
    """Compare the matrix with a live package index and report what it lacks or has wrong:
    new releases, variants, Triton pins (from Requires-Dist), Pythons (from wheel tags).

    With --write, generate the data instead: releases, Pythons, dates and companions from the
    simple index, variants from pytorch/test-infra's build-matrix history, TheRock's arch extras
    and Pythons; every fact with its source. Exit 9 when an index does not answer (nothing written).
    """
    if write:
        _refresh_write(directory, simple_url, recording, test_infra, therock, timeout, dry_run)
        return
    from rocmkit.matrix import load_matrix
    from rocmkit.matrix.refresh import compare

    m = load_matrix(directory)
    report = compare(
        m, index_base, only=only or None, timeout=timeout, progress=lambda s: click.echo(s, err=True)
    )
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    if not report.findings:
        click.echo(f"the matrix agrees with {index_base} ({len(report.indexes)} indexes read)")
    for finding in report.findings:
        click.echo(f"{finding.kind:<11} {finding.message}")


def _refresh_write(
    directory: Path | None,
    simple_url: str | None,
    recording: Path | None,
    test_infra: Path | None,
    therock: Path | None,
    timeout: float,
    dry_run: bool,
) -> None:
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

    source_dir = directory or matrices_dir()
    upstream = recorded_upstream(recording) if recording else {}
    upstream.update(clone_upstream(test_infra, therock))
    read_on = None
    if simple_url is None and recording is not None:
        meta = recording_meta(recording)
        pages, metadata = recorded_index(recording)
        index_url, read_on = meta["index_url"], meta["read_on"]
    else:
        index_url = simple_url or load_matrix(source_dir).pypi_url or "https://pypi.org/simple"
        click.echo(f"reading {index_url.rstrip('/')}/{{torch,torchvision,torchaudio}}/", err=True)
        pages, metadata = index_inputs(index_url, timeout=timeout)
    inputs = build_inputs(
        index_url=index_url, pages=pages, metadata=metadata, upstream=upstream, read_on=read_on
    )
    result = plan_refresh(source_dir, inputs)
    click.echo(result.diff(), nl=False)
    for note in result.outcome.notes:
        click.echo(f"note: {note}", err=True)
    if not result.changed:
        click.echo(f"the data in {source_dir} is what the sources say: nothing to write", err=True)
        return
    if dry_run:
        click.echo(f"--dry-run: {len(result.changed)} file(s) would change; nothing written", err=True)
        return
    target = directory or overlay_dir()
    written = write_refresh(target, result, source_dir=source_dir)
    click.echo(f"wrote {', '.join(written)}", err=True)
    if directory is None:
        click.echo(
            f"rocmkit now reads its data from {target} (remove it to go back to the shipped data)", err=True
        )
