"""``rocmkit resolve``: which torch/triton builds fit this machine (or a capture), and why."""

from __future__ import annotations

import json
from pathlib import Path

import click

from rocmkit.resolve.constraints import CHANNELS


@click.command("resolve")
@click.option(
    "--capture", type=click.Path(path_type=Path), help="Resolve for a capture folder instead of this machine."
)
@click.option(
    "--torch", "torch_version", metavar="X.Y[.Z]", help="PyTorch release: 2.5 (newest 2.5.x) or 2.5.1."
)
@click.option("--rocm", metavar="X.Y[.Z]", help="ROCm version of the wheels (forces a ROCm build).")
@click.option(
    "--cuda", metavar="X.Y", help="CUDA version of the wheels, 12.4 or cu124 (forces a CUDA build)."
)
@click.option("--cpu", is_flag=True, help="CPU wheels, whatever the GPUs.")
@click.option("--python", metavar="X.Y", help="Target Python (default: the running one).")
@click.option(
    "--channel",
    type=click.Choice(CHANNELS),
    default="stable",
    show_default=True,
    help="PyTorch releases, PyTorch nightlies, or AMD's TheRock multi-arch index.",
)
@click.option(
    "--index-base",
    metavar="URL",
    envvar="ROCMKIT_INDEX_BASE",
    help="Replaces https://download.pytorch.org/whl in index URLs (a mirror). Env: ROCMKIT_INDEX_BASE.",
)
@click.option(
    "--offline",
    is_flag=True,
    envvar="ROCMKIT_OFFLINE",
    help="Plan from rocmkit's data only; do not ask the index what it serves now. Env: ROCMKIT_OFFLINE=1.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON (schema rocmkit.plan/1).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["summary", "json", "requirements"]),
    default="summary",
    show_default=True,
    help="requirements: a requirements file with its --index-url lines.",
)
def cli(
    capture: Path | None,
    torch_version: str | None,
    rocm: str | None,
    cuda: str | None,
    cpu: bool,
    python: str | None,
    channel: str,
    index_base: str | None,
    offline: bool,
    as_json: bool,
    fmt: str,
) -> None:
    """Pick the torch, torchvision, torchaudio and Triton builds, the index and the
    environment for this machine, with the reason for every choice.

    \b
    Exit codes: 0 plan printed, 4 bad argument or capture, 5 bad matrix data,
    6 no plan fits (the message says what would).
    """
    from rocmkit.detect import load_machine
    from rocmkit.errors import UsageError
    from rocmkit.resolve import Constraints, resolve
    from rocmkit.resolve.render import requirements_text, summary_text

    if as_json and fmt == "requirements":
        # One of the two would be silently ignored.
        raise UsageError("--json and --format requirements ask for two outputs", "pass only one of them")

    constraints = Constraints(
        torch=torch_version,
        rocm=rocm,
        python=python,
        channel=channel,
        cuda=cuda,
        index_base=index_base or None,
        cpu=cpu,
    ).validated()
    machine = load_machine(capture)
    plan = resolve(machine, constraints)
    if not offline:
        # What the index serves now: one request (2 s at most, cached) that settles
        # whether the planned build exists and whether a newer one does.
        from rocmkit.matrix import load_matrix
        from rocmkit.resolve.live import check_plan

        plan = check_plan(plan, machine, constraints, load_matrix())
    if as_json or fmt == "json":
        click.echo(json.dumps(plan.to_dict(), indent=2))
    elif fmt == "requirements":
        click.echo(requirements_text(plan), nl=False)
        for warning in plan.warnings:
            click.echo(f"warning: {warning}", err=True)
    else:
        click.echo(summary_text(plan), nl=False)
