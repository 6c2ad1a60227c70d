"""The platform travels with the plan: `resolve --format pylock` locks aarch64 wheels for a GH200
(uv against an index on 127.0.0.1 that serves only aarch64 wheels), and `docker render` builds
the image for the plan's platform."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmkit.containers.request import RenderRequest
from rocmkit.plan import Backend, Plan
from rocmkit.resolve import Constraints
from rocmkit.session import Session
from rocmkit.util.safeload import loads_toml
from tests.conftest import CAPTURES
from tests.support.cli import keep_user_config_out, run_main
from tests.support.pkgindex import IndexServer, make_wheel, torch_files

pytestmark = pytest.mark.integration

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
CP = f"cp{PY.replace('.', '')}"
ARM = f"{CP}-{CP}-manylinux_2_28_aarch64"
GH200 = CAPTURES / "gh200-aarch64-nvidia-smi-580.105.08"
STRIX = CAPTURES / "strixhalo-gfx1151-wsl2-ubuntu24.04-rocm7.2.1-librocdxg"


@pytest.fixture(autouse=True)
def _quiet_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keep_user_config_out(tmp_path / "home", monkeypatch)
    monkeypatch.delenv("ROCMKIT_OFFLINE", raising=False)


@pytest.fixture(scope="module")
def index_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index")
    cu = root / "whl/cu132"
    torch = "2.13.0+cu132"
    make_wheel(cu, "torch", torch, tag=ARM, files=torch_files(torch, cuda="13.2"), requires_python=">=3.9")
    make_wheel(cu, "torchvision", "0.28.0+cu132", tag=ARM, requires=[f"torch=={torch}"])
    make_wheel(cu, "torchaudio", "2.11.0+cu132", tag=ARM, requires=[f"torch=={torch}"])
    return root


@pytest.fixture
def server(index_root: Path) -> Iterator[IndexServer]:
    with IndexServer(index_root) as srv:
        yield srv


def test_pylock_of_a_gh200_plan_locks_aarch64_wheels(server: IndexServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(
        capsys, "resolve", "--capture", str(GH200), "--python", PY, "--torch", "2.13",
        "--index-base", server.url + "/whl", "--format", "pylock",
    )  # fmt: skip
    assert code == 0, err
    assert out.startswith(f"# rocmkit.plan/1: backend cu132, torch 2.13.0+cu132, Python {PY}, linux-aarch64")
    packages = {p["name"]: p for p in loads_toml(out, "pylock.toml")["packages"]}
    assert set(packages) == {"torch", "torchvision", "torchaudio"}
    for package in packages.values():
        (wheel,) = package["wheels"]
        assert wheel["url"].endswith("manylinux_2_28_aarch64.whl") and len(wheel["hashes"]["sha256"]) == 64


def test_docker_render_builds_for_the_plans_platform() -> None:
    session = Session(capture=GH200)
    assert session.plan(Constraints()).platform == "linux-aarch64"
    ((name, text),) = RenderRequest().rendered(session).items()
    assert name.startswith("cuda") and "FROM --platform=linux/arm64 " in text
    # Printed for stdout (nothing named), the build line reads the default Dockerfile: no -f.
    assert "docker build --platform linux/arm64 -t rocmkit:cuda" in text and " -f " not in text
    wsl = Session(capture=STRIX)
    ((_, text),) = RenderRequest().rendered(wsl).items()
    assert "--device=/dev/dxg" in text and "HSA_ENABLE_DXG_DETECTION=1" in text and "FROM --platform" not in text
    assert "--device=/dev/kfd" not in text


def test_a_lock_carries_the_platform_in_its_plan() -> None:
    plan = Session(capture=STRIX).plan(Constraints())
    assert Plan.from_dict(plan.to_dict()).platform == "wsl2-x86_64"


def test_a_wheelhouse_for_aarch64_nodes_is_downloaded_on_this_x86_64_host(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from rocmkit.install.wheelhouse import platform_tags

    plan = Plan(
        backend=Backend.parse("cu132"),
        torch_version="2.13.0+cu132",
        requirements=("torch==2.13.0+cu132", "torchvision==0.28.0+cu132", "torchaudio==2.11.0+cu132"),
        index_urls=(server.index_url("whl/cu132"),),
        python=PY,
        platform="linux-aarch64",
    )
    assert platform_tags(plan, "aarch64") == () and platform_tags(dataclasses.replace(plan, platform=None), "x86_64") == ()
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan.to_dict()))
    house = tmp_path / "house"
    code, _, err = run_main(capsys, "install", "--plan", str(path), "--download-only", "--wheelhouse", str(house))
    assert code == 0, err
    assert "on linux-aarch64" in err
    wheels = sorted(p.name for p in house.glob("*.whl"))
    assert len(wheels) == 3 and all(w.endswith("manylinux_2_28_aarch64.whl") for w in wheels)
    # The wheelhouse's lock carries the plan, platform included.
    assert '"platform": "linux-aarch64"' in (house / "rocmkit-lock.txt").read_text()
