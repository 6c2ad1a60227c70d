"""Real ``docker build``s of rendered Dockerfiles, one of each kind, air-gapped but for apt:

- a dockerd of our own (tests/support/dockerd.py), the classic builder
  (``DOCKER_BUILDKIT=0``: nothing fetched for a frontend), ``--network host``;
- the base: a ``debootstrap --variant=minbase`` Debian with Python, loaded with
  ``docker import`` in place of the ROCm or Ubuntu image (no registry here), with pip
  pointed at a 127.0.0.1 index that serves rocmkit's build backend and dependencies;
- ``--build-arg ROCMKIT_INDEX_BASE`` at a 127.0.0.1 index of torch builds, so the image's
  own install step and build-time ``rocmkit doctor --level 0`` run as written; then the
  image's entrypoint runs the doctor again.

The images: the committed ROCm one (``rocm6.2-torch2.5``, its ``rocmkit install --rocm``) and
the committed CUDA one (``cuda12.8-torch2.11``, its ``rocmkit install --cuda``), both with small generated wheels under torch's real names, versions and
requirements (the real ones are gigabytes, and fetched from no registry here); and the CPU
image that bare ``rocmkit docker render`` gives on this machine (a CPU build box; rendered
through the CLI, its plan held to the test's torch index), whose ``rocmkit install --cpu``
installs the real torch 2.13.0 CPU wheel, Triton 3.8.0 and numpy, so that its entrypoint's
level-1 doctor imports torch and runs Triton's interpreter kernels in the container. Its
torchvision and torchaudio are generated stand-ins (no CPU build of them is to be had here),
so that run leaves out ``models.companions``. Only the ``FROM`` line differs from the
rendered files, and, in the build context, the PyPI URL of ``matrices/channels.toml`` (a CPU
plan takes Triton and numpy from PyPI: here the 127.0.0.1 one).

One dockerd and one base serve the three builds, which share their layers up to the install
step (the classic builder's cache), so the second and third cost their install and doctor
steps only. Measured on the 2-core test machine while other work ran on it (load average 4
to 6): the whole file in 2 to 4.5 minutes (the ROCm build alone took 40 s before the other
two joined): the CPU image's pip install of the real torch and Triton is most of it (70 to
140 s), then the ROCm build (20 to 45 s), dockerd removing the layers as it stops (up to a
minute), and the CUDA build (5 to 10 s). The base and the wheels are made once and cached
(debootstrap, about 3 minutes, from the apt mirror). It runs in CI, since container builds
are one of rocmkit's four uses:
``.ci/run`` installs docker.io and debootstrap and makes the base and the wheels first
(``python -m tests.support.dockerd prepare``), failing when it cannot; in CI a missing engine
fails this test, elsewhere it skips and says why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from rocmkit.detect import detect_machine
from rocmkit.machine import Machine
from rocmkit.resolve import Constraints, resolve
from tests.support import dockerd
from tests.support.engines import skip_or_fail
from tests.support.pkgindex import IndexServer, make_torch_set, make_wheel

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BASE = "rocmkit-test-base:bookworm"
PYPI_URL = "https://pypi.org/simple"


@dataclass(frozen=True)
class Rig:
    engine: dockerd.Dockerd
    index: IndexServer
    context: Path
    work: Path


def _torch_index(root: Path, name: str, machine: Machine, cons: Constraints, **build: str) -> str:
    """The builds a plan for ``cons`` asks for, in ``root/whl/<name>`` (torch's Triton, if it
    pins one, beside it; ``build``: torch.version.hip or .cuda). Returns the torch version."""
    plan = resolve(machine, cons)
    pins = dict(r.split("==", 1) for r in plan.requirements if "==" in r)
    index = root / "whl" / name
    triton = next((f"{n}=={v}" for n, v in pins.items() if "triton" in n and n in (plan.triton or "")), None)
    torch = pins.pop("torch")
    make_torch_set(index, torch, triton=triton, **build)
    for dist, version in pins.items():
        if triton is None or not triton.startswith(f"{dist}=="):
            make_wheel(index, dist, version, files={f"{dist}/__init__.py": f"__version__ = {version!r}\n"})
    return torch


def _link(src: Path, dest: Path) -> None:
    """A hard link (no 450 MB copy per run) where the cache shares the file system, else a copy."""
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def _cpu_index(root: Path, real: Path, machine: Machine) -> None:
    """The CPU plan's builds: the real torch in ``root/whl/cpu`` (linked where it can be), Triton,
    numpy and torch's dependencies on the test's PyPI, generated companions of the plan's versions."""
    plan = resolve(machine, Constraints(torch="2.13.0", cpu=True))
    index = root / "whl" / "cpu"
    index.mkdir(parents=True)
    for whl in real.glob("*.whl"):
        _link(whl, (index if whl.name.startswith("torch-") else root / "pypi") / whl.name)
    pins = dict(r.split("==", 1) for r in plan.requirements if "==" in r)
    assert pins["torch"] == "2.13.0+cpu" and (index / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").exists()
    for dist in plan.companions:
        if dist in pins and dist in ("torchvision", "torchaudio"):
            make_wheel(index, dist, pins[dist], files={f"{dist}/__init__.py": f"__version__ = {pins[dist]!r}\n"})


def _context(folder: Path, pypi: str) -> Path:
    """What the Dockerfile copies from a checkout, and nothing else (no .venv); the data's
    PyPI is the test's."""
    ctx = folder / "context"
    ctx.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, ctx / name)
    for name in ("rocmkit", "matrices"):
        shutil.copytree(REPO / name, ctx / name, ignore=shutil.ignore_patterns("__pycache__"))
    channels = ctx / "matrices" / "channels.toml"
    text = channels.read_text()
    assert f'pypi = "{PYPI_URL}"' in text
    channels.write_text(text.replace(f'pypi = "{PYPI_URL}"', f'pypi = "{pypi}"'))
    return ctx


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    why = dockerd.missing_reason()
    if why:
        skip_or_fail(why)
    if sys.version_info[:2] != (3, 11):
        skip_or_fail("the wheels for the image are fetched for this Python; Debian bookworm has 3.11")
    material = dockerd.prepared()
    if material is None:
        skip_or_fail("the base image and wheels are not made: run `python -m tests.support.dockerd prepare` first")
    assert material is not None
    work = tmp_path_factory.mktemp("docker-build")
    root = work / "index"
    (root / "pypi").mkdir(parents=True)
    for whl in material.wheels.glob("*.whl"):
        shutil.copy2(whl, root / "pypi" / whl.name)
    # ROCm: the builds `rocmkit install --rocm 6.2 --torch 2.5` asks for, with the image's overrides.
    rocm = detect_machine(environ={"ROCMKIT_GFX": "gfx90a,gfx942,gfx1100", "ROCMKIT_ROCM_VERSION": "6.2.4"})
    _torch_index(root, "rocm6.2", rocm, Constraints(torch="2.5", rocm="6.2"), hip="6.2.41133")
    # CUDA and CPU: no GPU at build time, the wheels named (--cuda 12.8, --cpu).
    plain = detect_machine(environ={"ROCMKIT_NO_GPU": "1"})
    _torch_index(root, "cu128", plain, Constraints(torch="2.11", cuda="12.8"), cuda="12.8")
    # The CPU index serves torch 2.13.0+cpu and nothing newer (bare render's plan is held to it).
    _cpu_index(root, material.torch_cpu, plain)
    with IndexServer(root, legacy_metadata=False) as index, dockerd.Dockerd() as engine:
        imported = engine.docker(
            "import", "--change", f"ENV PIP_INDEX_URL={index.index_url('pypi')}", str(material.base), BASE
        )
        assert imported.returncode == 0, imported.stderr + engine.log()
        yield Rig(engine=engine, index=index, context=_context(work, index.index_url("pypi")), work=work)


def _build(rig: Rig, text: str, tag: str) -> str:
    """``docker build`` of this Dockerfile text on the test base; returns the build's output."""
    froms = [ln for ln in text.splitlines() if ln.startswith("FROM ")]
    assert len(froms) == 1, froms
    dockerfile = rig.work / f"{tag.replace(':', '_')}.Dockerfile"
    dockerfile.write_text(text.replace(froms[0], f"FROM {BASE}"))
    built = rig.engine.docker(
        "build", "--network", "host", "-f", str(dockerfile),
        "--build-arg", f"ROCMKIT_INDEX_BASE={rig.index.url}/whl",
        "-t", tag, str(rig.context),
        timeout=1200,
    )  # fmt: skip
    out = built.stdout + built.stderr
    assert built.returncode == 0, out[-8000:]
    return out


def _doctor_in(rig: Rig, tag: str) -> dict[str, object]:
    """The image's entrypoint, `rocmkit doctor`, at level 0 with a JSON report."""
    ran = rig.engine.docker("run", "--rm", "--network", "host", tag, "--level", "0", "--json", timeout=300)
    report: dict[str, object] = json.loads(ran.stdout)
    assert report["level"] == 0 and report["results"], ran.stderr
    versions = report["versions"]
    assert isinstance(versions, dict) and versions["python_executable"].startswith("/opt/rocmkit/")
    # No GPU on the builder: the device checks skip; none fails.
    results = report["results"]
    assert isinstance(results, list) and all(r["status"] in ("pass", "skip", "warn") for r in results), results
    return report


def test_rocm_dockerfile_builds_and_its_doctor_runs(rig: Rig) -> None:
    text = (REPO / "docker" / "rocm6.2-torch2.5.Dockerfile").read_text()
    out = _build(rig, text, "rocmkit-test:rocm6.2-torch2.5")
    # The image's own install used the local index, and its doctor step passed.
    assert any("/whl/rocm6.2/torch" in r for r in rig.index.requests), rig.index.requests
    assert "rocmkit install --venv /opt/rocmkit --backend rocm6.2 --torch 2.5" in out
    assert "rocmkit doctor --level 0 --image-build" in out
    report = _doctor_in(rig, "rocmkit-test:rocm6.2-torch2.5")
    assert report["versions"]["torch"] == "2.5.1+rocm6.2"  # type: ignore[index]


def test_cuda_dockerfile_builds_from_the_named_wheels(rig: Rig) -> None:
    text = (REPO / "docker" / "cuda12.8-torch2.11.Dockerfile").read_text()
    out = _build(rig, text, "rocmkit-test:cuda12.8-torch2.11")
    # `rocmkit install --backend cu128` planned the cu128 wheels on a builder with no GPU and took
    # them from the index the plan names.
    assert any("/whl/cu128/torch" in r for r in rig.index.requests), rig.index.requests
    assert "rocmkit install --venv /opt/rocmkit --backend cu128 --torch 2.11" in out
    report = _doctor_in(rig, "rocmkit-test:cuda12.8-torch2.11")
    assert report["versions"]["torch"] == "2.11.0+cu128"  # type: ignore[index]


def test_bare_render_on_this_cpu_machine_builds(rig: Rig) -> None:
    # What a user bringing up a CPU build box runs: `rocmkit docker render`, nothing named
    # (ROCMKIT_NO_GPU=1 makes this host one, whatever it has), its plan held to the torch index.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMKIT_")}
    env.update(
        ROCMKIT_NO_GPU="1", ROCMKIT_INDEX_BASE=f"{rig.index.url}/whl", ROCMKIT_CACHE_DIR=str(rig.work / "cache")
    )
    rendered = subprocess.run(
        [sys.executable, "-m", "rocmkit", "docker", "render"],
        capture_output=True, text=True, timeout=120, env=env, cwd=rig.work,
    )  # fmt: skip
    assert rendered.returncode == 0, rendered.stderr
    text = rendered.stdout
    assert "RUN rocmkit install --venv /opt/rocmkit --backend cpu --torch 2.13.0\n" in text
    out = _build(rig, text, "rocmkit-test:cpu-torch2.13.0")
    assert any("/whl/cpu/torch" in r for r in rig.index.requests), rig.index.requests
    # Triton and numpy from the data's PyPI (the test's), as a CPU plan takes them.
    assert any(r.startswith("/pypi/triton/") for r in rig.index.requests), rig.index.requests
    assert "rocmkit doctor --level 0 --image-build" in out
    # The image as a CPU node runs it (its CMD is --level 1): the real torch imports, and the
    # doctor's Triton kernels run in Triton's interpreter; the stand-in companions are left out.
    ran = rig.engine.docker(
        "run", "--rm", "--network", "host", "--ipc=host", "rocmkit-test:cpu-torch2.13.0",
        "--level", "1", "--skip", "models.companions", "--json",
        timeout=600,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    report = json.loads(ran.stdout)
    assert report["versions"]["torch"] == "2.13.0+cpu"
    assert report["versions"]["python_executable"].startswith("/opt/rocmkit/")
    status = {r["name"]: r["status"] for r in report["results"]}
    assert all(s in ("pass", "skip", "warn") for s in status.values()), status
    for name in ("torch.import", "torch.build", "triton.import", "triton.vector_add", "triton.softmax"):
        assert status[name] == "pass", (name, status)
