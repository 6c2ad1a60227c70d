"""The build's wheelhouse step, then `rocmkit install --wheelhouse` on "another node" (a fresh venv).

Built wheels are stand-ins made by tests.support.pkgindex (a real torch build takes hours); the
dependency download goes to a local index server; everything else is the real code path.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from rocmkit.install.wheelhouse import LOCK_NAME, open_wheelhouse
from rocmkit.proc.runner import run
from tests.support.pkgindex import IndexServer, make_wheel, torch_files, triton_files

pytestmark = pytest.mark.integration

TORCH = "2.7.1+rocmkit.gfx1031"
HIP = "6.2.41134-65d174c3e"
QUIET = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}


@pytest.mark.slow
def test_wheelhouse_step_makes_a_wheelhouse_install_accepts(tmp_path: Path) -> None:
    wheelhouse = tmp_path / "build" / "wheelhouse"
    make_wheel(wheelhouse, "torch", TORCH, requires=["tinydep>=1.0"], files=torch_files(TORCH, hip=HIP))
    make_wheel(wheelhouse, "triton", "3.3.1", files=triton_files("3.3.1"))
    make_wheel(tmp_path / "index" / "pypi", "tinydep", "1.2.0")

    # The build venv: it has pip (the build steps use it) and the freshly built torch installed.
    venv = tmp_path / "build-venv"
    assert run([sys.executable, "-m", "venv", str(venv)], timeout=180).ok
    py = str(venv / "bin" / "python")
    installed = run(
        [py, "-m", "pip", "install", "--no-index", "--no-deps", "--find-links", str(wheelhouse), f"torch=={TORCH}", "triton"],
        env={**os.environ, **QUIET},
        timeout=300,
    )  # fmt: skip
    assert installed.ok, installed.stdout + installed.stderr

    with IndexServer(tmp_path / "index") as srv:
        env = {**os.environ, **QUIET, "PIP_INDEX_URL": f"{srv.url}/pypi/"}
        step = run(
            [sys.executable, "-m", "rocmkit.source_build.wheelhouse", "--wheelhouse", str(wheelhouse), "--python", py, "--arch", "gfx1031"],
            env=env,
            timeout=300,
        )  # fmt: skip
    assert step.ok, step.stdout + step.stderr
    assert (wheelhouse / "tinydep-1.2.0-py3-none-any.whl").exists()  # the dependency came along
    assert (wheelhouse / LOCK_NAME).exists()

    # install's own reader accepts it, with a plan read from the built torch.
    lock = open_wheelhouse(wheelhouse)
    assert sorted(e.name for e in lock.entries) == ["tinydep", "torch", "triton"]
    assert lock.plan is not None
    assert lock.plan.backend.tag == "rocm6.2"
    assert lock.plan.torch_version == TORCH
    assert lock.plan.triton == "triton==3.3.1"
    assert lock.plan.target_archs == ("gfx1031",)

    # Another node: a fresh venv, installed offline from the wheelhouse, verified by install.
    other = tmp_path / "other-node"
    result = run(
        [sys.executable, "-m", "rocmkit", "install", "--venv", str(other), "--wheelhouse", str(wheelhouse), "--installer", "uv"],
        env={**os.environ, **QUIET},
        timeout=600,
    )  # fmt: skip
    assert result.ok, result.stdout + result.stderr
    check = run([str(other / "bin" / "python"), "-c", "import torch, tinydep; print(torch.__version__, torch.version.hip)"], timeout=60)  # fmt: skip
    assert check.ok and check.stdout.split() == [TORCH, HIP]


def test_wheelhouse_step_without_built_wheels_fails_clearly(tmp_path: Path) -> None:
    (tmp_path / "wh").mkdir()
    result = run(
        [sys.executable, "-m", "rocmkit.source_build.wheelhouse", "--wheelhouse", str(tmp_path / "wh"), "--python", sys.executable],
        timeout=60,
    )  # fmt: skip
    assert result.returncode == 7
    assert "no torch, triton or torchvision wheel in" in result.stderr
