"""``rocmkit build``: plan, preflight and run a source build of torch (+ Triton, torchvision)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from rocmkit.arch import GPU_BACKENDS
from rocmkit.cli.request import OUT, request
from rocmkit.errors import ToolError, rerun
from rocmkit.source_build.request import BuildRequest


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
@click.option("--wheelhouse", type=click.Path(path_type=Path),
    help="Where the wheels land [default: BUILD_DIR/wheelhouse].")
@click.option("--python", "python", default=sys.executable, show_default="this interpreter",
    help="Interpreter of the environment that builds and receives the wheels.")
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
@request(BuildRequest)
def cli(req: BuildRequest) -> None:
    """Build PyTorch (and Triton, torchvision) from source for GPUs no published wheel covers.

    \b
    rocmkit build --dry-run                       plan for this machine's GPUs
    rocmkit build --arch gfx1031 --torch 2.7      plan and build for given archs
    rocmkit build --script > build.sh             the plan as a reviewable script
    rocmkit install --wheelhouse rocmkit-build/wheelhouse   (on other nodes)

    A failed or interrupted build resumes at the step that did not finish when the same
    command runs again.
    """
    from rocmkit.session import Session
    from rocmkit.source_build.preflight import blocking
    from rocmkit.source_build.request import plan_build, plan_lines, preflight
    from rocmkit.source_build.script import render_script
    from rocmkit.source_build.steps import run_recipe

    plan = plan_build(req, Session(capture=req.capture))
    recipe = plan.recipe
    if req.as_script:
        OUT.data(render_script(recipe), nl=False)
        return
    items = preflight(req, plan)
    if req.as_json:
        OUT.json({**recipe.to_dict(), "preflight": [i.to_dict() for i in items]})
        return
    if req.dry_run:
        OUT.lines(plan_lines(recipe, items))
        return
    for item in items:
        OUT.message(item.line())
    missing = blocking(items)
    if missing and not req.skip_preflight:
        raise ToolError(
            f"preflight: {len(missing)} requirement(s) missing ({', '.join(i.name for i in missing)})",
            ("install them (the fixes listed above)", rerun("--skip-preflight") + "   # try anyway"),
        )
    OUT.message(f"building {recipe.title} in {recipe.build_dir}")
    for note in recipe.notes:
        OUT.note(note)
    # The build tools pip installs (cmake, ninja) land next to the interpreter; put them on PATH
    # even when the venv is not activated.
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(req.python).parent), env.get("PATH", os.defpath)])
    outcome = run_recipe(
        recipe,
        base_env=env,
        restart=req.restart,
        echo=OUT.message,
        resume_command=f"`rocmkit build` again with the same options (--build-dir {recipe.build_dir})",
    )
    OUT.message(
        f"build done in {outcome.duration_s:.0f} s ({len(outcome.ran)} step(s) run, "
        f"{len(outcome.skipped)} already done)"
    )
    OUT.lines([str(wheel) for wheel in sorted(Path(recipe.wheelhouse).glob("*.whl"))])
    OUT.message(f"next: rocmkit install --wheelhouse {recipe.wheelhouse} --venv V   # here and on other nodes")
