"""Level-0 checks on machines detected from real captures (public bug reports)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rocmkit.detect import detect_machine
from rocmkit.doctor.checks import env
from rocmkit.doctor.registry import CheckContext, load_checks
from rocmkit.doctor.result import Status
from rocmkit.doctor.run import RunOptions, doctor
from rocmkit.sources import CaptureSource

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"
ALL = sorted(p.name for p in CAPTURES.iterdir() if p.is_dir())


def _statuses(name: str, tmp_path: Path) -> dict[str, tuple[Status, str]]:
    machine = detect_machine(CaptureSource(CAPTURES / name), environ={})
    report = doctor(machine, RunOptions(level=0, modules=("rocmkit.doctor.checks.env",)), cache_dir=tmp_path)
    return {r.name: (r.status, r.message) for r in report.results}


@pytest.mark.parametrize("name", ALL)
def test_every_capture_gets_a_verdict_from_every_env_check(name: str, tmp_path: Path) -> None:
    got = _statuses(name, tmp_path)
    env_checks = {n for n in load_checks(("rocmkit.doctor.checks.env",)) if n.startswith("env.")}
    assert env_checks <= set(got)
    assert all(s is not Status.ERROR for s, _ in got.values()), got


def test_rock_not_loaded(tmp_path: Path) -> None:
    got = _statuses("ryzen2400g-gtx1050ti-centos7-rocm3.8-rock-not-loaded", tmp_path)
    assert got["env.amdgpu_driver"][0] is Status.FAIL
    assert got["env.device_nodes"][0] is Status.FAIL
    assert "/dev/kfd does not exist" in got["env.device_nodes"][1]


def test_kfd_permission_denied_and_igpu(tmp_path: Path) -> None:
    got = _statuses("rx9070xt-igpu-popos-rocm7.2.1-kfd-permission-denied", tmp_path)
    assert got["env.device_nodes"][0] is Status.FAIL
    assert "Permission denied" in got["env.device_nodes"][1]
    assert got["env.igpu"][0] is Status.WARN


@pytest.mark.parametrize(
    "name", ["mi100-gfx908-igpu-gfx1036-rocm5.7", "rx6800m-gfx1031-gfx90c-fedora-rocm6.3"]
)
def test_igpu_next_to_dgpu(name: str, tmp_path: Path) -> None:
    got = _statuses(name, tmp_path)
    assert got["env.igpu"][0] is Status.WARN
    assert "ROCR_VISIBLE_DEVICES=0" not in got["env.igpu"][1]  # the mask is in the remedy, not the message


def test_override_on_a_captured_rdna2_laptop(tmp_path: Path) -> None:
    source = CaptureSource(CAPTURES / "rx6800m-gfx1031-gfx90c-fedora-rocm6.3")
    machine = detect_machine(source, environ={})
    good = replace(machine, env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    r = env.hsa_override(CheckContext(machine=good, cache_dir=tmp_path))
    # gfx1031 takes 10.3.0; the gfx90c iGPU is GCN (gfx9), another family.
    assert r.status is Status.FAIL
    assert "gfx90c" in r.message
    hidden = replace(good, gpus=tuple(replace(g, visible=g.arch == "gfx1031") for g in good.gpus))
    r = env.hsa_override(CheckContext(machine=hidden, cache_dir=tmp_path))
    assert r.status is Status.PASS
