"""A plan's requirements file and commands work as they are with real pip and uv, against a local index."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rocmkit.machine import Gpu, Machine
from rocmkit.resolve import Constraints, resolve
from rocmkit.resolve.render import requirements_text
from tests.support.pkgindex import PLATFORM_TAG, IndexServer, make_torch_set, make_wheel

pytestmark = pytest.mark.integration

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
UV = str(Path(sys.executable).parent / "uv")


def _serve_plan_wheels(
    root: Path, plan_requirements: tuple[str, ...], backend: str, triton: str | None
) -> None:
    index = root / "whl" / backend
    torch_version = next(r.partition("==")[2] for r in plan_requirements if r.startswith("torch=="))
    make_torch_set(index, torch_version, triton=triton, hip="6.2")
    for req in plan_requirements:
        name, _, version = req.partition("==")
        if name not in ("torch", (triton or "").partition("==")[0]):
            make_wheel(index, name, version, tag=PLATFORM_TAG, requires=[f"torch=={torch_version}"])


def test_requirements_file_and_commands_resolve_with_pip_and_uv(tmp_path: Path) -> None:
    machine = Machine(gpus=(Gpu(vendor="amd", index=0, arch="gfx1031"),))
    root = tmp_path / "root"
    with IndexServer(root) as srv:
        plan = resolve(machine, Constraints(torch="2.5", python=PY, index_base=srv.url + "/whl"))
        assert plan.index_urls == (srv.url + "/whl/rocm6.2",)
        _serve_plan_wheels(root, plan.requirements, plan.backend.tag, plan.triton)
        req = tmp_path / "requirements.txt"
        req.write_text(requirements_text(plan))

        # uv reads the --index-url line from the file itself.
        compiled = subprocess.run(
            [UV, "pip", "compile", str(req), "--python-version", PY, "--no-cache", "--quiet"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert compiled.returncode == 0, compiled.stderr
        pins = {line.split(" ")[0] for line in compiled.stdout.splitlines() if "==" in line}
        assert set(plan.requirements) <= pins

        # pip, through the exact command the plan prints (download only: nothing is installed).
        argv = shlex.split(plan.pip_command())
        assert argv[:2] == ["pip", "install"]
        dest = tmp_path / "dl"
        fetched = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-cache-dir", "-d", str(dest), *argv[2:]],
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert fetched.returncode == 0, fetched.stderr
        names = sorted(p.name.split("-")[0] for p in dest.glob("*.whl"))
        assert names == ["pytorch_triton_rocm", "torch", "torchaudio", "torchvision"]
