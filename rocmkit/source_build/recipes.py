"""Build plans for torch, Triton and torchvision, from the source references in build.toml.

:func:`make_recipe` turns a release (matrices/build.toml), a target (backend + archs) and the
build host's facts into a :class:`rocmkit.source_build.steps.Recipe`: plain argument lists with their
folder, environment and timeout, run by the generic step runner or rendered as a script.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from rocmkit.source_build.refs import BuildMatrix, Release, load_build_matrix
from rocmkit.source_build.steps import Recipe, Step
from rocmkit.source_build.targets import ArchTargets, ccache_env
from rocmkit.util.buildjobs import max_jobs

__all__ = ["BuildMatrix", "BuildOptions", "HostFacts", "Release", "load_build_matrix", "make_recipe"]

HOUR = 3600.0
# Triton's own build requirements (its README: `pip install ninja cmake wheel pybind11`); with
# --no-build-isolation they must be in the build environment before `pip wheel`.
TRITON_BUILD_REQUIREMENTS = ("ninja", "cmake", "wheel", "pybind11")


@dataclass(frozen=True, kw_only=True)
class HostFacts:
    """The build host, passed in so that plans are pure and testable."""

    cores: int | None
    memory_bytes: int | None
    ccache: str | None = None  # path of ccache when present
    rocm_path: str = "/opt/rocm"


@dataclass(frozen=True, kw_only=True)
class BuildOptions:
    build_dir: Path
    python: str  # the interpreter (of the target venv) that builds and receives the wheels
    wheelhouse: Path | None = None  # default: <build_dir>/wheelhouse
    triton: bool = True
    torchvision: bool = True
    install: bool = True
    doctor: bool = True
    jobs: int | None = None  # overrides the MAX_JOBS rule
    rocmkit_python: str = sys.executable  # runs `python -m rocmkit.source_build.pin`


def _local_version(target: ArchTargets) -> str:
    """A PEP 440 local label naming what the wheel was built for: "rocmkit.gfx1031.gfx1030"."""
    parts = [re.sub(r"[^0-9a-z]", "", a.lower()) for a in target.archs]
    prefix = "sm" if target.backend == "cuda" else ""
    return "rocmkit." + ".".join(prefix + p for p in parts)


def build_env(release: Release, target: ArchTargets, host: HostFacts, jobs: int) -> dict[str, str]:
    """The environment of the compile steps (torch's setup.py reads these)."""
    env: dict[str, str] = {"MAX_JOBS": str(jobs)}
    if target.backend == "rocm":
        env.update(
            USE_ROCM="1",
            USE_CUDA="0",
            PYTORCH_ROCM_ARCH=target.arch_list,
            ROCM_PATH=host.rocm_path,
            # torch.utils.cpp_extension (used by torchvision) looks for ROCM_HOME.
            ROCM_HOME=host.rocm_path,
        )
    else:
        env.update(USE_CUDA="1", USE_ROCM="0", TORCH_CUDA_ARCH_LIST=target.arch_list)
    # Without these setup.py names the wheel after version.txt plus a git hash; with them the
    # wheel says what it is, and `pip install torch==<this>` finds exactly it in the wheelhouse.
    env["PYTORCH_BUILD_VERSION"] = f"{release.torch.version}+{_local_version(target)}"
    env["PYTORCH_BUILD_NUMBER"] = "1"
    env.update(ccache_env(host.ccache, target.backend))
    return env


def make_recipe(release: Release, target: ArchTargets, host: HostFacts, options: BuildOptions) -> Recipe:
    """The steps to build (and install, and check) torch for ``target`` from ``release``."""
    bdir = options.build_dir.resolve()
    src = bdir / "src"
    wheelhouse = (options.wheelhouse or bdir / "wheelhouse").resolve()
    py = options.python
    jobs, rule = max_jobs(host.cores, host.memory_bytes, target.backend)
    if options.jobs is not None:
        jobs, rule = options.jobs, f"MAX_JOBS = {options.jobs} (--jobs)"
    env = build_env(release, target, host, jobs)
    torch_src = src / "pytorch"
    triton_src = src / "triton"
    vision_src = src / "vision"
    torch_version = env["PYTORCH_BUILD_VERSION"]
    pip_wheel = (py, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", str(wheelhouse))
    pip_local = (py, "-m", "pip", "install", "--no-index", "--find-links", str(wheelhouse))

    steps: list[Step] = [
        Step(
            name="torch-source",
            title=f"clone {release.torch.repo} at {release.torch.tag} with submodules",
            argv=(
                "git",
                "clone",
                "--depth",
                "1",
                "--branch",
                release.torch.tag,
                "--recurse-submodules",
                "--shallow-submodules",
                "--jobs",
                "8",
                release.torch.repo,
                str(torch_src),
            ),
            cwd=str(bdir),
            timeout_s=2 * HOUR,
            clean=(str(torch_src),),
            why="the release tag from matrices/build.toml",
        ),
        Step(
            name="torch-build-deps",
            title=f"install torch's build requirements ({release.torch.requirements})",
            argv=(py, "-m", "pip", "install", "-r", release.torch.requirements),
            cwd=str(torch_src),
            timeout_s=HOUR,
            why="--no-build-isolation builds against what is installed, so the build tools go in first",
        ),
    ]
    if options.triton:
        pin_argv = [
            options.rocmkit_python, "-m", "rocmkit.source_build.pin",
            "--torch-src", str(torch_src), "--pin-file", release.triton.pin_file,
            "--repo", release.triton.repo, "--dest", str(triton_src),
        ]  # fmt: skip
        if release.triton.commit:
            pin_argv += ["--expect", release.triton.commit]
        steps += [
            Step(
                name="triton-source",
                title=f"check out the Triton commit torch {release.torch.tag} pins ({release.triton.pin_file})",
                argv=tuple(pin_argv),
                cwd=str(bdir),
                timeout_s=HOUR,
                why="the pin file in the torch checkout is the commit torch was tested with",
            ),
            Step(
                name="triton-build-deps",
                title="install Triton's build requirements",
                argv=(py, "-m", "pip", "install", *TRITON_BUILD_REQUIREMENTS),
                cwd=str(bdir),
                timeout_s=HOUR,
            ),
            Step(
                name="triton-wheel",
                title="build the Triton wheel",
                argv=(*pip_wheel, str(triton_src / release.triton.setup_dir)),
                cwd=str(triton_src),
                env={
                    "MAX_JOBS": env["MAX_JOBS"],
                    **({"TRITON_BUILD_WITH_CCACHE": "true"} if host.ccache else {}),
                },
                timeout_s=4 * HOUR,
                why="Triton downloads its pinned LLVM during this step",
            ),
        ]
    if target.backend == "rocm":
        steps.append(
            Step(
                name="torch-hipify",
                title="hipify the CUDA sources for ROCm (tools/amd_build/build_amd.py)",
                argv=(py, "tools/amd_build/build_amd.py"),
                cwd=str(torch_src),
                env=dict(env),
                timeout_s=HOUR,
                why="PyTorch's README: run build_amd.py before building for ROCm",
            )
        )
    steps.append(
        Step(
            name="torch-wheel",
            title=f"build the torch wheel {torch_version} for {target.arch_list}",
            argv=(*pip_wheel, "-v", "."),
            cwd=str(torch_src),
            env=dict(env),
            timeout_s=12 * HOUR,
            why=rule,
        )
    )
    installs_torch = options.install or options.torchvision
    if installs_torch:
        # torchvision's build imports torch, so torch goes into the environment before it.
        torch_reqs = [f"torch=={torch_version}"] + (["triton"] if options.triton else [])
        steps.append(
            Step(
                name="torch-install",
                title=f"install {' and '.join(torch_reqs)} from the wheelhouse",
                argv=(*pip_local, "--force-reinstall", "--no-deps", *torch_reqs),
                cwd=str(bdir),
                timeout_s=HOUR,
                why="--no-deps: torch's runtime requirements came with its build requirements",
            )
        )
    if options.torchvision:
        vision_env = {
            k: v for k, v in env.items() if k not in {"PYTORCH_BUILD_VERSION", "PYTORCH_BUILD_NUMBER"}
        }
        # torchvision builds its GPU operators only when it sees a GPU, unless FORCE_CUDA=1
        # (also used for ROCm builds); a build host may have none visible.
        vision_env["FORCE_CUDA"] = "1"
        steps += [
            Step(
                name="vision-source",
                title=f"clone {release.torchvision.repo} at {release.torchvision.tag}",
                argv=(
                    "git",
                    "clone",
                    "--depth",
                    "1",
                    "--branch",
                    release.torchvision.tag,
                    release.torchvision.repo,
                    str(vision_src),
                ),
                cwd=str(bdir),
                timeout_s=HOUR,
                clean=(str(vision_src),),
            ),
            Step(
                name="vision-wheel",
                title="build the torchvision wheel",
                argv=(*pip_wheel, "."),
                cwd=str(vision_src),
                env=vision_env,
                timeout_s=4 * HOUR,
            ),
            Step(
                name="vision-install",
                title="install torchvision from the wheelhouse",
                argv=(*pip_local, "--force-reinstall", "--no-deps", "torchvision"),
                cwd=str(bdir),
                timeout_s=HOUR,
            ),
        ]
    arch_args = [x for a in target.archs for x in ("--arch", a)]
    steps.append(
        Step(
            name="wheelhouse",
            title="add the wheels' dependencies and write rocmkit-lock.txt",
            argv=(
                options.rocmkit_python,
                "-m",
                "rocmkit.source_build.wheelhouse",
                "--wheelhouse",
                str(wheelhouse),
                "--python",
                py,
                *arch_args,
            ),
            cwd=str(bdir),
            timeout_s=HOUR,
            why="so that `rocmkit install --wheelhouse` installs this build on other nodes, offline",
        )
    )
    if options.doctor and options.install:
        steps.append(
            Step(
                name="doctor",
                title="prove the build works: rocmkit doctor",
                argv=(py, "-m", "rocmkit", "doctor"),
                cwd=str(bdir),
                timeout_s=2 * HOUR,
                ok_codes=(0, 2),  # 2: warnings only; a failed check (1) or one that cannot run (3) fails
                why="runs in the environment that received the wheels",
            )
        )

    notes = [rule, f"archs: {target.arch_list} ({target.origin})"]
    notes += list(target.skipped)
    sources = {"torch": release.torch.source, "triton": release.triton.source}
    sources["torchvision"] = release.torchvision.source
    for name in release.unconfirmed():
        notes.append(f"unconfirmed in build.toml: {name} ({sources[name]})")
    if not release.triton.commit and options.triton:
        notes.append(
            f"the Triton commit is read from {release.triton.pin_file} in the torch checkout at build time"
        )
    if host.ccache is None:
        notes.append("ccache not found: rebuilds start from scratch (install ccache to speed them up)")
    if options.doctor and options.install and Path(py).resolve() != Path(options.rocmkit_python).resolve():
        notes.append(f"the doctor step needs rocmkit installed in {py}")
    if not options.install:
        notes.append(f"wheels only: install them with `rocmkit install --wheelhouse {wheelhouse}`")
    backend_word = "ROCm" if target.backend == "rocm" else "CUDA"
    return Recipe(
        title=f"torch {release.torch.version} for {target.arch_list} ({backend_word})",
        build_dir=str(bdir),
        wheelhouse=str(wheelhouse),
        steps=tuple(steps),
        env=env,
        notes=tuple(notes),
        facts={
            "torch_release": release.key,
            "torch_tag": release.torch.tag,
            "torch_repo": release.torch.repo,
            "torch_version": torch_version,
            "triton_repo": release.triton.repo if options.triton else None,
            "triton_pin_file": release.triton.pin_file if options.triton else None,
            "triton_commit": release.triton.commit if options.triton else None,
            "triton_version": release.triton.version if options.triton else None,
            "torchvision_tag": release.torchvision.tag if options.torchvision else None,
            "backend": target.backend,
            "archs": list(target.archs),
            "max_jobs": jobs,
            "python": py,
        },
    )
