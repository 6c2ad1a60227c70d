"""What ``rocmkit build`` was asked to do, checked here, and the plan it makes.

The CLI hands its options over as one frozen :class:`BuildRequest`; the request refuses bad
combinations when it is made, and :func:`plan_build` turns it into a recipe for this machine,
a captured one, or the archs given.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rocmkit.arch import GPU_BACKENDS
from rocmkit.errors import UsageError

if TYPE_CHECKING:
    from rocmkit.session import Session
    from rocmkit.source_build.preflight import PreflightItem, Probes
    from rocmkit.source_build.steps import Recipe
    from rocmkit.source_build.targets import ArchTargets


@dataclass(frozen=True, kw_only=True)
class BuildRequest:
    capture: Path | None = None
    archs: tuple[str, ...] = ()
    backend: str | None = None
    torch_version: str | None = None
    build_dir: Path = Path("rocmkit-build")
    wheelhouse: Path | None = None
    python: str = sys.executable  # made absolute (not resolved: a venv's python is a symlink)
    jobs: int | None = None
    triton: bool = True
    vision: bool = True
    install: bool = True
    doctor: bool = True
    dry_run: bool = False
    as_json: bool = False
    as_script: bool = False
    skip_preflight: bool = False
    restart: bool = False

    def __post_init__(self) -> None:
        from rocmkit.proc.runner import which

        if self.as_json and self.as_script:
            raise UsageError("--json and --script both print the plan", "pick one")
        if self.archs and self.capture is not None:
            raise UsageError("--arch and --capture both choose the archs", "pass one of them")
        if self.backend is not None and self.backend not in GPU_BACKENDS:
            raise UsageError(f"--backend {self.backend!r} is not one of {', '.join(GPU_BACKENDS)}", "pick one")
        found = self.python if os.sep in self.python else which(self.python)
        if found is None or not Path(found).exists():
            raise UsageError(f"--python {self.python} does not exist", "pass the interpreter of the target venv")
        object.__setattr__(self, "python", str(Path(found).absolute()))


@dataclass(frozen=True)
class BuildPlan:
    recipe: Recipe
    target: ArchTargets
    probes: Probes
    rocm_path: str


def _cores() -> int | None:
    try:
        return len(os.sched_getaffinity(0))  # respects cgroup/taskset limits, unlike cpu_count
    except (AttributeError, OSError):
        return os.cpu_count()


def plan_build(req: BuildRequest, session: Session | None = None) -> BuildPlan:
    """The recipe for ``req``: for the archs given, else for the session's machine (a capture,
    or this machine through the detection cache)."""
    from rocmkit.source_build.coverage import wheel_coverage
    from rocmkit.source_build.preflight import live_probes
    from rocmkit.source_build.recipes import BuildOptions, HostFacts, load_build_matrix, make_recipe
    from rocmkit.source_build.targets import build_memory, read_text, target_from_args, target_from_machine

    release = load_build_matrix().release(req.torch_version)
    be: Any = req.backend
    rocm_path = os.environ.get("ROCM_PATH") or "/opt/rocm"
    if session is None:
        from rocmkit.session import Session

        session = Session(capture=req.capture)
    about = session  # the machine the published wheels are checked against
    if req.archs:
        target = target_from_args(req.archs, be, session.matrix())
        if target.backend == "rocm":
            about = session.for_archs(target.archs)
    else:
        machine = session.machine()
        target = target_from_machine(machine, be, session.matrix().nvidia_compute_capability)
        if req.capture is None and machine.rocm.installs:
            rocm_path = machine.rocm.installs[0].path
    probes = live_probes()
    host = HostFacts(
        cores=_cores(),
        memory_bytes=build_memory(probes.memory_bytes, read_text),
        ccache=probes.which("ccache"),
        rocm_path=rocm_path,
    )
    options = BuildOptions(
        build_dir=req.build_dir,
        python=req.python,
        wheelhouse=req.wheelhouse,
        triton=req.triton,
        torchvision=req.vision,
        install=req.install,
        doctor=req.doctor,
        jobs=req.jobs,
    )
    recipe = make_recipe(release, target, host, options)
    coverage = wheel_coverage(target, about, release.key)
    if coverage:
        recipe = dataclasses.replace(recipe, notes=(coverage, *recipe.notes))
    return BuildPlan(recipe=recipe, target=target, probes=probes, rocm_path=rocm_path)


def preflight(req: BuildRequest, plan: BuildPlan) -> list[PreflightItem]:
    from rocmkit.source_build.preflight import run_preflight

    return run_preflight(
        backend=plan.target.backend,
        build_dir=Path(plan.recipe.build_dir),
        python=req.python,
        probes=plan.probes,
        rocm_path=plan.rocm_path,
        cuda_home=os.environ.get("CUDA_HOME"),
        triton=req.triton,
        torchvision=req.vision,
    )


def plan_lines(recipe: Recipe, items: list[PreflightItem]) -> list[str]:
    """The plan as a person reads it (``--dry-run``)."""
    out = [
        f"Build plan: {recipe.title}",
        f"  build dir:  {recipe.build_dir}",
        f"  wheelhouse: {recipe.wheelhouse}",
    ]
    facts = recipe.facts
    out.append(f"  torch:      {facts['torch_repo']} @ {facts['torch_tag']} -> wheel {facts['torch_version']}")
    if facts.get("triton_repo"):
        pinned = facts.get("triton_commit") or "read at build time"
        out.append(f"  triton:     {facts['triton_repo']} @ commit in {facts['triton_pin_file']} ({pinned})")
    if facts.get("torchvision_tag"):
        out.append(f"  torchvision: {facts['torchvision_tag']}")
    out.append("  environment:")
    out += [f"    {key}={value}" for key, value in recipe.env.items()]
    if recipe.notes:
        out.append("  notes:")
        out += [f"    - {note}" for note in recipe.notes]
    if items:
        out.append("Preflight:")
        out += [f"  {item.line()}" for item in items]
    out.append("Steps:")
    for i, step in enumerate(recipe.steps, 1):
        out.append(f"  {i:2d}. {step.name}: {step.title}")
        out.append(f"      $ {shlex.join(step.argv)}")
        out.append(f"      in {step.cwd or recipe.build_dir}")
        if step.env and step.env == recipe.env:
            out.append("      with the build environment above")
        elif step.env:
            out.append("      with " + " ".join(f"{k}={shlex.quote(v)}" for k, v in step.env.items()))
    return out
