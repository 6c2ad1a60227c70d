"""Environment checks on crafted machines, one per failure mode."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from rocmkit.arch import base_arch, override_to_gfx
from rocmkit.doctor.checks import archs, env
from rocmkit.doctor.registry import CheckContext
from rocmkit.doctor.result import CheckResult, Status
from rocmkit.machine import DeviceNode, Gpu, Host, Machine, Problem, RocmInfo
from tests.conftest import REPO

KFD_OK = DeviceNode(
    path="/dev/kfd", exists=True, readable=True, writable=True, mode="crw-rw----", group="render", gid=110
)
RENDER_OK = DeviceNode(
    path="/dev/dri/renderD128",
    exists=True,
    readable=True,
    writable=True,
    mode="crw-rw----",
    group="render",
    gid=110,
)
MI210 = Gpu(vendor="amd", index=0, arch="gfx90a", name="AMD Instinct MI210", integrated=False)


def _ctx(m: Machine, **options: object) -> CheckContext:
    return CheckContext(
        machine=m, backend=m.backend_kind, cache_dir=Path("/nonexistent"), options=dict(options)
    )


def _amd(*gpus: Gpu, host: Host | None = None, envs: dict[str, str] | None = None, **rocm: object) -> Machine:
    return Machine(
        gpus=gpus or (MI210,),
        rocm=RocmInfo(**{"driver_loaded": True, "version": "6.2.4", **rocm}),  # type: ignore[arg-type]
        host=host or Host(uid=1000, gids=(1000, 110), groups=("me", "render"), devices=(KFD_OK, RENDER_OK)),
        env=envs or {},
    )


def test_no_amd_machine_skips_the_amd_checks() -> None:
    ctx = _ctx(Machine())
    for fn in (env.amdgpu_driver, env.device_nodes, env.device_groups, env.driver_window, env.igpu):
        r = fn(ctx)
        assert isinstance(r, CheckResult) and r.status is Status.SKIP, r


def test_amdgpu_not_loaded_fails_with_secure_boot_hint() -> None:
    r = env.amdgpu_driver(_ctx(_amd(driver_loaded=False)))
    assert r.status is Status.FAIL
    assert r.remedy and "modprobe amdgpu" in r.remedy and "mokutil --sb-state" in r.remedy
    in_container = _amd(driver_loaded=False, host=Host(container="docker"))
    assert "on the host" in (env.amdgpu_driver(_ctx(in_container)).remedy or "")
    assert env.amdgpu_driver(_ctx(_amd(driver_version="6.8.5"))).status is Status.PASS


def test_device_nodes_ok_missing_and_denied() -> None:
    assert env.device_nodes(_ctx(_amd())).status is Status.PASS

    no_kfd = _amd(
        host=Host(uid=1000, container="docker", devices=(DeviceNode(path="/dev/kfd", exists=False),))
    )
    r = env.device_nodes(_ctx(no_kfd))
    assert r.status is Status.FAIL and "--device=/dev/kfd --device=/dev/dri" in (r.remedy or "")

    denied = replace(KFD_OK, readable=False, writable=False)
    r = env.device_nodes(_ctx(_amd(host=Host(uid=1000, gids=(1000,), devices=(denied, RENDER_OK)))))
    assert r.status is Status.FAIL
    assert "/dev/kfd" in r.message
    assert r.remedy and "usermod -aG render" in r.remedy and "log out" in r.remedy

    no_render = _amd(host=Host(uid=1000, devices=(KFD_OK,)))
    assert env.device_nodes(_ctx(no_render)).status is Status.FAIL

    assert env.device_nodes(_ctx(_amd(host=Host()))).status is Status.SKIP


def test_group_id_trap_in_a_container_gives_numeric_group_add() -> None:
    kfd = replace(KFD_OK, group=None, gid=993, readable=False, writable=False)
    render = replace(RENDER_OK, group=None, gid=993, readable=False, writable=False)
    host = Host(uid=1000, gids=(1000, 44), groups=("me", "video"), container="docker", devices=(kfd, render))
    r = env.device_groups(_ctx(_amd(host=host)))
    assert r.status is Status.FAIL
    assert "no name inside the container" in r.message
    assert r.remedy and "--group-add 993" in r.remedy
    assert r.details["missing_gids"] == [993]


def test_device_groups_pass_root_and_world_writable() -> None:
    assert env.device_groups(_ctx(_amd())).status is Status.PASS
    root = _amd(host=Host(uid=0, gids=(0,), devices=(KFD_OK, RENDER_OK)))
    assert env.device_groups(_ctx(root)).status is Status.PASS
    world = replace(KFD_OK, mode="crw-rw-rw-")
    r = env.device_groups(
        _ctx(_amd(host=Host(uid=1000, gids=(1000,), devices=(world, replace(RENDER_OK, mode="crw-rw-rw-")))))
    )
    assert r.status is Status.PASS


def test_driver_window_skips_without_versions() -> None:
    r = env.driver_window(_ctx(_amd(version=None)))
    assert r.status is Status.SKIP and "ROCm user space" in r.message


def test_override_parsing() -> None:
    assert override_to_gfx("10.3.0") == "gfx1030"
    assert override_to_gfx("9.0.10") == "gfx90a"
    assert override_to_gfx("11.0.0") == "gfx1100"
    assert override_to_gfx("ten") is None
    assert base_arch("gfx90a:sramecc+:xnack-") == "gfx90a"


RX6800M = Gpu(vendor="amd", index=0, arch="gfx1031", name="AMD Radeon RX 6800M", integrated=False)
RX7900 = Gpu(vendor="amd", index=0, arch="gfx1100", name="Radeon RX 7900 XTX", integrated=False)


@pytest.mark.parametrize(
    ("gpu", "value", "status"),
    [
        (RX6800M, "10.3.0", Status.PASS),  # the usual RDNA2 override
        (RX6800M, "11.0.0", Status.FAIL),  # another family
        (RX7900, "11.0.0", Status.PASS),  # a no-op
        (RX7900, "10.3.0", Status.FAIL),
        (MI210, "9.0.6", Status.FAIL),  # same gfx90 prefix, different generation
        (RX6800M, "10.3.2", Status.WARN),  # same family, not the usual value
        (RX6800M, "banana", Status.FAIL),
    ],
)
def test_hsa_override(gpu: Gpu, value: str, status: Status) -> None:
    r = env.hsa_override(_ctx(_amd(gpu, envs={"HSA_OVERRIDE_GFX_VERSION": value})))
    assert r.status is status, r.message


def test_hsa_override_unset_suggests_the_matrix_value_and_cross_family_remedy() -> None:
    r = env.hsa_override(_ctx(_amd(RX6800M)))
    assert r.status is Status.PASS
    assert "10.3.0" in r.message
    mixed = _amd(RX6800M, replace(RX7900, index=1), envs={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    r = env.hsa_override(_ctx(mixed))
    assert r.status is Status.FAIL
    assert "GPU 1 gfx1100" in r.message
    assert r.remedy and "HIP_VISIBLE_DEVICES" in r.remedy


@pytest.mark.parametrize(
    ("envs", "status", "text"),
    [
        ({}, Status.PASS, "no visibility variable"),
        ({"HIP_VISIBLE_DEVICES": "0,1"}, Status.PASS, "consistent"),
        ({"HIP_VISIBLE_DEVICES": "3"}, Status.FAIL, "only 2"),
        ({"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "1"}, Status.WARN, "compose"),
        ({"HIP_VISIBLE_DEVICES": "0", "CUDA_VISIBLE_DEVICES": "1"}, Status.WARN, "disagree"),
        ({"HIP_VISIBLE_DEVICES": ""}, Status.WARN, "hides every GPU"),
    ],
)
def test_visible_devices(envs: dict[str, str], status: Status, text: str) -> None:
    m = _amd(MI210, replace(MI210, index=1), envs=envs)
    r = env.visible_devices(_ctx(m))
    assert r.status is status
    assert text in r.message


IGPU = Gpu(vendor="amd", index=0, arch="gfx1036", name="AMD Radeon Graphics", integrated=True)
MI100 = Gpu(vendor="amd", index=1, arch="gfx908", name="AMD Instinct MI100", integrated=False)


def test_igpu_as_device_zero_warns_and_names_the_mask() -> None:
    r = env.igpu(_ctx(_amd(IGPU, MI100)))
    assert r.status is Status.WARN
    assert "device 0" in r.message
    assert r.remedy and "ROCR_VISIBLE_DEVICES=1" in r.remedy
    hidden = _amd(replace(IGPU, visible=False), MI100)
    assert env.igpu(_ctx(hidden)).status is Status.PASS
    assert env.igpu(_ctx(_amd(MI100))).status is Status.PASS


def test_igpu_uses_the_matrix_when_detection_did_not_say() -> None:
    r = env.igpu(_ctx(_amd(replace(IGPU, integrated=None), replace(MI100, integrated=None))))
    assert r.status is Status.WARN


def test_shm_small_in_container_and_threshold_option() -> None:
    small = _amd(host=Host(shm_bytes=64 * 2**20, container="docker"))
    r = env.shm(_ctx(small))
    assert r.status is Status.WARN and "--shm-size" in (r.remedy or "") and "64 MiB" in r.message
    assert r.figures[0].unit == "GiB"
    assert env.shm(_ctx(small, shm_min_bytes=32 * 2**20)).status is Status.PASS
    assert env.shm(_ctx(_amd(host=Host(shm_bytes=16 * 2**30)))).status is Status.PASS
    assert env.shm(_ctx(_amd(host=Host()))).status is Status.SKIP


def test_iommu_and_numa_on_multi_gpu_nodes() -> None:
    two = (MI210, replace(MI210, index=1))
    no_pt = _amd(*two, host=Host(kernel_cmdline="BOOT_IMAGE=/vmlinuz ro quiet", numa_balancing=True))
    assert env.iommu(_ctx(no_pt)).status is Status.WARN
    assert env.numa_balancing(_ctx(no_pt)).status is Status.WARN
    ok = _amd(*two, host=Host(kernel_cmdline="ro quiet iommu=pt amd_iommu=on", numa_balancing=False))
    assert env.iommu(_ctx(ok)).status is Status.PASS
    assert env.numa_balancing(_ctx(ok)).status is Status.PASS
    single = _amd(MI210, host=Host(kernel_cmdline="ro", numa_balancing=True))
    assert env.iommu(_ctx(single)).status is Status.SKIP
    assert env.numa_balancing(_ctx(single)).status is Status.SKIP
    # An iGPU does not make a node multi-GPU.
    assert env.iommu(_ctx(_amd(IGPU, MI100, host=Host(kernel_cmdline="ro")))).status is Status.SKIP


def test_detection_problems_surface() -> None:
    m = replace(
        _amd(),
        problems=(Problem(source="rocminfo", message="timed out", hint="check dmesg", severity="error"),),
    )
    r = env.detection(_ctx(m))
    assert r.status is Status.WARN and r.remedy == "check dmesg"


def test_driver_window_from_the_matrix() -> None:
    # The shipped data records amdgpu-dkms 6.8.5 (ROCm 6.2's driver): without it this fails.
    assert archs.driver_window("6.8.5") is not None
    inside = env.driver_window(_ctx(_amd(version="6.2.4", driver_version="6.8.5")))
    assert inside.status is Status.PASS, inside.message
    outside = env.driver_window(_ctx(_amd(version="5.4.3", driver_version="6.8.5")))
    assert outside.status is Status.FAIL
    assert "Incompatible kernel and userspace" in outside.message
    assert outside.remedy and "amdgpu-dkms" in outside.remedy
    in_tree = env.driver_window(_ctx(_amd(version="6.2.4", driver_version="6.8.0-45-generic")))
    assert in_tree.status is Status.SKIP and "in-tree" in in_tree.message


def test_cache_dir_writable_full_and_unwritable(tmp_path: Path) -> None:
    m = _amd()
    ok = env.cache_dir(CheckContext(machine=m, cache_dir=tmp_path / "cache"))
    assert ok.status is Status.PASS and (tmp_path / "cache").is_dir()
    full = env.cache_dir(CheckContext(machine=m, cache_dir=tmp_path, options={"cache_min_free_bytes": 2**62}))
    assert full.status is Status.WARN and "ROCMKIT_CACHE_DIR" in (full.remedy or "")
    blocker = tmp_path / "file"
    blocker.write_text("")
    bad = env.cache_dir(CheckContext(machine=m, cache_dir=blocker / "sub"))
    assert bad.status is Status.FAIL and "cannot write" in bad.message


def test_every_warning_and_failure_names_its_fix(tmp_path: Path) -> None:
    denied = replace(KFD_OK, readable=False, writable=False, gid=993, group=None)
    bad_machines = [
        _amd(driver_loaded=False),
        _amd(host=Host(uid=1000, gids=(1000,), container="docker", devices=(denied, RENDER_OK))),
        _amd(host=Host(uid=1000, devices=(DeviceNode(path="/dev/kfd", exists=False),))),
        _amd(RX6800M, replace(RX7900, index=1), envs={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"}),
        _amd(MI210, replace(MI210, index=1), envs={"HIP_VISIBLE_DEVICES": "5", "ROCR_VISIBLE_DEVICES": "0"}),
        _amd(IGPU, MI100),
        _amd(
            MI210,
            replace(MI210, index=1),
            host=Host(shm_bytes=2**26, kernel_cmdline="ro", numa_balancing=True),
        ),
        replace(_amd(), problems=(Problem(source="rocminfo", message="hung", hint="see dmesg"),)),
    ]
    from rocmkit.doctor.registry import load_checks

    checks = [c for c in load_checks(("rocmkit.doctor.checks.env",)).values()]
    seen = 0
    for m in bad_machines:
        ctx = CheckContext(machine=m, backend="rocm", cache_dir=tmp_path)
        for chk in checks:
            r = chk.func(ctx)
            assert isinstance(r, CheckResult)
            if r.status in (Status.WARN, Status.FAIL):
                seen += 1
                assert r.remedy, f"{r.name}: {r.message}"
                assert "\n" not in r.message
    assert seen >= 10


def test_a_broken_shipped_matrix_is_an_error_not_a_quiet_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rocmkit.errors import DataError
    from rocmkit.util.paths import matrices_dir

    shutil.copytree(REPO / "matrices", tmp_path, dirs_exist_ok=True)
    (tmp_path / "gfx.toml").write_text("[[arch]\n")
    monkeypatch.setenv("ROCMKIT_MATRICES_DIR", str(tmp_path))
    matrices_dir.cache_clear()
    try:
        with pytest.raises(DataError, match=r"gfx\.toml"):
            archs.recommended_override("gfx1031")
        with pytest.raises(DataError, match=r"gfx\.toml"):
            env.hsa_override(_ctx(_amd(RX6800M)))
    finally:
        matrices_dir.cache_clear()
