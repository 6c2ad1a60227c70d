"""What the offline policy's plan meets on a real index on 127.0.0.1.

* The live check covers every package the plan pins from the index: a mirror that serves torch
  but not torchvision/torchaudio gets a plan without them, said in its warnings (point 0).
* A plan for a build known only from upstream's build lists (resolve --offline): install reads
  the planned index once; when it answers without that build, the plan's fallback (the newest
  confirmed build on the same index) is installed instead, loudly; never another source.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rocmkit.cli import main
from rocmkit.install.fallback import hold_to_index
from rocmkit.machine import Machine
from rocmkit.matrix import load_matrix
from rocmkit.plan import Plan
from rocmkit.resolve import Constraints, live, resolve
from tests.support.pkgindex import PLATFORM_TAG, IndexServer, make_wheel

pytestmark = pytest.mark.integration

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
OTHER = "cp310-cp310-manylinux_2_28_x86_64" if PY != "3.10" else "cp312-cp312-manylinux_2_28_x86_64"


def _cpu_plan(base: str, cache: Path) -> Plan:
    cons = Constraints(cpu=True, python=PY, index_base=base)
    m = load_matrix()
    return live.check_plan(
        resolve(Machine(), cons, matrix=m),
        Machine(),
        cons,
        m,
        read=live.observer(timeout=2.0, cache=cache),
        read_project=live.project_reader(timeout=2.0, cache=cache),
    )


def test_a_mirror_without_the_companions_gets_a_plan_without_them(tmp_path: Path) -> None:
    cpu = tmp_path / "idx" / "whl" / "cpu"
    make_wheel(cpu, "torch", "2.13.0+cpu", tag=PLATFORM_TAG)
    # torchvision's page answers, but only with a wheel for another Python; torchaudio has none (404).
    make_wheel(cpu, "torchvision", "0.28.0+cpu", tag=OTHER)
    with IndexServer(tmp_path / "idx") as server:
        plan = _cpu_plan(f"{server.url}/whl", tmp_path / "cache")
        assert "/whl/cpu/torchvision/" in server.requests and "/whl/cpu/torchaudio/" in server.requests
    assert plan.torch_version == "2.13.0+cpu"
    assert not any(r.startswith(("torchvision", "torchaudio")) for r in plan.requirements)
    assert not any(r.startswith(("torchvision", "torchaudio")) for r in plan.companions)
    index = f"{server.url}/whl/cpu"
    assert any(
        f"{index} serves no torchvision 0.28.0+cpu wheel for Python {PY}: torchvision==0.28.0+cpu is left out"
        in w
        for w in plan.warnings
    )
    assert any(f"{index} has no torchaudio (404): torchaudio==2.11.0+cpu is left out" in w for w in plan.warnings)


def test_a_mirror_with_the_companions_keeps_them(tmp_path: Path) -> None:
    cpu = tmp_path / "idx" / "whl" / "cpu"
    make_wheel(cpu, "torch", "2.13.0+cpu", tag=PLATFORM_TAG)
    make_wheel(cpu, "torchvision", "0.28.0+cpu", tag=PLATFORM_TAG)
    make_wheel(cpu, "torchaudio", "2.11.0+cpu", tag="py3-none-manylinux_2_28_x86_64")
    with IndexServer(tmp_path / "idx") as server:
        plan = _cpu_plan(f"{server.url}/whl", tmp_path / "cache")
    assert "torchvision==0.28.0+cpu" in plan.requirements and "torchaudio==2.11.0+cpu" in plan.requirements
    assert not any("left out" in w for w in plan.warnings)


def _offline_plan(base: str) -> Plan:
    plan = resolve(Machine(), Constraints(cpu=True, python=PY, index_base=base))
    assert plan.torch_version == "2.15.0+cpu" and plan.fallback[0] == "torch==2.13.0+cpu"
    return plan


def test_install_falls_back_on_the_same_index_when_it_lacks_the_planned_build(tmp_path: Path) -> None:
    cpu = tmp_path / "idx" / "whl" / "cpu"
    for name, version in (("torch", "2.13.0+cpu"), ("torchvision", "0.28.0+cpu"), ("torchaudio", "2.11.0+cpu")):
        make_wheel(cpu, name, version, tag=PLATFORM_TAG)
    with IndexServer(tmp_path / "idx") as server:
        plan = _offline_plan(f"{server.url}/whl")
        read = live.project_reader(timeout=2.0, cache=tmp_path / "cache")
        held, message = hold_to_index(plan, read=read)
    assert message is not None and message.startswith("WARNING: ")
    assert f"{server.url}/whl/cpu answers but does not serve torch 2.15.0+cpu for Python {PY}" in message
    assert "installing the fallback torch 2.13.0+cpu from the same index" in message
    assert held.torch_version == "2.13.0+cpu" and held.fallback == ()
    assert held.requirements[:3] == ("torch==2.13.0+cpu", "torchvision==0.28.0+cpu", "torchaudio==2.11.0+cpu")
    assert held.index_urls == plan.index_urls  # never another source
    assert "torch==2.13.0+cpu" in held.required and "torchvision==0.28.0+cpu" in held.companions


def test_install_keeps_the_plan_when_the_index_serves_it_or_does_not_answer(tmp_path: Path) -> None:
    cpu = tmp_path / "idx" / "whl" / "cpu"
    make_wheel(cpu, "torch", "2.15.0+cpu", tag=PLATFORM_TAG)
    with IndexServer(tmp_path / "idx") as server:
        plan = _offline_plan(f"{server.url}/whl")
        held, message = hold_to_index(plan, read=live.project_reader(timeout=2.0, cache=tmp_path / "c1"))
    assert message is None and held == plan
    dead = IndexServer(tmp_path / "nothing")
    dead.start()
    base = dead.url
    dead.stop_serving()
    plan = _offline_plan(f"{base}/whl")
    held, message = hold_to_index(plan, read=live.project_reader(timeout=2.0, cache=tmp_path / "c2"))
    assert message is None and held == plan  # the index check after this one says what to do


def test_install_cli_falls_back_loudly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cpu = tmp_path / "idx" / "whl" / "cpu"
    for name, version in (("torch", "2.13.0+cpu"), ("torchvision", "0.28.0+cpu"), ("torchaudio", "2.11.0+cpu")):
        make_wheel(cpu, name, version, tag=PLATFORM_TAG)
    with IndexServer(tmp_path / "idx") as server:
        plan_file = tmp_path / "plan.json"
        plan_file.write_text(json.dumps(_offline_plan(f"{server.url}/whl").to_dict()))
        venv = tmp_path / "new-venv"
        try:
            main(["install", "--plan", str(plan_file), "--venv", str(venv), "--dry-run", "--python", PY])
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    _, err = capsys.readouterr()
    assert code == 0, err
    assert "rocmkit: WARNING: " in err and "installing the fallback torch 2.13.0+cpu" in err
    assert "rocmkit: plan cpu: torch==2.13.0+cpu torchvision==0.28.0+cpu torchaudio==2.11.0+cpu" in err
    assert not venv.exists()
