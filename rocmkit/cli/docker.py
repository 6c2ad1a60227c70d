"""``rocmkit docker render``: Dockerfiles from ``matrices/images.toml``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rocmkit.cli.backend import backend_option, renamed_backend
from rocmkit.cli.folds import unfold, with_params
from rocmkit.cli.request import OUT, request
from rocmkit.containers.request import RenderRequest


@click.group("docker")
def cli() -> None:
    """Container images generated from the matrix."""


@cli.command("render")
@with_params(
    backend_option("The image: rocm6.2 (ROCm 6.2's base image and wheels), cu128 (the CUDA 12.8 wheels) or cpu."),
    *renamed_backend(),
)
@click.option(
    "--torch", metavar="X.Y", help="torch release to install (default: the matrix's image for that release)."
)
@click.option("--gfx", metavar="LIST", help="ROCm: comma-separated gfx archs to install for (e.g. gfx90a,gfx942).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
    help="Write NAME.Dockerfile files here. Without --backend: every image in the matrix.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
    help="Write the one Dockerfile to this file (whole, or not at all) instead of stdout.")
@click.option(
    "--check", is_flag=True, help="Write nothing; exit 1 if the files in --out differ from the generator."
)
@click.option("--syntax", is_flag=True,
    help="Start with `# syntax=docker/dockerfile:1` (BuildKit then pulls that frontend: not air-gapped).")
@unfold("backend")
@request(RenderRequest)
def render_cmd(req: RenderRequest) -> None:
    """Render Dockerfiles that install rocmkit, run `rocmkit install` for a ROCm, CUDA or
    CPU torch build and `rocmkit doctor --level 0` at build time, and run `rocmkit doctor`
    at run time.

    \b
    rocmkit docker render                                  the image for this machine (its plan)
    rocmkit docker render --out docker                     every image in matrices/images.toml
    rocmkit docker render --backend rocm6.2 --gfx gfx942   one Dockerfile on stdout
    rocmkit docker render --backend cu128 --torch 2.11     a CUDA image (the CUDA 12.8 wheels)
    rocmkit docker render --backend cpu                    a CPU image
    rocmkit docker render --backend cpu --output Dockerfile   written whole to a file (a failed redirect leaves none)
    rocmkit docker render --out docker --check             are the committed files current?
    """
    from rocmkit.cli.renamed import renamed
    from rocmkit.containers.dockerfile import stale_files
    from rocmkit.session import Session

    for line in renamed(click.get_current_context()):
        OUT.message(line)

    rendered = req.rendered(Session() if req.this_machine else None, say=OUT.message)
    out = req.out
    if req.output is not None:
        text = next(iter(rendered.values()))
        OUT.file(req.output, text)
        OUT.message(f"wrote {req.output}; next: {_build_line(text)}")
        return
    if out is None:
        OUT.data(next(iter(rendered.values())), nl=False)
        return
    if req.check:
        stale = stale_files(out, rendered, complete=not req.one_image)
        for name in stale:
            what = "differs from" if name in rendered else "is not made by"
            OUT.message(f"{out / name} {what} `rocmkit docker render`")
        if stale:
            OUT.message(f"fix: rocmkit docker render --out {out}")
            sys.exit(1)
        OUT.message(f"{len(rendered)} Dockerfile(s) in {out} are current")
        return
    out.mkdir(parents=True, exist_ok=True)
    for name, text in rendered.items():
        OUT.file(out / name, text)
        OUT.message(f"wrote {out / name}")
    if len(rendered) == 1:
        OUT.message(f"next: {_build_line(next(iter(rendered.values())))}")


def _build_line(text: str) -> str:
    """The `docker build` line the Dockerfile's own comment gives (from the checkout's root)."""
    return next(line.strip("# ") for line in text.splitlines() if line.startswith("#   docker build "))
