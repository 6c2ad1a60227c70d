"""The resolver on the real captures (detect -> resolve), and the CLI on them."""

from __future__ import annotations

import json

import pytest

from rocmkit.cli import main
from rocmkit.detect import load_machine
from rocmkit.resolve import Constraints, resolve
from tests.conftest import CAPTURES

# capture -> (constraints, backend, env, target archs, unsupported GPU archs)
TABLE = {
    "rx6800m-gfx1031-gfx90c-fedora-rocm6.3": (
        {"torch": "2.5"},
        "rocm6.2",
        {"HSA_OVERRIDE_GFX_VERSION": "10.3.0", "HIP_VISIBLE_DEVICES": "0"},
        ("gfx1030",),
        ("gfx90c",),
    ),
    "rx9070xt-igpu-popos-rocm7.2.1-kfd-permission-denied": (
        {"torch": "2.7"},
        "rocm6.3",
        {"HIP_VISIBLE_DEVICES": "0"},
        ("gfx1201",),
        ("gfx1036",),
    ),
    "780m-gfx1103-rocm5.7": (
        {"torch": "2.7"},
        "rocm6.3",
        {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"},
        ("gfx1100",),
        (),
    ),
    "mi100-gfx908-igpu-gfx1036-rocm5.7": (
        {},
        "rocm7.2",
        {"HIP_VISIBLE_DEVICES": "0"},
        ("gfx908",),
        ("gfx1036",),
    ),
    # rocm-smi alone: the device id (ROCm 4.0) or only the product name (CSV), beside the
    # subsystem id 0x0c34 that rocmkit once read as the device (issue 36).
    "mi100-gfx908-rocm4.0-rocm-smi-productname": ({}, "rocm7.2", {}, ("gfx908",), ()),
    "mi100x2-gfx908-rhel8.4-rocm-smi-csv": ({}, "rocm7.2", {}, ("gfx908",), ()),
    "mi210x2-gfx90a-rocm6.3.3": ({"rocm": "6.3"}, "rocm6.3", {}, ("gfx90a",), ()),
    "mi250x-gfx90a-rocm6.2.1": ({"rocm": "6.2"}, "rocm6.2", {}, ("gfx90a",), ()),
    "mi300x8-rocm-smi-stas00": ({}, "rocm7.2", {}, ("gfx942",), ()),
    "mi50x4-gfx906-rocky8-rocm5.7-grep": ({"torch": "2.4"}, "rocm6.1", {}, ("gfx906",), ()),
    "rx6800-gfx1030-rocm5.3": ({"torch": "2.3"}, "rocm6.0", {}, ("gfx1030",), ()),
    "ryzen2400g-gtx1050ti-centos7-rocm3.8-rock-not-loaded": ({}, "cpu", {}, (), ()),
    "synthetic-h100x2-nvidia-550": ({}, "cu126", {}, (), ()),
    # Only /proc/driver/nvidia/version, no nvidia-smi: CUDA wheels for driver 580 (cu13x), not CPU.
    "synthetic-nvidia-driver-only-580": ({}, "cu132", {}, (), ()),
    "synthetic-rx7900xtx-kfd-amdsmi-rocm6.2.4": ({"rocm": "6.2.4"}, "rocm6.2.4", {}, ("gfx1100",), ()),
    "synthetic-container-mi250x-no-kfd-access": ({"torch": "2.6"}, "rocm6.2.4", {}, ("gfx90a",), ()),
}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_capture_plans(name: str) -> None:
    kw, backend, env, targets, unsupported = TABLE[name]
    machine = load_machine(CAPTURES / name)
    # The table's keyword arguments are Constraints' str fields (torch, rocm), which mypy cannot tell.
    plan = resolve(machine, Constraints(python="3.11", **kw))  # type: ignore[arg-type]
    assert plan.backend.tag == backend
    assert plan.env == env
    assert plan.target_archs == targets
    assert len(plan.unsupported_gpus) == len(unsupported)
    for arch, line in zip(unsupported, plan.unsupported_gpus, strict=True):
        assert arch in line


# Captures whose only GPU no wheel in the matrix supports: resolve must refuse, and offer --backend cpu.
NO_PLAN: set[str] = set()
# Captures whose GPUs no ROCm build of torch carries at all (old GCN): CPU torch, with a warning.
NO_ROCM_TORCH = {
    "synthetic-rx580-gfx803-chipset-slot-pcie-atomics": "gfx803",
    "synthetic-r9fury-gfx803-kfd-no-rocm-torch": "gfx803",
}


@pytest.mark.parametrize("name", sorted(NO_ROCM_TORCH))
def test_old_gcn_gpus_plan_cpu_torch_with_a_warning_naming_why(name: str) -> None:
    machine = load_machine(CAPTURES / name)
    assert [g.arch for g in machine.amd_gpus] == [NO_ROCM_TORCH[name]]
    plan = resolve(machine, Constraints(python="3.11"))
    assert plan.backend.tag == "cpu" and plan.torch_version and plan.torch_version.endswith("+cpu")
    (warning,) = [w for w in plan.warnings if "no ROCm build of torch carries" in w]
    assert "gfx803" in warning and "torch will run on the CPU" in warning
    # Asked for ROCm by name, it still refuses: CPU wheels are a fallback the user did not ask for.
    from rocmkit.errors import NoPlanError

    with pytest.raises(NoPlanError, match="gfx803"):
        resolve(machine, Constraints(python="3.11", rocm="6.2"))


@pytest.mark.parametrize("arch", ["gfx801", "gfx803"])
def test_no_rocm_torch_for_any_gfx8_but_not_beside_a_gpu_one_carries(arch: str) -> None:
    from dataclasses import replace

    from rocmkit.matrix import load_matrix
    from rocmkit.resolve.core import no_rocm_torch_for

    m = load_matrix()
    base = load_machine(CAPTURES / "synthetic-r9fury-gfx803-kfd-no-rocm-torch")
    old = replace(base.amd_gpus[0], arch=arch)
    assert no_rocm_torch_for(replace(base, gpus=(old,)), m) is not None
    # Beside a gfx1100 the ROCm plan stands (the old GPU is left out there), and an unknown
    # target is not known to be unsupported (the ROCm path asks for ROCMKIT_GFX).
    new = replace(old, arch="gfx1100", index=1, pci_device_id="0x744c", pci_bus_id="0000:03:00.0")
    assert no_rocm_torch_for(replace(base, gpus=(old, new)), m) is None
    assert no_rocm_torch_for(replace(base, gpus=(replace(old, arch=None, pci_device_id=None),)), m) is None


@pytest.mark.parametrize("folder", sorted(p.name for p in CAPTURES.iterdir() if p.is_dir()))
def test_every_capture_resolves_to_a_plan_the_matrix_backs(folder: str) -> None:
    from rocmkit.errors import NoPlanError
    from rocmkit.matrix import load_matrix

    if folder in NO_PLAN:
        with pytest.raises(NoPlanError) as info:
            resolve(load_machine(CAPTURES / folder), Constraints(python="3.11"))
        assert "--backend cpu" in (info.value.fix or "")
        return
    plan = resolve(load_machine(CAPTURES / folder), Constraints(python="3.11"))
    if plan.torch_version:
        version, _, index = plan.torch_version.partition("+")
        release = load_matrix().torch_release(version)
        assert release is not None
        variant = release.variant(index)
        assert variant is not None and set(plan.target_archs) <= set(variant.archs)


def test_driver_window_warning_on_a_capture() -> None:
    machine = load_machine(CAPTURES / "synthetic-rx7900xtx-kfd-amdsmi-rocm6.2.4")
    # amdgpu-dkms 6.8.5 (ROCm 6.2) supports user space 6.0-7.0: the newest build inside it.
    plan = resolve(machine, Constraints(python="3.11"))
    assert plan.backend.tag == "rocm7.0" and not any("kernel driver" in w for w in plan.warnings)
    assert any("outside the window of amdgpu-dkms 6.8.5 (ROCm 6.0 to 7.0)" in r for r in plan.reasons)
    plan = resolve(machine, Constraints(python="3.11", rocm="6.2.4"))
    assert not any("kernel driver" in w for w in plan.warnings)
    plan = resolve(machine, Constraints(python="3.11", rocm="7.2"))
    assert any("amdgpu-dkms 6.8.5 (ROCm 6.2's) supports ROCm user space 6.0 to 7.0" in w for w in plan.warnings)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main([*argv])
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    cap = str(CAPTURES / "rx6800m-gfx1031-gfx90c-fedora-rocm6.3")
    code, out, err = run(capsys, "resolve", "--capture", cap, "--torch", "2.5", "--python", "3.11", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["schema"] == "rocmkit.plan/1" and data["backend"] == "rocm6.2"
    assert data["requirements"][0] == "torch==2.5.1+rocm6.2"
    assert data["env"]["HSA_OVERRIDE_GFX_VERSION"] == "10.3.0"
    assert data["index_urls"] == ["https://download.pytorch.org/whl/rocm6.2"]
    assert data["reasons"] and "pip_command" in data and "uv_command" in data


def test_cli_requirements_and_index_base(capsys: pytest.CaptureFixture[str]) -> None:
    cap = str(CAPTURES / "mi300x8-rocm-smi-stas00")
    code, out, _ = run(
        capsys, "resolve", "--capture", cap, "--rocm", "6.2", "--python", "3.11", "--format", "requirements",
        "--index-base", "http://127.0.0.1:8123/whl",
    )  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert "--index-url http://127.0.0.1:8123/whl/rocm6.2" in lines
    assert "torch==2.5.1+rocm6.2" in lines and "pytorch-triton-rocm==3.1.0" in lines


def test_cli_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "resolve", "--capture", str(CAPTURES / "780m-gfx1103-rocm5.7"), "--python", "3.11"
    )
    assert code == 0
    assert out.startswith("Plan: torch ")
    assert "export HSA_OVERRIDE_GFX_VERSION=11.0.0" in out and "uv pip install torch==" in out


@pytest.mark.parametrize(
    ("argv", "code", "text"),
    [
        (("--torch", "2.8", "--python", "3.11"), 6, "has no ROCm wheels with device code for gfx1151"),
        (("--torch", "banana"), 4, "is not a version"),
        (("--python", "3.7"), 6, "Python 3.7"),
        (("--json", "--format", "requirements"), 4, "ask for two outputs"),
    ],
)
def test_cli_errors_are_one_line(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: tuple[str, ...],
    code: int,
    text: str,
) -> None:
    monkeypatch.setenv("ROCMKIT_GFX", "gfx1151")
    got, out, err = run(capsys, "resolve", "--capture", str(CAPTURES / "780m-gfx1103-rocm5.7"), *argv)
    assert got == code
    assert out == ""
    error, *fixes = err.strip().splitlines()
    assert text in error and fixes and all(f.startswith("fix: ") for f in fixes)


def test_cli_missing_capture(capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    code, _, err = run(capsys, "resolve", "--capture", "/nonexistent/capture")
    assert code == 4 and err.startswith("error:")


def test_a_gpu_of_unknown_arch_is_named_as_such_with_the_override_as_fix() -> None:
    """A GPU whose PCI id is not in gfx.toml (the RX 580 capture's, with an id gfx.toml lacks):
    say so, not "device code for unknown"."""
    from dataclasses import replace

    from rocmkit.errors import NoPlanError

    machine = load_machine(CAPTURES / "synthetic-rx580-gfx803-chipset-slot-pcie-atomics")
    unknown = replace(machine.gpus[0], arch=None, pci_device_id="0x6fdf")
    with pytest.raises(NoPlanError) as info:
        resolve(replace(machine, gpus=(unknown,)), Constraints(python="3.11"))
    assert "gfx arch of AMD GPU 0 is unknown" in info.value.message
    assert "for unknown" not in info.value.message
    assert "ROCMKIT_GFX=" in (info.value.fix or "")
