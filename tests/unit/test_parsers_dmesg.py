"""dmesg and libdrm parsers on the text public bug reports quote (docs/failure-modes.md #3, #4, #22)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocmkit.parsers import libdrm
from rocmkit.parsers.dmesg import KFD_ASIC, PCIE_ATOMICS, VRAM_READY, parse_dmesg, read_denied
from rocmkit.parsers.lspci import is_virtual_function, parse_lspci

# ROCm/rocminfo#27 (`sudo dmesg | grep -e "amdgpu\|kfd"`, Debian Buster, Polaris 12).
ROCMINFO_27 = """\
[    2.712712] [drm] amdgpu kernel modesetting enabled.
[    2.720894] kfd kfd: Initialized module
[    2.721238] amdgpu 0000:02:00.0: kfd not supported on this ASIC
[    2.762143] amdgpu 0000:02:00.0: firmware: direct-loading firmware amdgpu/polaris12_mc.bin
[    2.762357] [drm] amdgpu: 2048M of VRAM memory ready
"""
# ROCm/legacy-rocm-build#364 (`dmesg | grep kfd`, RX 570 in an H270 PCH slot).
LEGACY_364 = """\
[    0.783518] kfd kfd: Initialized module
[    1.576913] kfd kfd: Allocated 3969056 bytes on gart
[    1.577002] kfd kfd: added device 1002:67df
[    3.394728] kfd kfd: skipped device 1002:67df, PCI rejects atomics
"""
# Newer kernels put "amdgpu: " after the device (legacy#1214, #827; #827 has trailing text).
LEGACY_1214 = "[    7.026427] kfd kfd: amdgpu: skipped device 1002:67df, PCI rejects atomics\n"
LEGACY_827 = "[ 9.298192] kfd kfd: amdgpu: skipped device 1002:699f, PCI rejects atomics 730<0\n"
# legacy#2232 (Pitcairn, GCN 1) and legacy#1318 (Navi 14 on an old DKMS).
LEGACY_2232 = "[    3.548555] kfd kfd: amdgpu: PITCAIRN  not supported in kfd\n"
LEGACY_1318 = (
    "[    2.244241] kfd kfd: DID 7340 is missing in supported_devices\n"
    "[    2.244243] kfd kfd: kgd2kfd_probe failed\n"
)


def test_kfd_not_supported_on_this_asic() -> None:
    msg, vram = parse_dmesg(ROCMINFO_27).messages
    assert vram.kind == VRAM_READY and vram.text == "[drm] amdgpu: 2048M of VRAM memory ready"
    assert msg.kind == KFD_ASIC
    assert msg.device == "0000:02:00.0"
    assert msg.text == "amdgpu 0000:02:00.0: kfd not supported on this ASIC"


def test_pci_rejects_atomics_in_both_kernel_forms() -> None:
    (msg,) = parse_dmesg(LEGACY_364).messages
    assert (msg.kind, msg.device) == (PCIE_ATOMICS, "1002:67df")
    assert msg.text == "kfd kfd: skipped device 1002:67df, PCI rejects atomics"
    assert [m.device for m in parse_dmesg(LEGACY_1214 + LEGACY_827).messages] == ["1002:67df", "1002:699f"]


def test_other_kfd_refusals_name_the_asic_or_device_id() -> None:
    assert [(m.kind, m.device) for m in parse_dmesg(LEGACY_2232 + LEGACY_1318).messages] == [
        (KFD_ASIC, "PITCAIRN"),
        (KFD_ASIC, "1002:7340"),
    ]


def test_repeats_are_reported_once_and_syslog_prefixes_dropped() -> None:
    # journalctl -k / `dmesg -r` style: "<6>" level prefix, no timestamp (synthetic sample).
    text = LEGACY_364 + "<6>kfd kfd: skipped device 1002:67df, PCI rejects atomics\n" + LEGACY_364
    assert len(parse_dmesg(text).messages) == 1


def test_healthy_log_has_no_findings() -> None:
    # Synthetic: the usual boot lines of a working RX 7900 XTX.
    healthy = (
        "[    3.1] kfd kfd: amdgpu: added device 1002:744c\n"
        "[    3.2] [drm] Initialized amdgpu 3.57.0 20150101 for 0000:03:00.0 on minor 1\n"
    )
    assert parse_dmesg(healthy).messages == ()
    assert parse_dmesg("").messages == ()


def test_read_denied() -> None:
    assert read_denied("dmesg: read kernel buffer failed: Operation not permitted\n")
    assert not read_denied("")


@given(st.text())
def test_parse_dmesg_never_raises(text: str) -> None:
    assert isinstance(parse_dmesg(text).messages, tuple)
    libdrm.missing_amdgpu_ids(text)
    is_virtual_function(text)


def test_missing_amdgpu_ids() -> None:
    # pytorch#132987 / mudler/LocalAI#10624 (ROCm images) and mmtrt/cncra2yr-snap#32 (distro path).
    assert (
        libdrm.missing_amdgpu_ids("/opt/amdgpu/share/libdrm/amdgpu.ids: No such file or directory\n")
        == "/opt/amdgpu/share/libdrm/amdgpu.ids"
    )
    assert libdrm.missing_amdgpu_ids("/usr/share/libdrm/amdgpu.ids: No such file or directory") == (
        "/usr/share/libdrm/amdgpu.ids"
    )
    assert libdrm.missing_amdgpu_ids("all good") is None


def test_virtual_function_names() -> None:
    # ROCm legacy#2995 (Azure V620), AlphaMine-Tech/alpha-miner#4 (MI300X VF).
    assert is_virtual_function("Navi 21 [Radeon Pro V620 MxGPU]")
    assert is_virtual_function("AMD Instinct MI300X VF")
    assert is_virtual_function("Aldebaran/MI200 Virtual Function")  # synthetic, pci.ids style
    assert not is_virtual_function("Navi 31 [Radeon RX 7900 XT/7900 XTX]")
    assert not is_virtual_function("AMD Radeon VII")
    assert not is_virtual_function(None)
    # The lspci line from legacy#2995, in `lspci -nn` form (ids added: synthetic).
    line = (
        "0002:00:00.0 Display controller [0380]: Advanced Micro Devices, Inc. [AMD/ATI] "
        "Navi 21 [Radeon Pro V620 MxGPU] [1002:73ae]\n"
    )
    (gpu,) = parse_lspci(line).gpus
    assert is_virtual_function(gpu.name)


def test_snapshot_keeps_only_the_gpu_lines_of_the_kernel_log() -> None:
    from rocmkit.parsers.dmesg import parse_dmesg
    from rocmkit.sources import gpu_kernel_lines

    log = (
        "[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-010)\n"
        "[    2.101000] e1000e 0000:00:1f.6 eth0: (PCI Express:2.5GT/s:Width x1) 3c:ec:ef:12:34:56\n"
        "[    3.204417] kfd kfd: amdgpu: skipped device 1002:67df, PCI rejects atomics 730<0\n"
        "[    3.300000] EXT4-fs (nvme0n1p2): mounted filesystem 1b2c3d4e-aaaa ro\n"
        "[    3.400000] [drm] amdgpu kernel modesetting enabled.\n"
    )
    kept = gpu_kernel_lines(log)
    assert "3c:ec:ef" not in kept and "EXT4-fs" not in kept and "Linux version" not in kept
    assert "PCI rejects atomics" in kept and "[drm] amdgpu" in kept
    # Detection reads the same findings from the kept lines as from the whole log.
    assert parse_dmesg(kept) == parse_dmesg(log)


def test_each_pattern_is_looked_for_only_by_a_literal_it_contains() -> None:
    # parse_dmesg skips a pattern on a line without its literal: a literal that is not a plain
    # part of the pattern would silently drop the lines the pattern is there to find.
    from rocmkit.parsers.dmesg import _PATTERNS

    for _kind, needle, pattern in _PATTERNS:
        assert needle and needle in pattern.pattern, (needle, pattern.pattern)
