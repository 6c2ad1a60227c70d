"""A real ``docker build`` of a committed Dockerfile, air-gapped but for apt:

- a dockerd of our own (tests/support/dockerd.py), the classic builder
  (``DOCKER_BUILDKIT=0``: nothing fetched for a frontend), ``--network host``;
- the base: a ``debootstrap --variant=minbase`` Debian with Python, loaded with
  ``docker import`` in place of the ROCm image (no registry here), with pip
  pointed at a 127.0.0.1 index that serves rocmkit's build backend and
  dependencies;
- ``--build-arg ROCMKIT_INDEX_BASE`` at a 127.0.0.1 index of torch builds, so the
  image's own ``rocmkit install`` and build-time ``rocmkit doctor --level 0`` run
  as written; then the image's entrypoint runs the doctor again.

Only the ``FROM`` line differs from the committed file. Measured on the 2-core
test machine: the first run makes and caches the base (debootstrap, about 3
minutes, from the apt mirror); every run then takes 2 to 3 minutes (the image's
own apt-get update, two pip installs, layer commits). It runs in CI, since container
builds are one of rocmkit's four uses: ``.ci/run`` installs docker.io and debootstrap and makes
the base and the wheels first (``python -m tests.support.dockerd prepare``), failing when it
cannot; in CI a missing engine fails this test, elsewhere it skips and says why.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.support import dockerd
from tests.support.engines import skip_or_fail
from tests.support.pkgindex import IndexServer, make_torch_set, make_wheel

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "docker" / "rocm6.2-torch2.5.Dockerfile"
BASE = "rocmkit-test-base:bookworm"
TAG = "rocmkit-test:rocm6.2-torch2.5"


def _torch_index(root: Path) -> None:
    """The builds the image's `rocmkit install --rocm 6.2 --torch 2.5` asks for."""
    from rocmkit.detect import detect_machine
    from rocmkit.resolve import Constraints, resolve

    machine = detect_machine(environ={"ROCMKIT_GFX": "gfx90a,gfx942,gfx1100", "ROCMKIT_ROCM_VERSION": "6.2.4"})
    plan = resolve(machine, Constraints(torch="2.5", rocm="6.2"))
    pins = dict(r.split("==", 1) for r in plan.requirements)
    index = root / "whl" / "rocm6.2"
    triton = next(f"{n}=={v}" for n, v in pins.items() if "triton" in n)
    make_torch_set(index, pins.pop("torch"), triton=triton, hip="6.2.41133")
    for name, version in pins.items():
        if "triton" not in name:
            make_wheel(index, name, version, files={f"{name}/__init__.py": f"__version__ = {version!r}\n"})


def _dockerfile(folder: Path) -> Path:
    text = DOCKERFILE.read_text()
    froms = [ln for ln in text.splitlines() if ln.startswith("FROM ")]
    assert len(froms) == 1, froms
    out = folder / "Dockerfile"
    out.write_text(text.replace(froms[0], f"FROM {BASE}"))
    return out


def _context(folder: Path) -> Path:
    """What the Dockerfile copies from a checkout, and nothing else (no .venv)."""
    ctx = folder / "context"
    ctx.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, ctx / name)
    for name in ("rocmkit", "matrices"):
        shutil.copytree(REPO / name, ctx / name, ignore=shutil.ignore_patterns("__pycache__"))
    return ctx


def test_dockerfile_builds_and_its_doctor_runs(tmp_path: Path) -> None:
    why = dockerd.missing_reason()
    if why:
        skip_or_fail(why)
    if sys.version_info[:2] != (3, 11):
        skip_or_fail("the wheels for the image are fetched for this Python; Debian bookworm has 3.11")
    material = dockerd.prepared()
    if material is None:
        skip_or_fail("the base image and wheels are not made: run `python -m tests.support.dockerd prepare` first")
    assert material is not None
    tarball, wheels = material
    root = tmp_path / "index"
    (root / "pypi").mkdir(parents=True)
    for whl in wheels.glob("*.whl"):
        shutil.copy2(whl, root / "pypi" / whl.name)
    _torch_index(root)
    with IndexServer(root, legacy_metadata=False) as index, dockerd.Dockerd() as engine:
        imported = engine.docker(
            "import",
            "--change",
            f"ENV PIP_INDEX_URL={index.index_url('pypi')}",
            str(tarball),
            BASE,
        )
        assert imported.returncode == 0, imported.stderr + engine.log()
        built = engine.docker(
            "build",
            "--network",
            "host",
            "-f",
            str(_dockerfile(tmp_path)),
            "--build-arg",
            f"ROCMKIT_INDEX_BASE={index.url}/whl",
            "-t",
            TAG,
            str(_context(tmp_path)),
            timeout=1200,
        )
        out = built.stdout + built.stderr
        assert built.returncode == 0, out[-8000:]
        # The image's own install used the local index, and its doctor step passed.
        assert any("/whl/rocm6.2/torch" in r for r in index.requests), index.requests
        assert "rocmkit install --venv /opt/rocmkit --rocm 6.2 --torch 2.5" in out
        assert "rocmkit doctor --level 0" in out
        ran = engine.docker("run", "--rm", "--network", "host", TAG, "--level", "0", "--json", timeout=300)
        report = json.loads(ran.stdout)
        assert report["level"] == 0 and report["results"], ran.stderr
        assert report["versions"]["torch"] == "2.5.1+rocm6.2"
        assert report["versions"]["python_executable"].startswith("/opt/rocmkit/")
        # No GPU and no ROCm on the builder: the device checks skip; none fails.
        assert all(r["status"] in ("pass", "skip", "warn") for r in report["results"]), report["results"]
