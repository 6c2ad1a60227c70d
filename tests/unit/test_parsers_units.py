"""Parser behaviour on real and documented outputs, one tool at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.arch import parse_gfx
from rocmkit.parsers import amd_smi, host, kfd, lspci, nvidia_smi, rocm_smi, rocminfo, versions
from rocmkit.parsers.records import norm_bus_id, norm_hex

CAPTURES = Path(__file__).resolve().parent.parent / "data" / "captures"


def _cmd(capture: str, name: str) -> str:
    return (CAPTURES / capture / "cmd" / name).read_text(encoding="utf-8")


# ----------------------------------------------------------------- rocminfo


def test_rocminfo_full_output() -> None:
    r = rocminfo.parse_rocminfo(_cmd("mi210x2-gfx90a-rocm6.3.3", "rocminfo.txt"))
    assert r.cpu_agents == 2 and r.driver_loaded is True and r.driver_version is None
    a, b = r.gpus
    assert (a.arch, a.name, a.memory_bytes, a.pci_device_id) == (
        "gfx90a",
        "AMD Instinct MI210",
        68702699520,
        "0x740f",
    )
    assert (a.kfd_node, b.kfd_node, a.pci_bus_id, b.pci_bus_id) == (2, 3, "03:00.0", "83:00.0")


def test_rocminfo_caret_colour_codes_and_driver_version() -> None:
    r = rocminfo.parse_rocminfo(_cmd("mi250x-gfx90a-rocm6.2.1", "rocminfo.txt"))
    assert r.driver_version == "6.3.6" and r.cpu_agents == 4 and len(r.gpus) == 1


def test_rocminfo_grep_filtered_names_only() -> None:
    r = rocminfo.parse_rocminfo(_cmd("mi50x4-gfx906-rocky8-rocm5.7-grep", "rocminfo.txt"))
    assert [g.arch for g in r.gpus] == ["gfx906"] * 4
    assert r.cpu_agents == 1  # the indented ISA "Name:" lines are not agents


def test_rocminfo_elided_paste_leaves_cpu_count_unknown() -> None:
    r = rocminfo.parse_rocminfo(_cmd("rx6800m-gfx1031-gfx90c-fedora-rocm6.3", "rocminfo.txt"))
    assert [g.arch for g in r.gpus] == ["gfx1031", "gfx90c"]
    assert r.cpu_agents is None
    assert r.driver_loaded is True  # "OCk module is loaded": the R was lost in the paste


def test_rocminfo_out_of_resources_hint() -> None:
    r = rocminfo.parse_rocminfo(
        "", "hsa api call failure at: x.cc:1\nCall returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: y"
    )
    (p,) = r.problems
    assert "no permission on /dev/kfd" in (p.hint or "")
    assert "usermod -aG render,video" in (p.hint or "")


def test_rocminfo_errors_read_from_stdout_too() -> None:
    err = _cmd("ryzen2400g-gtx1050ti-centos7-rocm3.8-rock-not-loaded", "rocminfo.txt.err")
    assert rocminfo.parse_rocminfo(err).problems == rocminfo.parse_rocminfo("", err).problems
    assert rocminfo.parse_rocminfo(err).driver_loaded is False


def test_agent_enumerator_skips_cpu() -> None:
    assert [g.arch for g in rocminfo.parse_agent_enumerator("gfx000\ngfx90a\ngfx942\n")] == [
        "gfx90a",
        "gfx942",
    ]


# ----------------------------------------------------------------- rocm-smi


def test_rocm_smi_three_concise_layouts() -> None:
    new = rocm_smi.parse_concise(_cmd("mi210x2-gfx90a-rocm6.3.3", "rocm-smi.txt"))
    assert [(g.ordinal, g.kfd_node, g.pci_device_id) for g in new.gpus] == [
        (0, 2, "0x740f"),
        (1, 3, "0x740f"),
    ]
    named = rocm_smi.parse_concise(_cmd("mi300x8-rocm-smi-stas00", "rocm-smi.txt"))
    assert len(named.gpus) == 8 and {g.name for g in named.gpus} == {"AMD Instinct MI300X"}
    old = rocm_smi.parse_concise(_cmd("rx6800-gfx1030-rocm5.3", "rocm-smi.txt"))
    assert [(g.ordinal, g.pci_device_id) for g in old.gpus] == [(0, None)]


def test_rocm_smi_stray_exception_line_is_a_problem_not_a_failure() -> None:
    r = rocm_smi.parse_concise(_cmd("rx6800m-gfx1031-gfx90c-fedora-rocm6.3", "rocm-smi.txt"))
    assert len(r.gpus) == 2 and "map::at" in r.problems[0].message


def test_rocm_smi_productname_with_tabs() -> None:
    r = rocm_smi.parse_productname(_cmd("mi210x2-gfx90a-rocm6.3.3-productname", "rocm-smi-productname.txt"))
    assert [(g.name, g.arch, g.pci_device_id, g.kfd_node) for g in r.gpus] == [
        ("Instinct MI210", "gfx90a", "0x740f", 2),
        ("Instinct MI210", "gfx90a", "0x740f", 3),
    ]


def test_rocm_smi_before_6_prints_the_subsystem_as_card_model() -> None:
    # ROCm 4.0 on an MI100: no name, the device id as "Card series", the subsystem as "Card model".
    r = rocm_smi.parse_productname(
        _cmd("mi100-gfx908-rocm4.0-rocm-smi-productname", "rocm-smi-productname.txt")
    )
    assert [(g.name, g.pci_device_id) for g in r.gpus] == [(None, "0x738c")]
    c = rocm_smi.parse_csv(_cmd("mi100x2-gfx908-rhel8.4-rocm-smi-csv", "rocm-smi-productname.csv"))
    assert [(g.name, g.pci_device_id) for g in c.gpus] == [("Arcturus GL-XL [AMD Instinct MI100]", None)] * 2


def test_rocm_smi_json_and_csv() -> None:
    text = (
        "WARNING: AMD GPU device(s) is/are in a low-power state. Check power control/runtime_status\n"
        '{"card0": {"Card Series": "Radeon RX 7900 XTX", "Card Model": "0x744c", "GFX Version": "gfx1100",'
        ' "VRAM Total Memory (B)": "25753026560"}, "system": {"Driver version": "6.8.5"}}'
    )
    j = rocm_smi.parse_json(text)
    assert j.driver_version == "6.8.5"
    (g,) = j.gpus
    assert (g.name, g.pci_device_id, g.arch, g.memory_bytes) == (
        "Radeon RX 7900 XTX",
        "0x744c",
        "gfx1100",
        25753026560,
    )
    c = rocm_smi.parse_csv(
        'device,Card Series,Card Model,GFX Version\ncard0,"Instinct MI210",0x740f,gfx90a\n'
    )
    assert [(g.ordinal, g.name, g.arch) for g in c.gpus] == [(0, "Instinct MI210", "gfx90a")]
    d = rocm_smi.parse_csv("system,Driver version\nsystem,6.10.5\n")
    assert d.driver_version == "6.10.5" and d.gpus == ()


# ----------------------------------------------------------------- amd-smi


def test_amd_smi_list() -> None:
    r = amd_smi.parse_list(_cmd("mi210x2-gfx90a-rocm6.3.3-productname", "amd-smi-list.txt"))
    assert [(g.ordinal, g.pci_bus_id, g.kfd_node) for g in r.gpus] == [
        (0, "0000:03:00.0", 2),
        (1, "0000:83:00.0", 3),
    ]


@pytest.mark.parametrize(
    "vram",
    ['{"size": {"value": 196592, "unit": "MB"}}', '{"size": "196592 MB"}', '{"vram_size_mb": 196592}'],
)
def test_amd_smi_static_vram_shapes(vram: str) -> None:
    body = f'{{"gpu": 0, "asic": {{"market_name": "AMD Instinct MI300X", "device_id": "0x74a1", "target_graphics_version": "gfx942"}}, "vram": {vram}}}'
    for text in (f"[{body}]", f'{{"gpu_data": [{body}]}}'):
        (g,) = amd_smi.parse_static_json(text).gpus
        assert (g.arch, g.memory_bytes, g.pci_device_id) == ("gfx942", 196592 * 1024 * 1024, "0x74a1")


def test_amd_smi_static_no_json() -> None:
    r = amd_smi.parse_static_json("ERROR: amdgpu driver not loaded\n")
    assert r.gpus == () and r.problems


def test_amd_smi_version_gives_rocm_release() -> None:
    text = "AMDSMI Tool: 24.6.3+9578815 | AMDSMI Library version: 24.6.3.0 | ROCm version: 6.2.4\n"
    assert amd_smi.parse_version(text).rocm_version == "6.2.4"


# ----------------------------------------------------------------- kfd


@pytest.mark.parametrize(
    ("value", "gfx"),
    [
        (90010, "gfx90a"),
        (110000, "gfx1100"),
        (90402, "gfx942"),
        (100300, "gfx1030"),
        (110501, "gfx1151"),
        (0, None),
    ],
)
def test_gfx_from_target_version(value: int, gfx: str | None) -> None:
    assert kfd.gfx_from_target_version(value) == gfx


def test_kfd_apu_node_is_integrated() -> None:
    apu = "cpu_cores_count 8\nsimd_count 48\ngfx_target_version 110003\nvendor_id 4098\ndevice_id 5567\nlocation_id 49920\n"
    cpu = "cpu_cores_count 8\nsimd_count 0\n"
    r = kfd.parse_kfd([kfd.KfdNode(node=0, properties=cpu), kfd.KfdNode(node=1, properties=apu)])
    (g,) = r.gpus
    assert (g.arch, g.integrated, g.pci_device_id, g.pci_bus_id) == (
        "gfx1103",
        True,
        "0x15bf",
        "0000:c3:00.0",
    )
    assert r.cpu_nodes == 2  # the APU node holds CPU cores too: HSA shows it as a CPU agent as well


# ----------------------------------------------------------------- nvidia, lspci


def test_nvidia_query_and_table_agree() -> None:
    cap = "synthetic-h100x2-nvidia-550"
    q = nvidia_smi.parse_query_csv(_cmd(cap, "nvidia-smi-query.csv"))
    t = nvidia_smi.parse_table(_cmd(cap, "nvidia-smi.txt"))
    assert (
        [g.pci_bus_id for g in q.gpus] == [g.pci_bus_id for g in t.gpus] == ["0000:18:00.0", "0000:2a:00.0"]
    )
    assert [g.compute_capability for g in q.gpus] == ["9.0", "9.0"]
    assert q.driver_version == t.driver_version == "550.54.15" and t.cuda_version == "12.4"


def test_nvidia_old_smi_without_compute_cap() -> None:
    r = nvidia_smi.parse_query_csv('Field "compute_cap" is not a valid field to query.\n')
    assert r.gpus == () and r.problems[0].severity == "info"


def test_lspci_keeps_display_devices_only() -> None:
    r = lspci.parse_lspci(_cmd("synthetic-rx7900xtx-kfd-amdsmi-rocm6.2.4", "lspci.txt"))
    (g,) = r.gpus
    assert (g.vendor, g.pci_device_id, g.pci_bus_id) == ("amd", "0x744c", "03:00.0")


# ----------------------------------------------------------------- versions, host


def test_versions() -> None:
    assert versions.parse_rocm_version_file("6.2.4-120\n") == "6.2.4"
    assert versions.version_from_folder("rocm-6.2.4") == "6.2.4"
    assert versions.version_from_folder("rocm") is None
    assert versions.parse_hipconfig_version("6.2.41134-65d174c3e") == ("6.2.41134-65d174c3e", "6.2")
    assert versions.parse_module_version("6.8.5\n") == "6.8.5"
    assert nvidia_smi.parse_driver_version("550.54.15\n") == "550.54.15"


def test_host_parsers() -> None:
    ident = host.parse_id("uid=1000(ana) gid=1000(ana) groups=1000(ana),44(video),109(render)")
    assert (ident.user, ident.uid, ident.groups, ident.gids) == (
        "ana",
        1000,
        ("ana", "video", "render"),
        (1000, 44, 109),
    )
    assert host.parse_ldd_version("ldd (Ubuntu GLIBC 2.35-0ubuntu3.8) 2.35\n") == "2.35"
    assert host.parse_ldd_version("musl libc (x86_64)\nVersion 1.2.4\n") is None
    assert host.parse_uname("Linux 6.8.0-45-generic x86_64") == ("6.8.0-45-generic", "x86_64")
    assert host.parse_system_release("Rocky Linux release 9.0 (Blue Onyx)\n")[1] == "9.0"
    assert (
        host.parse_cpuinfo("processor\t: 0\nmodel name\t: AMD EPYC 7763\nprocessor\t: 1\n").logical_cpus == 2
    )
    assert host.parse_meminfo_total("MemTotal:  1024 kB\n") == 1024 * 1024
    env: dict[str, str] = {}
    assert (
        host.detect_container(dockerenv=False, containerenv=None, cgroups=("0::/kubepods/x",), environ=env)
        == "kubernetes"
    )
    assert host.detect_container(dockerenv=False, containerenv="", cgroups=(), environ=env) == "podman"
    assert host.detect_container(dockerenv=True, containerenv=None, cgroups=(), environ=env) == "docker"
    assert host.detect_container(dockerenv=False, containerenv=None, cgroups=("0::/",), environ=env) is None


def test_record_helpers() -> None:
    assert norm_hex("0x740F") == "0x740f" and norm_hex(29711) == "0x740f" and norm_hex("nope") is None
    assert parse_gfx("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-") == "gfx90a"
    assert parse_gfx("gfx000") is None and parse_gfx("AMD EPYC") is None
    assert norm_bus_id("00000000:2A:00.0") == "0000:2a:00.0" and norm_bus_id("03:00.0") == "03:00.0"


NVIDIA_SMI_470 = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 470.57.02    Driver Version: 470.57.02    CUDA Version: 11.4     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|                               |                      |               MIG M. |
|===============================+======================+======================|
|   0  NVIDIA GeForce ...  Off  | 00000000:01:00.0  On |                  N/A |
| 30%   34C    P8    11W / 170W |    377MiB / 12045MiB |      2%      Default |
|                               |                      |                  N/A |
+-------------------------------+----------------------+----------------------+
"""


def test_nvidia_table_pre_530_layout_with_a_cut_name() -> None:
    r = nvidia_smi.parse_table(NVIDIA_SMI_470)
    (g,) = r.gpus
    assert (g.name, g.name_truncated, g.memory_bytes, g.pci_bus_id) == (
        "NVIDIA GeForce ...",
        True,
        12045 * 1024 * 1024,
        "0000:01:00.0",
    )
    assert (r.driver_version, r.cuda_version) == ("470.57.02", "11.4")
