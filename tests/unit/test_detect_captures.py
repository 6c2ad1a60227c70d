"""Every capture in tests/data/captures detects as its expected.json says.

expected.json holds what the files show. A null there may be filled by inference from
matrices/gfx.toml (and only from it): the PCI table, or the arch whose products the card's
printed name names; a non-null value must match exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmkit.detect import detect_machine
from rocmkit.machine import Machine
from rocmkit.matrix import load_matrix
from rocmkit.sources import CaptureSource

CAPTURES = Path(__file__).resolve().parent.parent / "data" / "captures"
ALL = sorted(p.name for p in CAPTURES.iterdir() if (p / "expected.json").is_file())


def _detect(name: str) -> Machine:
    return detect_machine(CaptureSource(CAPTURES / name), environ={})


def test_all_captures_are_found() -> None:
    assert len(ALL) >= 14


@pytest.mark.parametrize("name", ALL)
def test_capture_matches_expected(name: str) -> None:
    expected = json.loads((CAPTURES / name / "expected.json").read_text())
    machine = _detect(name)
    matrix = load_matrix()
    exp_gpus = expected["gpus"]
    assert len(machine.gpus) == len(exp_gpus), machine.gpus
    for gpu, exp in zip(machine.gpus, exp_gpus, strict=True):
        assert gpu.vendor == exp["vendor"]
        pci = matrix.pci_device(gpu.pci_device_id) if gpu.pci_device_id else None
        for attr, key in (("arch", "gfx"), ("name", "marketing_name"), ("memory_bytes", "vram_bytes")):
            got, want = getattr(gpu, attr), exp[key]
            if want is not None:
                assert got == want, (attr, got, want)
            elif got is not None:
                # Allowed only as an inference from the PCI table, and marked as such.
                assert "matrix" in gpu.sources, (attr, got)
                by_name = matrix.arch_for_product(gpu.name) if gpu.name and pci is None else None
                if attr == "arch" and by_name is not None:
                    assert got == by_name.name, (attr, got)
                    continue
                assert pci is not None and got == {"arch": pci.arch, "name": pci.product}.get(attr), (
                    attr,
                    got,
                )
    assert machine.rocm.version == expected["rocm_version"]
    assert machine.rocm.cpu_agents == expected["cpu_agents"]


def test_rocm_version_never_from_rocminfo() -> None:
    # mi250x prints "ROCk module version 6.3.6" and "Runtime Version: 1.14": neither is ROCm.
    machine = _detect("mi250x-gfx90a-rocm6.2.1")
    assert machine.rocm.version is None
    assert machine.rocm.driver_version == "6.3.6"
    assert machine.rocm.driver_loaded is True


def test_permission_denied_capture_explains_the_fix() -> None:
    machine = _detect("rx9070xt-igpu-popos-rocm7.2.1-kfd-permission-denied")
    kfd = [p for p in machine.problems if "/dev/kfd" in p.message]
    assert kfd and kfd[0].hint and "usermod -aG render,video" in kfd[0].hint
    # rocm-smi still shows both GPUs; the PCI table names them.
    assert [g.pci_device_id for g in machine.gpus] == ["0x7550", "0x13c0"]
    assert [g.integrated for g in machine.gpus] == [False, True]


def test_rock_not_loaded_capture_has_no_gpu_and_says_why() -> None:
    machine = _detect("ryzen2400g-gtx1050ti-centos7-rocm3.8-rock-not-loaded")
    assert machine.gpus == ()
    assert machine.rocm.driver_loaded is False
    assert any("does not exist" in p.message and p.severity == "error" for p in machine.problems)


def test_duplicates_are_merged_across_tools() -> None:
    machine = _detect("mi210x2-gfx90a-rocm6.3.3")
    assert len(machine.gpus) == 2
    for gpu in machine.gpus:
        assert set(gpu.sources) >= {"rocminfo", "amd-smi", "rocm-smi"}
    assert [g.kfd_node for g in machine.gpus] == [2, 3]
    assert [g.pci_bus_id for g in machine.gpus] == ["0000:03:00.0", "0000:83:00.0"]
    # amd-smi shows one placeholder UUID for both (the bug that capture reports): not an identity.
    assert [g.uuid for g in machine.gpus] == ["GPU-67c63ac3c3c637f9", "GPU-7b6b270993774982"]
    assert any("same UUID" in p.message for p in machine.problems)


def test_integrated_from_name_matrix_and_kfd() -> None:
    mi100 = _detect("mi100-gfx908-igpu-gfx1036-rocm5.7")
    assert [g.integrated for g in mi100.gpus] == [False, True]
    m780 = _detect("780m-gfx1103-rocm5.7")
    assert m780.gpus[0].integrated is True


def test_modern_synthetic_capture_uses_kfd_and_amd_smi() -> None:
    machine = _detect("synthetic-rx7900xtx-kfd-amdsmi-rocm6.2.4")
    (gpu,) = machine.gpus
    assert gpu.sources[:2] == ("kfd", "amd-smi")
    assert gpu.kfd_node == 1 and gpu.pci_bus_id == "0000:03:00.0"
    assert machine.rocm.version == "6.2.4"
    assert [i.path for i in machine.rocm.installs] == ["/opt/rocm-6.2.4"]
    assert machine.rocm.driver_version == "6.8.5"
    assert machine.rocm.hip_version == "6.2.41134-65d174c3e"
    assert (
        machine.host.os_id == "ubuntu" and machine.host.glibc == "2.35" and machine.host.python == "3.10.12"
    )
    assert "render" in machine.host.groups
    assert machine.problems == ()


def test_nvidia_capture_visibility_and_driver() -> None:
    machine = _detect("synthetic-h100x2-nvidia-550")
    assert machine.nvidia is not None
    assert machine.nvidia.driver_version == "550.54.15" and machine.nvidia.cuda_version == "12.4"
    assert [g.visible for g in machine.gpus] == [False, True]  # env.json: CUDA_VISIBLE_DEVICES=1
    assert machine.backend_kind == "cuda"
    assert machine.gpus[1].uuid == "GPU-9e02d5aa-1f3b-c6d0-8a7e-51f2b6c0d4e2"


def test_container_without_kfd_access() -> None:
    machine = _detect("synthetic-container-mi250x-no-kfd-access")
    assert machine.host.container == "docker"
    sources = {p.source for p in machine.problems}
    assert {"rocminfo", "/dev/kfd", "/dev/dri"} <= sources
    kfd = next(p for p in machine.problems if p.source == "/dev/kfd")
    assert kfd.hint and "--group-add 109" in kfd.hint


def test_json_round_trip_of_every_capture() -> None:
    for name in ALL:
        machine = _detect(name)
        data = json.loads(json.dumps(machine.to_dict()))
        assert Machine.from_dict(data) == machine


def test_mi100_from_rocm_smi_is_named_by_its_device_id_or_product_not_its_subsystem() -> None:
    # rocm-smi before 6.x prints the subsystem id (0x0c34, shared by MI100s and MI210s) as
    # "Card model"; read as the device id it left the MI100 with no arch (issue 36).
    (by_id,) = _detect("mi100-gfx908-rocm4.0-rocm-smi-productname").gpus
    assert (by_id.pci_device_id, by_id.arch, by_id.name) == ("0x738c", "gfx908", "Instinct MI100")
    by_name = _detect("mi100x2-gfx908-rhel8.4-rocm-smi-csv").gpus
    assert [(g.pci_device_id, g.arch) for g in by_name] == [(None, "gfx908")] * 2
    # rocm-smi 6.x: "Card Model" is the device id and the subsystem has its own line.
    assert [g.pci_device_id for g in _detect("mi210x2-gfx90a-rocm6.3.3-productname").gpus] == ["0x740f"] * 2


def test_a_card_name_picks_the_arch_of_the_product_it_names_and_only_one() -> None:
    matrix = load_matrix()

    def arch(name: str) -> str | None:
        found = matrix.arch_for_product(name)
        return found.name if found else None

    assert arch("Arcturus GL-XL [AMD Instinct MI100]") == "gfx908"
    assert arch("AMD Instinct MI250X") == "gfx90a"
    assert arch("Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]") == "gfx1100"
    assert arch("Radeon Pro W6800 / Radeon Pro W7800") is None  # two archs, same length: none
    assert arch("AMD Radeon RX 7900 XTX") == "gfx1100"
    assert arch("Vega 20 [Radeon Pro VII/Radeon Instinct MI50 32GB]") == "gfx906"
    assert arch("AMD Radeon Graphics") is None
    assert arch("Instinct MI1000") is None  # whole words only
