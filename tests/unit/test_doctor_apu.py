"""env.apu_memory on real captures of APUs (Strix Halo from public reports, a Radeon 780M) and dGPU nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.detect import load_machine
from rocmkit.doctor.apu import kernel_verdict, load_apu
from rocmkit.doctor.checks.apu import apu_memory
from rocmkit.doctor.registry import CheckContext
from rocmkit.doctor.result import CheckResult, Status
from rocmkit.parsers.host import gpu_module_options, parse_pci_slot

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"
HALO_OLD_KERNEL = "strixhalo-gfx1151-ubuntu-oem6.14-gtt-size-ignored"  # ROCm/legacy-rocm-build#5595
HALO_120G = "strixhalo-gfx1151-ttm-pages-limit-gtt120g"  # ROCm/legacy-rocm-build#5853


def _check(capture: str | Path, **options: object) -> CheckResult:
    path = capture if isinstance(capture, Path) else CAPTURES / capture
    r = apu_memory(CheckContext(machine=load_machine(path), options=dict(options)))
    assert isinstance(r, CheckResult)
    return r


def test_an_old_oem_kernel_and_a_misspelt_setting_on_strix_halo() -> None:
    r = _check(HALO_OLD_KERNEL)
    assert r.status is Status.FAIL
    assert "kernel 6.14.0-1014-oem is older than 6.14.0-1018, the minimum AMD documents for gfx1151" in r.message
    assert "amdgpu.gtt_size=122880, which is not a parameter: ignored" in r.message
    assert r.remedy is not None and "6.14.0-1018" in r.remedy and "ttm.pages_limit" in r.remedy
    assert "rdna3-5" in r.details["gpus"][0]["kernel_min"]["source"]
    assert "dmesg: amdgpu says gttsize is deprecated, use ttm.pages_limit" in r.details["settings"]


def test_a_raised_ttm_limit_gives_120_gib() -> None:
    r = _check(HALO_120G)
    assert r.status is Status.PASS, r.message
    (gpu,) = r.details["gpus"]
    assert gpu["gtt_bytes"] == 122880 * 2**20 and gpu["gtt_from"] == "dmesg"
    assert "options ttm pages_limit=31457280" in r.message


def test_a_gtt_limit_below_need_warns_with_the_settings_that_raise_it() -> None:
    r = _check(HALO_120G, apu_min_gpu_bytes=140e9)
    assert r.status is Status.WARN
    assert "can use 120.0 GiB, less than the 130.4 GiB asked for" in r.message
    assert r.remedy is not None and "amd-ttm --set" in r.remedy and "pages_limit" in r.remedy


def test_the_780m_says_the_carve_out_is_not_the_limit() -> None:
    r = _check("780m-gfx1103-rocm5.7")
    assert r.status is Status.PASS
    assert "usable memory is the GTT limit, not recorded here" in r.message and "0.5 GiB carve-out" in r.message
    assert r.details["gpus"][0].get("kernel_min") is None  # AMD documents no minimum for gfx1103


@pytest.mark.parametrize("capture", ["mi300x8-rocm-smi-stas00", "rx6800m-gfx1031-gfx90c-fedora-rocm6.3",
                                     "synthetic-h100x2-nvidia-550"])
def test_dgpu_nodes_are_unaffected(capture: str) -> None:
    assert _check(capture).status is Status.SKIP


def test_sysfs_gtt_and_ttm_limit_are_read_from_a_capture(tmp_path: Path) -> None:
    # The files a live APU has (a synthetic capture: the layout of root/, the numbers of HALO_120G).
    cap = tmp_path / "apu"
    dev = cap / "root" / "sys" / "class" / "drm" / "renderD128" / "device"
    dev.mkdir(parents=True)
    (dev / "mem_info_gtt_total").write_text(f"{120 * 2**30}\n")
    (dev / "mem_info_vram_total").write_text(f"{512 * 2**20}\n")
    (dev / "uevent").write_text("DRIVER=amdgpu\nPCI_SLOT_NAME=0000:C5:00.0\n")
    ttm = cap / "root" / "sys" / "module" / "ttm" / "parameters"
    ttm.mkdir(parents=True)
    (ttm / "pages_limit").write_text("31457280\n")
    (cap / "root" / "proc").mkdir()
    (cap / "root" / "proc" / "meminfo").write_text("MemTotal:       131072000 kB\n")
    (cap / "env.json").write_text('{"ROCMKIT_GFX": "gfx1151"}')
    m = load_machine(cap)
    assert m.host.ttm_pages_limit == 31457280
    (drm,) = m.host.drm_memory
    assert (drm.pci_bus_id, drm.gtt_bytes, drm.vram_bytes) == ("0000:c5:00.0", 120 * 2**30, 512 * 2**20)
    r = _check(cap)
    assert r.status is Status.PASS
    assert "usable 120.0 GiB (GTT 120.0 GiB from sysfs mem_info_gtt_total; carve-out 0.5 GiB" in r.message


@pytest.mark.parametrize(
    ("kernel", "os_id", "ok"),
    [
        ("6.14.0-1018-oem", None, True),
        ("6.14.0-1014-oem", "ubuntu", False),
        ("6.17.0-1005-oem", "ubuntu", True),
        ("6.17.0-19-generic", "ubuntu", True),
        ("6.17.0-14-generic", "ubuntu", False),
        ("6.18.3-arch1-1", "arch", False),
        ("6.18.4-200.fc43.x86_64", "fedora", True),
        ("7.0.1", "debian", True),
    ],
)
def test_kernel_minimums_per_flavour(kernel: str, os_id: str | None, ok: bool) -> None:
    verdict, row = kernel_verdict(load_apu(), "gfx1151", kernel, os_id)
    assert verdict is ok and row is not None
    assert kernel_verdict(load_apu(), "gfx1150", kernel, os_id) == (None, None)


def test_module_options_and_uevent_parsing() -> None:
    text = "# comment\noptions ttm  pages_limit=26214400 # 100 GB\nblacklist radeon\noptions amdgpu gttsize=110000\n"
    assert gpu_module_options(text) == ("options ttm pages_limit=26214400", "options amdgpu gttsize=110000")
    assert parse_pci_slot("PCI_SLOT_NAME=0000:03:00.0\n") == "0000:03:00.0"


def test_a_snapshot_keeps_the_gpu_memory_facts_and_only_the_gpu_module_options(tmp_path: Path) -> None:
    from rocmkit.sources import CaptureSource, snapshot

    src = tmp_path / "src"
    dev = src / "root" / "sys" / "class" / "drm" / "renderD128" / "device"
    dev.mkdir(parents=True)
    (dev / "mem_info_gtt_total").write_text("128849018880\n")
    conf = src / "root" / "etc" / "modprobe.d"
    conf.mkdir(parents=True)
    (conf / "ttm.conf").write_text("# set by amd-ttm\noptions ttm pages_limit=26214400\nblacklist nouveau\n")
    (conf / "other.conf").write_text("blacklist pcspkr\n")
    (src / "cmd").mkdir()
    written = snapshot(CaptureSource(src), tmp_path / "out")
    assert "root/sys/class/drm/renderD128/device/mem_info_gtt_total" in written
    assert (tmp_path / "out" / "root" / "etc" / "modprobe.d" / "ttm.conf").read_text() == (
        "options ttm pages_limit=26214400\n"
    )
    assert not (tmp_path / "out" / "root" / "etc" / "modprobe.d" / "other.conf").exists()
