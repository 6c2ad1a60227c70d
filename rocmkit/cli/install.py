"""``rocmkit install``: carry out a plan in a venv, with uv or pip, safely."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from rocmkit.cli.backend import backend_option, renamed_backend
from rocmkit.cli.folds import (
    REDIRECT_RENAMED,
    allow_option,
    renamed_flag,
    renamed_value,
    skip_option,
    timeout_option,
    unfold,
    with_params,
)
from rocmkit.cli.framework import framework_option, renamed_jax
from rocmkit.cli.request import OUT, request
from rocmkit.cli.sections import INSTALL_SECTIONS, SectionedCommand
from rocmkit.install.request import InstallRequest
from rocmkit.resolve.constraints import CHANNELS

_DEFAULT = {f.name: f.default for f in dataclasses.fields(InstallRequest)}

# Install's option families (the verbs take narrower ones, cli/verbs.py): what to leave out,
# what to let through, how long to wait.
SKIP_OPTION = skip_option("guard", "verify", "compile", "companions")
ALLOW_OPTION = allow_option("insecure-index", "redirect", "env", "system-packages")
TIMEOUT_OPTION = timeout_option("install", "net", "probe", defaults=_DEFAULT)

BACKEND_OPTION = backend_option(
    "The builds to resolve: rocm7.1, cu128 (CUDA 12.8, whatever the GPUs, as for an image) or cpu; "
    "default: what this machine has."
)

FRAMEWORK_OPTION = framework_option(
    "What to install: PyTorch, JAX (jax + jaxlib + the GPU plugin and PJRT; jax=0.10: that release), PyTorch/XLA, "
    "or torch and jax."
)

# The flags the families, --backend and --framework replaced, kept one release (hidden; each says its new spelling).
OLD_FLAGS = (
    *renamed_backend(),
    renamed_jax(),
    renamed_flag("--no-guard", "--skip guard"),
    renamed_flag("--no-verify", "--skip verify"),
    renamed_flag("--no-compile", "--skip compile"),
    renamed_flag("--no-companions", "--skip companions"),
    renamed_flag("--allow-insecure-index", "--allow insecure-index"),
    renamed_flag("--break-system-packages", "--allow system-packages"),
    renamed_value("--allow-env", lambda v: "--allow " + ",".join(f"env={n}" for n in v), field="allow_env",
        multiple=True, metavar="NAME"),
    REDIRECT_RENAMED,
    renamed_value("--net-timeout", lambda v: f"--timeout net={v:g}", field="net_timeout", type=float,
        default=_DEFAULT["net_timeout"]),
    renamed_value("--probe-timeout", lambda v: f"--timeout probe={v:g}", field="probe_timeout", type=float,
        default=_DEFAULT["probe_timeout"]),
)


@click.command("install", cls=SectionedCommand, sections=INSTALL_SECTIONS)
@click.option("--venv", "venv", type=click.Path(path_type=Path),
    help="Virtual environment to install into (made if missing).")
@click.option("--python", "venv_base", metavar="VERSION|PATH",
    help="Python to make a missing --venv from (uv finds it by version); default: rocmkit's own.")
@click.option(
    "--interpreter", type=click.Path(path_type=Path), help="Install into this Python instead of a venv."
)
@click.option("--plan", "plan_file", type=click.Path(path_type=Path, dir_okay=False),
    help="A plan from `rocmkit resolve --json`.")
@click.option("--capture", type=click.Path(path_type=Path, file_okay=False),
    help="Resolve for a captured machine instead of this one.")
@click.option("--torch", help="Torch release to resolve (e.g. 2.5).")
@click.option(
    "--channel", type=click.Choice(CHANNELS), default="stable", show_default=True,
    help="PyTorch releases or nightlies; AMD's releases, release candidates or nightlies (therock: amd-nightly)."
)
@click.option("--strict-data", is_flag=True,
    help="Resolve only builds a source confirms (no build known only from upstream's build lists).")
@click.option("--index-base",
    help="Replace https://download.pytorch.org/whl in index URLs (mirror).")
@click.option("--installer", type=click.Choice(["auto", "uv", "pip"]), default="auto", show_default=True)
@click.option("--with", "with_packages", multiple=True, metavar="PKG",
    help="Companion packages, comma-separated or repeated (transformers,timm), installed under the guard.")
@click.option("--dry-run", is_flag=True, help="Say what would change; change nothing.")
@click.option("--project", "project", type=click.Path(path_type=Path, file_okay=False), hidden=True,
    help="Write the plan's [[tool.uv.index]] and [tool.uv.sources] into DIR/pyproject.toml "
    "(formatting kept; with --dry-run, print the diff). Installs nothing.")
@click.option("--lock", "lock_file", type=click.Path(path_type=Path, dir_okay=False), hidden=True,
    help="Write the pinned closure with hashes to FILE (installs nothing).")
@click.option("--from-lock", type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Install a lock file with hash checking.")
@click.option(
    "--download-only", is_flag=True, hidden=True, help="With --wheelhouse: download the closure, install nothing."
)
@click.option("--wheelhouse", type=click.Path(path_type=Path, file_okay=False),
    help="Install from this wheelhouse folder, offline (`rocmkit wheelhouse DIR` fills one).")
@click.option("--fallback-index", is_flag=True, envvar="ROCMKIT_FALLBACK_INDEX",
    help="When the plan's index does not answer (or it names none), take the exact planned builds "
    "from your pip configuration's sources, with a WARNING naming them. Without it, install stops.")
@click.option("--build", "build", multiple=True, metavar="PKG",
    help="Build these --with packages from source against the plan's torch instead of trading torch for a prebuilt wheel.")
@click.option("--upgrade", is_flag=True,
    help="With --with on a venv whose torch rocmkit installed: plan afresh and replace it (else it is kept).")
@click.option("--quiet", "-q", is_flag=True, help="Do not stream pip/uv output.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the outcome as JSON (rocmkit.install/1) on stdout."
)
@with_params(BACKEND_OPTION, FRAMEWORK_OPTION, SKIP_OPTION, ALLOW_OPTION, TIMEOUT_OPTION, *OLD_FLAGS)
@unfold("skip", "allow", "timeout", "backend", "framework")
@request(InstallRequest)
def cli(req: InstallRequest) -> None:
    """Install the resolved torch/triton (or jax: --framework jax) builds into a virtual environment.

    \b
    Records the environment first and restores it exactly if any step fails;
    guards torch against later `pip install`s; verifies the result.
    \b
    rocmkit install --venv ~/venvs/rocm            resolve for this machine, install
    rocmkit install --framework jax --venv V       jax + jaxlib + the plugin for this GPU
    rocmkit install --plan plan.json --venv V      install a saved plan
    rocmkit install --from-lock torch.lock --venv V   install a lock (`rocmkit lock` writes one)
    rocmkit install --wheelhouse /shared/wh --venv V   offline (`rocmkit wheelhouse` fills one)
    rocmkit install --dry-run --venv V             say what would change
    Other modes are verbs: `rocmkit lock`, `rocmkit wheelhouse`, `rocmkit export`.
    """
    from rocmkit.cli.renamed import renamed
    from rocmkit.install.carry import carry_out

    for line in renamed(click.get_current_context()):
        OUT.message(line)
    outcome = carry_out(req, OUT.message)
    if req.as_json:
        OUT.json(outcome.to_dict())
