"""The torch/Triton checks' verdicts, from crafted versions and arch lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rocmkit.doctor.checks import torch_env
from rocmkit.doctor.registry import CheckContext
from rocmkit.doctor.result import Status
from rocmkit.machine import Gpu, Machine, NvidiaInfo, RocmInfo
from rocmkit.plan import Backend, Plan

RX6800M = Gpu(vendor="amd", index=0, arch="gfx1031", name="RX 6800M", integrated=False)
MI210 = Gpu(vendor="amd", index=0, arch="gfx90a:sramecc+:xnack-", name="MI210", integrated=False)
IGPU = Gpu(vendor="amd", index=0, arch="gfx1036", name="AMD Radeon Graphics", integrated=True)
XTX = Gpu(vendor="amd", index=1, arch="gfx1100", name="Radeon RX 7900 XTX", integrated=False)
ROCM62 = ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100"]


def _ctx(*gpus: Gpu, backend: str = "rocm", env: dict[str, str] | None = None, **rocm: Any) -> CheckContext:
    m = Machine(gpus=gpus, rocm=RocmInfo(**rocm), env=env or {})
    return CheckContext(machine=m, backend=backend, cache_dir=Path("/x"))  # type: ignore[arg-type]


def test_triton_pin_reads_markers() -> None:
    reqs = [
        "filelock",
        'pytorch-triton-rocm==3.1.0; platform_system == "Linux" and platform_machine == "x86_64"',
        'triton==3.1.0; platform_system == "Windows"',
    ]
    pin = torch_env.triton_pin(reqs)  # type: ignore[attr-defined]
    assert pin is not None and str(pin.specifier) == "==3.1.0" and pin.name == "pytorch-triton-rocm"
    assert torch_env.triton_pin(["sympy", 'optree>=0.13.0; extra == "optree"']) is None  # type: ignore[attr-defined]
    assert torch_env.triton_pin(None) is None  # type: ignore[attr-defined]


def _packages(monkeypatch: pytest.MonkeyPatch, installed: dict[str, str], requires: list[str] | None) -> None:
    def version(dist: str) -> str | None:
        return installed.get(dist)

    monkeypatch.setattr(torch_env, "_version", version)
    monkeypatch.setattr(torch_env.importlib.metadata, "requires", lambda dist: requires)  # type: ignore[attr-defined]


PIN = ['pytorch-triton-rocm==3.1.0; platform_system == "Linux"']


def test_triton_packages_match(monkeypatch: pytest.MonkeyPatch) -> None:
    _packages(monkeypatch, {"torch": "2.5.1+rocm6.2", "pytorch-triton-rocm": "3.1.0"}, PIN)
    r = torch_env.triton_packages(_ctx(MI210))
    assert r.status is Status.PASS and "as torch 2.5.1+rocm6.2 pins" in r.message


def test_triton_packages_wrong_version(monkeypatch: pytest.MonkeyPatch) -> None:
    _packages(monkeypatch, {"torch": "2.5.1+rocm6.2", "pytorch-triton-rocm": "3.2.0"}, PIN)
    ctx = _ctx(MI210)
    ctx = CheckContext(
        machine=ctx.machine,
        backend="rocm",
        plan=Plan(backend=Backend.parse("rocm6.2"), index_urls=("https://download.pytorch.org/whl/rocm6.2",)),
        cache_dir=ctx.cache_dir,
    )
    r = torch_env.triton_packages(ctx)
    assert r.status is Status.FAIL
    assert "triton_key" in r.message
    assert r.remedy == (
        "python -m pip install --force-reinstall 'pytorch-triton-rocm==3.1.0; platform_system == \"Linux\"'"
        " --index-url https://download.pytorch.org/whl/rocm6.2"
    )


def test_triton_packages_two_distributions(monkeypatch: pytest.MonkeyPatch) -> None:
    _packages(monkeypatch, {"torch": "2.5.1", "triton": "3.1.0", "pytorch-triton-rocm": "3.1.0"}, PIN)
    r = torch_env.triton_packages(_ctx(MI210))
    assert r.status is Status.FAIL and "2 Triton distributions" in r.message
    assert r.remedy and r.remedy.startswith("python -m pip uninstall -y triton &&")


def test_triton_packages_missing_and_unpinned(monkeypatch: pytest.MonkeyPatch) -> None:
    _packages(monkeypatch, {"torch": "2.5.1+rocm6.2", "triton": "3.1.0"}, PIN)
    r = torch_env.triton_packages(_ctx(MI210))
    assert r.status is Status.FAIL and "not installed; found triton==3.1.0 instead" in r.message
    _packages(monkeypatch, {"torch": "2.6.0+git"}, ["sympy"])
    assert torch_env.triton_packages(_ctx(MI210)).status is Status.WARN
    assert torch_env.triton_packages(_ctx(backend="cpu")).status is Status.PASS
    _packages(monkeypatch, {}, None)
    assert torch_env.triton_packages(_ctx(backend="cpu")).status is Status.SKIP


def test_build_rocm_cases() -> None:
    assert torch_env.build_result(_ctx(MI210), "2.5.1+cpu", None, None).status is Status.FAIL
    cuda = torch_env.build_result(_ctx(MI210), "2.5.1+cu124", None, "12.4")
    assert cuda.status is Status.FAIL and "CUDA 12.4" in cuda.message
    ok = torch_env.build_result(_ctx(MI210, version="6.2.4"), "2.5.1+rocm6.2", "6.2.41133-dd7f95766", None)
    assert ok.status is Status.PASS
    major = torch_env.build_result(_ctx(MI210, version="5.7.1"), "2.5.1+rocm6.2", "6.2.41133", None)
    assert major.status is Status.WARN


def test_build_warns_outside_the_kernel_driver_window() -> None:
    from rocmkit.doctor.checks import archs

    assert archs.driver_window("6.8.5") is not None  # the shipped data records it
    # ROCm 6.2's amdgpu (6.8.5) takes user space 6.0 to 7.0 (AMD's support table, matrices/rocm.toml).
    inside = torch_env.build_result(_ctx(MI210, driver_version="6.8.5"), "2.9.0+rocm7.0", "7.0.51831", None)
    assert inside.status is Status.PASS
    r = torch_env.build_result(_ctx(MI210, driver_version="6.8.5"), "2.11.0+rocm7.2", "7.2.26015", None)
    assert r.status is Status.WARN and "outside the kernel driver's window" in r.message


def test_build_cuda_driver_too_old() -> None:
    nv = Gpu(vendor="nvidia", index=0, compute_capability="9.0")
    ctx = CheckContext(machine=Machine(gpus=(nv,), nvidia=NvidiaInfo(cuda_version="12.4")), backend="cuda")
    assert torch_env.build_result(ctx, "2.8.0+cu128", None, "12.8").status is Status.FAIL
    assert torch_env.build_result(ctx, "2.5.1+cu124", None, "12.4").status is Status.PASS


def test_arch_list_predicts_invalid_device_function_and_the_override() -> None:
    r = torch_env.arch_list_result(_ctx(RX6800M), "2.5.1+rocm6.2", ROCM62)
    assert r.status is Status.FAIL
    assert "invalid device function" in r.message
    assert r.remedy == "export HSA_OVERRIDE_GFX_VERSION=10.3.0"
    with_override = _ctx(RX6800M, env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    assert torch_env.arch_list_result(with_override, "2.5.1", ROCM62).status is Status.PASS
    wrong = _ctx(RX6800M, env={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    assert torch_env.arch_list_result(wrong, "2.5.1", ROCM62).status is Status.FAIL


def test_arch_list_feature_flags_and_wheel_for_strix_halo() -> None:
    assert torch_env.arch_list_result(_ctx(MI210), "2.5.1", ROCM62).status is Status.PASS
    strix = Gpu(vendor="amd", index=0, arch="gfx1151", integrated=True)
    r = torch_env.arch_list_result(_ctx(strix), "2.5.1", ROCM62)
    assert r.status is Status.FAIL and r.remedy and "install a torch built for gfx1151" in r.remedy
    assert torch_env.arch_list_result(_ctx(MI210), "2.5.1", []).status is Status.SKIP


def test_arch_list_nvidia() -> None:
    h100 = Gpu(vendor="nvidia", index=0, compute_capability="9.0")
    blackwell = Gpu(vendor="nvidia", index=0, compute_capability="12.0")
    ctx = CheckContext(machine=Machine(gpus=(h100,)), backend="cuda")
    assert torch_env.arch_list_result(ctx, "2.5.1", ["sm_80", "sm_86", "sm_90"]).status is Status.PASS
    ctx = CheckContext(machine=Machine(gpus=(blackwell,)), backend="cuda")
    assert torch_env.arch_list_result(ctx, "2.5.1", ["sm_80", "sm_86", "sm_90"]).status is Status.FAIL


def _dev(name: str, arch: str) -> dict[str, Any]:
    return {"index": 0, "name": name, "arch": arch, "memory_bytes": 1}


def test_devices_count_igpu_first_and_none() -> None:
    r = torch_env.devices_result(
        _ctx(MI210), [], ["HIP initialization: Unexpected error from hipGetDeviceCount()"]
    )
    assert r.status is Status.FAIL and "hipGetDeviceCount" in r.message
    ok = torch_env.devices_result(_ctx(MI210), [_dev("MI210", "gfx90a:sramecc+:xnack-")], [])
    assert ok.status is Status.PASS and ok.figures[0].value == 1
    both = torch_env.devices_result(
        _ctx(IGPU, XTX), [_dev("AMD Radeon Graphics", "gfx1036"), _dev("Radeon RX 7900 XTX", "gfx1100")], []
    )
    assert both.status is Status.WARN and "cuda:0 is the integrated GPU" in both.message
    fewer = torch_env.devices_result(
        _ctx(MI210, Gpu(vendor="amd", index=1, arch="gfx90a")), [_dev("MI210", "gfx90a")], []
    )
    assert fewer.status is Status.WARN and "sees 1 GPU(s), detection found 2" in fewer.message
