"""``rocmkit build``: plan, preflight and run a source build of torch (+ Triton, torchvision)."""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from rocmkit.arch import GPU_BACKENDS
from rocmkit.errors import ToolError, UsageError


def _cores() -> int | None:
    try:
        return len(os.sched_getaffinity(0))  # respects cgroup/taskset limits, unlike cpu_count
    except (AttributeError, OSError):
        return os.cpu_count()


def _nvidia_cc_lookup(name: str) -> str | None:
    from rocmkit.matrix import load_matrix

    result: str | None = load_matrix().nvidia_compute_capability(name)
    return result


def _print_plan(recipe: Any, items: list[Any]) -> None:
    echo = click.echo
    echo(f"Build plan: {recipe.title}")
    echo(f"  build dir:  {recipe.build_dir}")
    echo(f"  wheelhouse: {recipe.wheelhouse}")
    facts = recipe.facts
    echo(f"  torch:      {facts['torch_repo']} @ {facts['torch_tag']} -> wheel {facts['torch_version']}")
    if facts.get("triton_repo"):
        pinned = facts.get("triton_commit") or "read at build time"
        echo(f"  triton:     {facts['triton_repo']} @ commit in {facts['triton_pin_file']} ({pinned})")
    if facts.get("torchvision_tag"):
        echo(f"  torchvision: {facts['torchvision_tag']}")
    echo("  environment:")
    for key, value in recipe.env.items():
        echo(f"    {key}={value}")
    if recipe.notes:
        echo("  notes:")
        for note in recipe.notes:
            echo(f"    - {note}")
    if items:
        echo("Preflight:")
        for item in items:
            echo(f"  {item.line()}")
    echo("Steps:")
    for i, step in enumerate(recipe.steps, 1):
        echo(f"  {i:2d}. {step.name}: {step.title}")
        echo(f"      $ {shlex.join(step.argv)}")
        echo(f"      in {step.cwd or recipe.build_dir}")
        if step.env and step.env == recipe.env:
            echo("      with the build environment above")
        elif step.env:
            echo("      with " + " ".join(f"{k}={shlex.quote(v)}" for k, v in step.env.items()))


@click.command(name="build")
@click.option(
    "--capture", type=click.Path(path_type=Path), help="Plan for a captured machine instead of this one."
)
@click.option(
    "--arch", "archs", multiple=True, help="GPU arch to build for (repeat): gfx1031, gfx90a, 8.6, sm_90."
)
@click.option("--backend", type=click.Choice(GPU_BACKENDS), help="Override the detected backend.")
@click.option(
    "--torch", "torch_version", help="PyTorch release to build (2.7 or 2.7.1); default: newest in build.toml."
)
@click.option(
    "--build-dir",
    type=click.Path(path_type=Path),
    default=Path("rocmkit-build"),
    show_default=True,
    help="Sources, logs, state file and (by default) the wheelhouse go here.",
)
@click.option(
    "--wheelhouse",
    type=click.Path(path_type=Path),
    help="Where the wheels land [default: BUILD_DIR/wheelhouse].",
)
@click.option(
    "--python",
    "python",
    default=sys.executable,
    show_default="this interpreter",
    help="Interpreter of the environment that builds and receives the wheels.",
)
@click.option("--jobs", type=click.IntRange(min=1), help="MAX_JOBS instead of the memory/cores rule.")
@click.option("--triton/--no-triton", default=True, help="Build Triton at the commit torch pins.")
@click.option("--vision/--no-vision", default=True, help="Build torchvision.")
@click.option("--install/--no-install", default=True, help="Install the wheels into --python's environment.")
@click.option("--doctor/--no-doctor", default=True, help="Run `rocmkit doctor` at the end.")
@click.option("--dry-run", is_flag=True, help="Print the plan; run nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON (implies --dry-run).")
@click.option(
    "--script", "as_script", is_flag=True, help="Print the plan as a bash script (implies --dry-run)."
)
@click.option("--skip-preflight", is_flag=True, help="Run even if preflight finds something missing.")
@click.option("--restart", is_flag=True, help="Forget the saved progress and run every step.")
def cli(
    capture: Path | None,
    archs: tuple[str, ...],
    backend: str | None,
    torch_version: str | None,
    build_dir: Path,
    wheelhouse: Path | None,
    python: str,
    jobs: int | None,
    triton: bool,
    vision: bool,
    install: bool,
    doctor: bool,
    dry_run: bool,
    as_json: bool,
    as_script: bool,
    skip_preflight: bool,
    restart: bool,
) -> None:
    """Build PyTorch (and Triton, torchvision) from source for GPUs no published wheel covers.

    \b
    rocmkit build --dry-run                       plan for this machine's GPUs
    rocmkit build --arch gfx1031 --torch 2.7      plan and build for given archs
    rocmkit build --script > build.sh             the plan as a reviewable script
    rocmkit install --wheelhouse rocmkit-build/wheelhouse   (on other nodes)

    A failed or interrupted build resumes at the step that did not finish when the same
    command runs again.
    """
    from rocmkit.runner import which
    from rocmkit.source_build.coverage import wheel_coverage
    from rocmkit.source_build.preflight import blocking, live_probes, run_preflight
    from rocmkit.source_build.recipes import BuildOptions, HostFacts, load_build_matrix, make_recipe
    from rocmkit.source_build.script import render_script
    from rocmkit.source_build.steps import run_recipe
    from rocmkit.source_build.targets import build_memory, read_text, target_from_args, target_from_machine

    if as_json and as_script:
        raise UsageError("--json and --script both print the plan", "pick one")
    if archs and capture is not None:
        raise UsageError("--arch and --capture both choose the archs", "pass one of them")
    found = python if os.sep in python else which(python)
    if found is None or not Path(found).exists():
        raise UsageError(f"--python {python} does not exist", "pass the interpreter of the target venv")
    # Absolute but not resolved: a venv's python is a symlink, and resolving it would leave the venv.
    python = str(Path(found).absolute())
    release = load_build_matrix().release(torch_version)
    be = backend if backend in GPU_BACKENDS else None
    rocm_path = os.environ.get("ROCM_PATH") or "/opt/rocm"
    machine = None
    if archs:
        target = target_from_args(archs, be)  # type: ignore[arg-type]
    else:
        from rocmkit.detect import load_machine  # type: ignore[import-not-found,import-untyped,unused-ignore]

        machine = load_machine(capture)
        target = target_from_machine(machine, be, _nvidia_cc_lookup)  # type: ignore[arg-type]
        if capture is None and machine.rocm.installs:
            rocm_path = machine.rocm.installs[0].path
    probes = live_probes()
    host = HostFacts(
        cores=_cores(),
        memory_bytes=build_memory(probes.memory_bytes, read_text),
        ccache=probes.which("ccache"),
        rocm_path=rocm_path,
    )
    options = BuildOptions(
        build_dir=build_dir,
        python=python,
        wheelhouse=wheelhouse,
        triton=triton,
        torchvision=vision,
        install=install,
        doctor=doctor,
        jobs=jobs,
    )
    recipe = make_recipe(release, target, host, options)
    coverage = wheel_coverage(target, machine, release.key)
    if coverage:
        recipe = dataclasses.replace(recipe, notes=(coverage, *recipe.notes))
    if as_script:
        click.echo(render_script(recipe), nl=False)
        return
    items = run_preflight(
        backend=target.backend,
        build_dir=Path(recipe.build_dir),
        python=python,
        probes=probes,
        rocm_path=rocm_path,
        cuda_home=os.environ.get("CUDA_HOME"),
        triton=triton,
        torchvision=vision,
    )
    if as_json:
        click.echo(json.dumps({**recipe.to_dict(), "preflight": [i.to_dict() for i in items]}, indent=2))
        return
    if dry_run:
        _print_plan(recipe, items)
        return

    for item in items:
        click.echo(item.line(), err=True)
    missing = blocking(items)
    if missing and not skip_preflight:
        raise ToolError(
            f"preflight: {len(missing)} requirement(s) missing ({', '.join(i.name for i in missing)})",
            "install them (fixes listed above), or pass --skip-preflight to try anyway",
        )
    click.echo(f"building {recipe.title} in {recipe.build_dir}", err=True)
    for note in recipe.notes:
        click.echo(f"note: {note}", err=True)
    # The build tools pip installs (cmake, ninja) land next to the interpreter; put them on PATH
    # even when the venv is not activated.
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(python).parent), env.get("PATH", os.defpath)])
    outcome = run_recipe(
        recipe,
        base_env=env,
        restart=restart,
        echo=lambda msg: click.echo(msg, err=True),
        resume_command=f"`rocmkit build` again with the same options (--build-dir {recipe.build_dir})",
    )
    click.echo(
        f"build done in {outcome.duration_s:.0f} s ({len(outcome.ran)} step(s) run, "
        f"{len(outcome.skipped)} already done)",
        err=True,
    )
    for wheel in sorted(Path(recipe.wheelhouse).glob("*.whl")):
        click.echo(str(wheel))
    click.echo(f"other nodes: rocmkit install --wheelhouse {recipe.wheelhouse}", err=True)
