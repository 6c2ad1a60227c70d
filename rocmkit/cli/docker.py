"""``rocmkit docker render``: Dockerfiles from ``matrices/images.toml``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rocmkit.cli.request import OUT, request
from rocmkit.containers.request import RenderRequest


@click.group("docker")
def cli() -> None:
    """Container images generated from the matrix."""


@cli.command("render")
@click.option("--rocm", metavar="X.Y", help="A ROCm image: ROCm release of the base image (e.g. 6.2).")
@click.option("--cuda", metavar="X.Y", help="A CUDA image: CUDA release of the torch wheels, 12.8 or cu128.")
@click.option("--cpu", is_flag=True, help="A CPU image: torch's CPU wheels.")
@click.option(
    "--torch", metavar="X.Y", help="torch release to install (default: the matrix's image for that release)."
)
@click.option("--gfx", metavar="LIST", help="ROCm: comma-separated gfx archs to install for (e.g. gfx90a,gfx942).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
    help="Write NAME.Dockerfile files here. Without --rocm/--cuda/--cpu: every image in the matrix.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
    help="Write the one Dockerfile to this file (whole, or not at all) instead of stdout.")
@click.option(
    "--check", is_flag=True, help="Write nothing; exit 1 if the files in --out differ from the generator."
)
@click.option("--syntax", is_flag=True,
    help="Start with `# syntax=docker/dockerfile:1` (BuildKit then pulls that frontend: not air-gapped).")
@request(RenderRequest)
def render_cmd(req: RenderRequest) -> None:
    """Render Dockerfiles that install rocmkit, run `rocmkit install` for a ROCm, CUDA or
    CPU torch build and `rocmkit doctor --level 0` at build time, and run `rocmkit doctor`
    at run time.

    \b
    rocmkit docker render                              the image for this machine (its plan)
    rocmkit docker render --out docker                 every image in matrices/images.toml
    rocmkit docker render --rocm 6.2 --gfx gfx942      one Dockerfile on stdout
    rocmkit docker render --cuda 12.8 --torch 2.11     a CUDA image (the cu128 wheels)
    rocmkit docker render --cpu                        a CPU image
    rocmkit docker render --cpu --output Dockerfile    written whole to a file (a failed redirect leaves none)
    rocmkit docker render --out docker --check         are the committed files current?
    """
    from rocmkit.containers.dockerfile import stale_files
    from rocmkit.session import Session

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
