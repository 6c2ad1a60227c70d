"""The env.wsl_* checks on the WSL2 captures and on their failure variants, each with its fix;
and the bare-metal checks that do not apply on WSL2 say so instead of failing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rocmkit.detect import load_machine
from rocmkit.doctor.checks import apu, env, wsl
from rocmkit.doctor.registry import CheckContext
from rocmkit.doctor.result import Status
from rocmkit.machine import Machine
from tests.conftest import CAPTURES

R9700 = "r9700-gfx1201-wsl2-ubuntu24.04-rocm7.2.1-dxg-detection-unset"
STRIX = "strixhalo-gfx1151-wsl2-ubuntu24.04-rocm7.2.1-librocdxg"
GIB = 1024**3


def _ctx(m: Machine) -> CheckContext:
    return CheckContext(machine=m, backend=m.backend_kind, cache_dir=Path("/nonexistent"))


def _pf(m: Machine, **fields: object) -> Machine:
    return dataclasses.replace(m, platform=dataclasses.replace(m.platform, **fields))  # type: ignore[arg-type]


def test_working_strix_halo_passes_and_warns_about_the_memory_cap() -> None:
    m = load_machine(CAPTURES / STRIX)
    ctx = _ctx(m)
    assert wsl.wsl_runtime(ctx).status is Status.PASS
    assert wsl.wsl_dxg_detection(ctx).status is Status.PASS
    assert wsl.wsl_shadowing(ctx).status is Status.PASS
    assert wsl.wsl_driver(ctx).status is Status.PASS
    mem = wsl.wsl_memory(ctx)
    assert mem.status is Status.WARN and mem.remedy is not None and ".wslconfig" in mem.remedy
    # The VM given more RAM than the GPU reports: no cap.
    roomy = dataclasses.replace(m, host=dataclasses.replace(m.host, memory_bytes=120 * GIB))
    assert wsl.wsl_memory(_ctx(roomy)).status is Status.PASS


def test_radeon_without_dxg_detection_fails_with_the_export() -> None:
    m = load_machine(CAPTURES / R9700)
    r = wsl.wsl_dxg_detection(_ctx(m))
    assert r.status is Status.FAIL and r.remedy and r.remedy.startswith("`export HSA_ENABLE_DXG_DETECTION=1`")
    # A discrete GPU's VRAM is its own: not the VM's cap, whatever the sizes.
    assert wsl.wsl_memory(_ctx(m)).status is Status.PASS
    unknown = wsl.wsl_driver(_ctx(m))
    assert unknown.status is Status.SKIP and "ROCMKIT_WSL_DRIVER" in (unknown.remedy or "")


def test_each_failure_has_its_fix() -> None:
    m = load_machine(CAPTURES / STRIX)
    shadow = wsl.wsl_shadowing(_ctx(_pf(m, shadowing_libs=("/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1",))))
    assert shadow.status is Status.FAIL and shadow.remedy == "`sudo apt remove libhsa-runtime64-1 libhsakmt1` (Ubuntu's ROCm 5.7 packages)"
    old = wsl.wsl_driver(_ctx(_pf(m, windows_driver="25.3.1")))
    assert old.status is Status.FAIL and "26.2.2" in old.message and "Adrenalin" in (old.remedy or "")
    no_bridge = wsl.wsl_runtime(_ctx(dataclasses.replace(_pf(m, librocdxg=()), gpus=())))
    assert no_bridge.status is Status.FAIL and "librocdxg" in (no_bridge.remedy or "")
    no_dxg = wsl.wsl_runtime(_ctx(_pf(m, dxg=False)))
    assert no_dxg.status is Status.FAIL and "wsl --update" in (no_dxg.remedy or "")
    off = wsl.wsl_dxg_detection(_ctx(_pf(m, dxg_detection="0")))
    assert off.status is Status.FAIL and "set to '0'" in off.message


def test_bare_metal_checks_do_not_fail_on_wsl_and_wsl_checks_skip_elsewhere() -> None:
    ctx = _ctx(load_machine(CAPTURES / STRIX))
    for fn in (env.amdgpu_driver, env.device_nodes, env.device_groups, apu.apu_memory):
        assert fn(ctx).status is Status.SKIP
    linux = _ctx(load_machine(CAPTURES / "rx6800-gfx1030-rocm5.3"))
    for check in (wsl.wsl_runtime, wsl.wsl_dxg_detection, wsl.wsl_shadowing, wsl.wsl_driver, wsl.wsl_memory):
        assert check(linux).status is Status.SKIP
    assert "WSL2" not in env.device_nodes(linux).message  # Linux keeps its own verdicts


def test_legacy_wsl_runtime_is_a_warning_not_a_failure() -> None:
    m = load_machine(CAPTURES / "rx7900gre-gfx1100-wsl2-ubuntu24.04-rocm6.3.0-legacy-runtime")
    r = wsl.wsl_runtime(_ctx(m))
    assert r.status is Status.WARN and "librocdxg" in (r.remedy or "")
    assert wsl.wsl_dxg_detection(_ctx(m)).status is Status.SKIP  # 6.3 is not known to need it
