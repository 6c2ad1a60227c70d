"""``rocmkit matrix check|show|refresh``: validate, print and compare the compatibility data."""

from __future__ import annotations

from pathlib import Path

import click

from rocmkit.cli.folds import REDIRECT_RENAMED, allow_option, renamed_flag, unfold, with_params
from rocmkit.cli.renamed import renamed
from rocmkit.cli.request import OUT, request
from rocmkit.datafiles import CheckRequest, check_data
from rocmkit.matrix.request import RefreshRequest, refresh_write

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
@click.option(
    "--pytorch",
    "pt_clone",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="With --sources: a clone of pytorch/pytorch (a blob-less one is enough).",
)
@request(CheckRequest)
def check(req: CheckRequest) -> None:
    """Validate every data file in the matrix folder (the registry in rocmkit.datafiles)."""
    check_data(req, OUT)


@cli.command("show")
@_DIR
@click.option("--torch", "torch_spec", metavar="X.Y[.Z]", help="One release series (2.7) or release (2.7.1).")
@click.option("--gfx", metavar="gfxNNNN", help="One GPU arch: products, PCI ids, wheels that carry it.")
@click.option("--sku", metavar="NAME", help="One GPU model (MI300X, 'RX 7900 XTX', H100): its peaks and the doctor's "
    "level-2/3 floors, with sources (matrices/sku.toml).")
def show(directory: Path | None, torch_spec: str | None, gfx: str | None, sku: str | None) -> None:
    """Print the releases, or one release series, or what the matrix knows about one arch or GPU model."""
    if sku:
        from rocmkit.doctor.sku import load_skus, show_lines

        skus = load_skus(directory)
        OUT.data("\n".join(show_lines(skus, skus.find(sku))))
        if not (torch_spec or gfx):
            return
    from rocmkit.matrix import load_matrix
    from rocmkit.matrix.show import gfx_lines, origin_line, releases_table, torch_lines
    from rocmkit.util.paths import matrices_dir, matrices_origin

    m = load_matrix(directory)
    # Which data, and how old: a message (stderr), so stdout stays the table.
    OUT.message(origin_line(m, directory or matrices_dir(), "from --dir" if directory else matrices_origin()))
    lines: list[str] = []
    if torch_spec:
        lines += torch_lines(m, torch_spec)
    if gfx:
        lines += ([""] if lines else []) + gfx_lines(m, gfx)
    if not lines:
        lines = releases_table(m)
    OUT.data("\n".join(lines))


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
@click.option("--simple", "simple_url", metavar="URL",
    help="With --write: the simple index for release facts (default: channels.toml [pytorch].pypi).")
@click.option("--from", "recording", type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="With --write: replay recorded upstream files (the layout of tests/data/upstream).")
@click.option("--test-infra", type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="With --write: a clone of pytorch/test-infra (its build-matrix history).")
@click.option("--therock", type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="With --write: a clone of ROCm/TheRock.")
@click.option("--pytorch", type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="With --write: a clone of pytorch/pytorch (its .ci/docker/manywheel/build.sh: ROCm arch lists).")
@with_params(
    allow_option(
        "redirect", "insecure-index",
        redirect="a redirect to HOST is followed; to any host but the one asked, refused otherwise",
        insecure_index="with --write, a plain-http --simple index off the loopback interface",
    ),
    REDIRECT_RENAMED,
    renamed_flag("--allow-insecure-index", "--allow insecure-index"),
)
@unfold("allow")
@request(RefreshRequest)
def refresh(req: RefreshRequest) -> None:
    """Compare the matrix with a live package index and report what it lacks or has wrong:
    new releases, variants, Triton pins (from Requires-Dist), Pythons (from wheel tags).

    With --write, generate the data instead: releases, Pythons, dates and companions from the
    simple index, variants from pytorch/test-infra's build-matrix history, TheRock's arch extras
    and Pythons; every fact with its source. Exit 9 when an index does not answer (nothing written).
    """
    for line in renamed(click.get_current_context()):
        OUT.message(line)
    if req.write:
        with req.redirects():
            refresh_write(req, data=lambda text: OUT.data(text, nl=False), message=OUT.message)
        return
    from rocmkit.matrix import load_matrix
    from rocmkit.matrix.refresh import compare

    with req.redirects():
        report = compare(
            load_matrix(req.directory), req.index_base, only=req.only or None, timeout=req.timeout,
            progress=OUT.message,
        )  # fmt: skip
    if req.as_json:
        OUT.json(report.to_dict())
        return
    if not report.findings:
        OUT.data(f"the matrix agrees with {req.index_base} ({len(report.indexes)} indexes read)")
    OUT.lines([f"{finding.kind:<11} {finding.message}" for finding in report.findings])
