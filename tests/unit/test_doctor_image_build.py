"""`doctor --level 0` in an image build: no device is attached, so device checks are not applicable."""

from __future__ import annotations

from pathlib import Path

from rocmkit.doctor.result import Status
from rocmkit.doctor.run import RunOptions, doctor, image_build
from rocmkit.machine import DeviceNode, Gpu, Host, Machine, RocmInfo

DEVICE_CHECKS = ("env.amdgpu_driver", "env.device_nodes", "env.device_groups")


def _machine(**overrides: str) -> Machine:
    # What detection finds in `docker build` on an AMD host: /sys shows amdgpu loaded, no /dev/kfd.
    return Machine(
        gpus=(Gpu(vendor="amd", index=0, arch="gfx942"),),
        rocm=RocmInfo(version="6.2.4", driver_loaded=False),
        host=Host(container="docker", uid=1000, gids=(1000,),
                  devices=(DeviceNode(path="/dev/kfd", exists=False),)),
        overrides=dict(overrides),
    )


def _statuses(tmp_path: Path, machine: Machine, **opts: bool) -> dict[str, tuple[Status, str]]:
    report = doctor(machine, RunOptions(level=0, only=DEVICE_CHECKS, **opts), cache_dir=tmp_path)  # type: ignore[arg-type]
    return {r.name: (r.status, r.message) for r in report.results}


def test_rocmkit_gfx_without_dev_kfd_is_an_image_build(tmp_path: Path) -> None:
    m = _machine(ROCMKIT_GFX="gfx942")
    assert image_build(m)
    got = _statuses(tmp_path, m)
    for name in DEVICE_CHECKS:
        status, message = got[name]
        assert status is Status.SKIP and message.startswith("not applicable in an image build (ROCMKIT_GFX=gfx942")


def test_without_the_override_the_missing_device_still_fails(tmp_path: Path) -> None:
    m = _machine()
    assert not image_build(m)
    got = _statuses(tmp_path, m)
    assert got["env.device_nodes"][0] is Status.FAIL and "/dev/kfd does not exist" in got["env.device_nodes"][1]
    assert got["env.amdgpu_driver"][0] is Status.FAIL


def test_the_flag_says_so_where_nothing_else_would(tmp_path: Path) -> None:
    got = _statuses(tmp_path, _machine(), image_build=True)
    assert all(got[n][0] is Status.SKIP and "(--image-build)" in got[n][1] for n in DEVICE_CHECKS)


def test_a_capture_is_never_an_image_build() -> None:
    m = Machine(overrides={"ROCMKIT_GFX": "gfx942"}, source="capture:/x")
    assert not image_build(m)
