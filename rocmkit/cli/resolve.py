"""``rocmkit resolve``: which torch/triton builds fit this machine (or a capture), and why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rocmkit.cli.backend import backend_option, renamed_backend
from rocmkit.cli.folds import REDIRECT_RENAMED, allow_option, unfold, with_params
from rocmkit.cli.framework import framework_option, renamed_jax
from rocmkit.cli.request import OUT, request
from rocmkit.errors import UsageError
from rocmkit.resolve.constraints import CHANNELS
from rocmkit.resolve.request import FORMATS, ResolveRequest

if TYPE_CHECKING:
    from rocmkit.plan import Plan
    from rocmkit.session import Session


@click.command("resolve")
@click.option(
    "--capture", type=click.Path(path_type=Path), help="Resolve for a capture folder instead of this machine."
)
@click.option(
    "--torch", "torch_version", metavar="X.Y[.Z]", help="PyTorch release: 2.5 (newest 2.5.x) or 2.5.1."
)
@with_params(
    backend_option("The builds to plan: rocm7.1 (or rocm6.2.4), cu128 (CUDA 12.8) or cpu, whatever the GPUs; "
        "default: what this machine has."),
    framework_option("What to plan: PyTorch, JAX (jax + jaxlib + the GPU plugin; jax=0.10 or jax=0.10.2: that "
        "release), PyTorch/XLA, or torch and jax in one venv."),
)
@click.option("--python", metavar="X.Y", help="Target Python (default: the running one).")
@click.option("--channel", type=click.Choice(CHANNELS), default="stable", show_default=True,
    help="PyTorch releases or nightlies; AMD's releases, release candidates or nightlies (therock: amd-nightly).")
@click.option("--index-base", metavar="URL",
    help="Replaces https://download.pytorch.org/whl in index URLs (a mirror). Env: ROCMKIT_INDEX_BASE.")
@click.option("--offline", is_flag=True,
    help="Plan from rocmkit's data only; do not ask the index what it serves now. Env: ROCMKIT_OFFLINE=1.")
@click.option("--strict-data", is_flag=True,
    help="Plan only builds a source confirms, never one known only from upstream's build lists.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON (schema rocmkit.plan/1).")
@click.option("--fresh", is_flag=True,
    help="Detect again and resolve again: ignore (and refresh) the cached detection and plan.")
@click.option("--with", "with_packages", multiple=True, metavar="PKG",
    help="Resolve these beside torch (xformers,flash-attn,bitsandbytes: the build that fits; others from PyPI).")
@click.option("--closure", is_flag=True,
    help="Also resolve everything the install puts in (dependencies included) with uv from the sources it would use.")
@click.option("--build", "build", multiple=True, metavar="PKG",
    help="Build these --with packages from source against the plan's torch instead of trading torch for a prebuilt wheel.")
@click.option("--venv", type=click.Path(path_type=Path, file_okay=False),
    help="Plan for this venv as `install --venv` does: its Python, and with --with the torch rocmkit installed there.")
@click.option("--upgrade", is_flag=True, help="With --venv and --with: plan afresh instead of keeping the venv's torch.")
@click.option("--fallback-index", is_flag=True, envvar="ROCMKIT_FALLBACK_INDEX",
    help="When the planned index does not answer, plan from your pip configuration's sources, as install does.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="summary",
    show_default=True,
    help="requirements: a requirements file with its --index-url lines; pylock: a PEP 751 pylock.toml "
    "(the closure with wheel URLs and hashes; asks the index); uv-project: the [tool.uv] index and "
    "sources tables of a pyproject.toml.",
)
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path),
    help="Write the output to this file (whole, or not at all: no empty file on failure) instead of stdout.")
@with_params(
    allow_option("redirect"),
    REDIRECT_RENAMED,
    *renamed_backend(),
    renamed_jax(),
)
@unfold("allow", "backend", "framework")
@request(ResolveRequest)
def cli(req: ResolveRequest) -> None:
    """Pick the torch, torchvision, torchaudio and Triton builds, the index and the
    environment for this machine, with the reason for every choice.

    \b
    Exit codes: 0 plan printed, 4 bad argument or capture, 5 bad matrix data,
    6 no plan fits, or no build of a --with package fits (the message says what would).
    """
    from rocmkit.cli.renamed import renamed
    from rocmkit.resolve.render import requirements_text, summary_text
    from rocmkit.session import Session

    for line in renamed(click.get_current_context()):
        OUT.message(line)

    session = Session(
        capture=req.capture,
        fresh=req.fresh,
        offline=req.offline,
        index_base=req.index_base,
        allow_redirect=req.allow_redirect,
    )
    plan = planned(req, session)
    # With --with, the plan also depends on pip's configuration (the index standing for PyPI);
    # with --venv on the venv, with --fallback-index on the pip configuration, with --closure on
    # every index uv reads.
    mine = not (req.with_packages or req.venv or req.fallback_index or req.closure)
    if session.detected_at is not None and session.fresh_until is not None and mine:
        # The plan is a function of the machine, the data and the options, and online of the
        # index answers it used: a rerun may replay it while those answers are fresh (they
        # would come from the index cache then anyway).
        from rocmkit.cache import output_cache

        until = None if session.offline or session.fresh_until == float("inf") else session.fresh_until
        output_cache.cacheable(session.detected_at, until=until)
    plan = _with_resolved(req, session, plan)
    closure, closure_from = _closure(req, session, plan)
    if req.fmt in ("pylock", "uv-project"):
        if req.fmt == "pylock":
            import sys

            from rocmkit.install.pylock import pylock_text

            python = plan.python or f"{sys.version_info.major}.{sys.version_info.minor}"
            _emit(req, pylock_text(plan, python=python, offline=req.offline))
        else:
            from rocmkit.companions.export import uv_project_text

            _emit(req, uv_project_text(plan))
        for warning in plan.warnings:
            OUT.warning(warning)
    elif req.as_json or req.fmt == "json":
        extra = {"closure": list(closure), "closure_sources": list(closure_from)} if req.closure else {}
        _emit(req, json.dumps({**plan.to_dict(), **extra}, indent=2) + "\n")
    elif req.fmt == "requirements":
        _emit(req, requirements_text(plan, closure))
        for warning in plan.warnings:
            OUT.warning(warning)
    else:
        _emit(req, summary_text(plan, closure, closure_from))


def planned(req: ResolveRequest, session: Session) -> Plan:
    """The plan install would carry out for the same options (before its --with packages)."""
    import dataclasses

    from rocmkit.install.decision import decide

    cons = req.constraints()
    if req.venv is not None:
        from rocmkit.pyenv import probe, venv_interpreter

        python = venv_interpreter(req.venv.absolute())
        if python.exists() and cons.python is None:
            cons = dataclasses.replace(cons, python=probe(python).short_version)
    return decide(
        session,
        cons,
        req.venv,
        with_packages=bool(req.with_packages),
        upgrade=req.upgrade,
        fallback_index=req.fallback_index,
        wanted=req.with_packages,
        build=req.build,
    )


def _with_resolved(req: ResolveRequest, session: Session, plan: Plan) -> Plan:
    """The --with packages resolved into the plan; refused as install refuses them."""
    if not req.with_packages:
        return plan
    from rocmkit.companions.data import load_companions
    from rocmkit.companions.resolve import resolve_with
    from rocmkit.install.indexcheck import PYPI_SIMPLE, read_pip_config

    pypi = read_pip_config().index_url or PYPI_SIMPLE
    plan = resolve_with(plan, session.machine(), req.with_packages, load_companions(), pypi=pypi, build=req.build)
    if not session.offline:
        from rocmkit.install.companions import refuse_unserved_in_plan
        from rocmkit.install.indexcheck import user_fallbacks

        # As install refuses it, before anything: a --with package needing a companion no source serves.
        withs = tuple(p.requirement for p in plan.with_packages if p.how != "source")
        refuse_unserved_in_plan(plan, withs, user_fallbacks() if req.fallback_index else ())
    return plan


def _closure(req: ResolveRequest, session: Session, plan: Plan) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """--closure: everything an install of the plan puts in, as uv resolves it, and the sources
    it was resolved from (else empty)."""
    if not req.closure:
        return (), ()
    if session.offline:
        raise UsageError(
            "--closure asks the indexes what an install would put in, and resolve is offline",
            ("drop --offline (and ROCMKIT_OFFLINE=1)", "drop --closure"),
        )
    from rocmkit.install.closure import plan_closure
    from rocmkit.install.indexcheck import user_fallbacks

    return plan_closure(plan, user_fallbacks() if req.fallback_index else ())


def _emit(req: ResolveRequest, text: str) -> None:
    """The plan to stdout, or with --output to that file (renamed into place: a failed run
    leaves no empty file, as a failed `> FILE` would)."""
    if req.output is None:
        OUT.data(text, nl=False)
        return
    OUT.file(req.output, text)
    OUT.message(f"wrote {req.output}")
