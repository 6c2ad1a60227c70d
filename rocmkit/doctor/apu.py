"""Integrated AMD GPUs (APUs): the memory the GPU can use, the kernel AMD requires, the settings.

On an APU the GPU's memory is system RAM mapped through GTT, limited by TTM's page limit;
the BIOS carve-out ("VRAM") is only a small reserved part, and AMD recommends keeping it small
and raising the TTM limit (``matrices/apu.toml``'s source). The facts come from detection
(sysfs, dmesg, the kernel command line and /etc/modprobe.d), so this works on a capture.
Pure: no I/O beyond reading the data file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rocmkit.errors import DataError
from rocmkit.machine import Gpu, Machine
from rocmkit.matrix.fields import FIX, Row, check_keys, read_sources, read_toml, rows
from rocmkit.parsers import dmesg
from rocmkit.util.paths import matrices_dir

FILE = "apu.toml"
FLAVOURS = ("ubuntu-oem", "ubuntu-hwe", "other")
GIB = 1024**3
MIB = 1024**2


@dataclass(frozen=True, kw_only=True)
class KernelMin:
    gfx: tuple[str, ...]
    flavour: str
    version: str
    sources: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ApuData:
    kernel_mins: tuple[KernelMin, ...]
    page_bytes: int
    default_gtt_fraction: float
    sources: dict[str, str]


_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:-(\d+))?")


def kernel_tuple(text: str) -> tuple[int, int, int, int] | None:
    """``6.14.0-1014-oem`` -> (6, 14, 0, 1014); ``6.18.4`` -> (6, 18, 4, 0)."""
    m = _VERSION.match(text.strip())
    if m is None:
        return None
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), int(m.group(4) or 0))


def parse_apu(path: Path) -> ApuData:
    doc = read_toml(path)
    file = path.name
    check_keys(doc, ("schema", "sources", "kernel_min", "limits"), file=file, where="top level")
    src = read_sources(doc, file=file)
    mins: list[KernelMin] = []
    for i, data in enumerate(rows(doc, "kernel_min", file=file)):
        row = Row(data, file=file, where=f"[[kernel_min]] #{i + 1}", keys=("gfx", "flavour", "version"), sources=src)
        flavour = row.string("flavour")
        if flavour not in FLAVOURS:
            raise row.error(f"flavour {flavour!r} is not one of {', '.join(FLAVOURS)}")
        version = row.string("version")
        if kernel_tuple(version) is None:
            raise row.error(f"version {version!r} is not a kernel version like 6.14.0-1018 or 6.18.4")
        mins.append(KernelMin(gfx=row.strings("gfx", required=True), flavour=flavour, version=version,
                              sources=row.source_keys()))
    limits = Row(doc.get("limits") or {}, file=file, where="[limits]", keys=("page_bytes", "default_gtt_fraction"),
                 sources=src)
    limits.source_keys()
    page = limits.data.get("page_bytes")
    frac = limits.data.get("default_gtt_fraction")
    if not isinstance(page, int) or isinstance(page, bool) or page <= 0:
        raise limits.error(f"page_bytes must be a positive whole number, got {page!r}")
    if not isinstance(frac, float) or not 0 < frac <= 1:
        raise limits.error(f"default_gtt_fraction must be a fraction (0 to 1], got {frac!r}")
    if not mins:
        raise DataError(f"{file}: no [[kernel_min]] rows", FIX)
    return ApuData(kernel_mins=tuple(mins), page_bytes=page, default_gtt_fraction=frac, sources=src)


def load_apu(folder: Path | None = None) -> ApuData:
    return _cached(str(((folder or matrices_dir()) / FILE).resolve()))


@lru_cache(maxsize=4)
def _cached(path: str) -> ApuData:
    return parse_apu(Path(path))


def flavour_of(kernel: str, os_id: str | None) -> str:
    release = kernel.strip()
    if release.endswith("-oem"):
        return "ubuntu-oem"
    if os_id == "ubuntu" and release.endswith("-generic"):
        return "ubuntu-hwe"
    return "other"


def kernel_verdict(data: ApuData, gfx: str, kernel: str | None, os_id: str | None) -> tuple[bool | None, KernelMin | None]:
    """(kernel meets AMD's minimum for ``gfx``, the row judged by); (None, None) where AMD
    documents none for the arch or the kernel is unknown."""
    rows_for = [k for k in data.kernel_mins if gfx in k.gfx]
    if not rows_for or not kernel:
        return None, None
    flavour = flavour_of(kernel, os_id)
    row = next((k for k in rows_for if k.flavour == flavour), None) or next(
        (k for k in rows_for if k.flavour == "other"), None
    )
    have, need = kernel_tuple(kernel), (kernel_tuple(row.version) if row else None)
    if row is None or have is None or need is None:
        return None, row
    if row.flavour == "other":
        return have[:3] >= need[:3], row
    return have >= need, row


_SIZE_M = re.compile(r"(\d+)M of (VRAM|GTT) memory ready")


def _dmesg_sizes(m: Machine, gpu: Gpu, only_amd: bool) -> tuple[int | None, int | None]:
    """(VRAM, GTT) bytes from amdgpu's 'NNNM of ... memory ready' lines for this GPU."""
    vram = gtt = None
    for k in m.kernel_messages:
        if k.kind not in (dmesg.VRAM_READY, dmesg.GTT_READY):
            continue
        mine = (k.device and gpu.pci_bus_id and k.device.lower().endswith(gpu.pci_bus_id.lower()[-7:])) or (
            only_amd and (k.device is None or not gpu.pci_bus_id)
        )
        found = _SIZE_M.search(k.text)
        if not mine or found is None:
            continue
        size = int(found.group(1)) * MIB
        if found.group(2) == "VRAM":
            vram = size
        else:
            gtt = size
    return vram, gtt


@dataclass(frozen=True, kw_only=True)
class Memory:
    carveout: int | None
    carveout_from: str
    gtt: int | None
    gtt_from: str
    ram: int | None

    @property
    def usable(self) -> int | None:
        """The larger of GTT and the carve-out (amdgpu backs VRAM allocations with GTT when GTT is
        larger); unknown while GTT is: the carve-out alone would understate it."""
        if self.gtt is None:
            return None
        return max(self.gtt, self.carveout or 0)


def memory(m: Machine, gpu: Gpu, data: ApuData) -> Memory:
    only = len(m.amd_gpus) == 1
    drm = next((d for d in m.host.drm_memory
                if d.pci_bus_id and gpu.pci_bus_id and d.pci_bus_id.lower() == gpu.pci_bus_id.lower()), None)
    if drm is None and only and len(m.host.drm_memory) == 1:
        drm = m.host.drm_memory[0]
    d_vram, d_gtt = _dmesg_sizes(m, gpu, only)
    carve, carve_from = None, "unknown"
    for value, where in ((drm.vram_bytes if drm else None, "sysfs mem_info_vram_total"),
                         (gpu.memory_bytes, "the GPU's memory pool (KFD/rocminfo)"), (d_vram, "dmesg")):
        if value:
            carve, carve_from = value, where
            break
    gtt, gtt_from = None, "unknown"
    ttm = m.host.ttm_pages_limit * data.page_bytes if m.host.ttm_pages_limit and m.host.ttm_pages_limit > 0 else None
    for value, where in ((drm.gtt_bytes if drm else None, "sysfs mem_info_gtt_total"), (d_gtt, "dmesg"),
                         (ttm, "ttm.pages_limit")):
        if value:
            gtt, gtt_from = value, where
            break
    if gtt is None and m.host.memory_bytes:
        gtt, gtt_from = int(m.host.memory_bytes * data.default_gtt_fraction), "estimated: the default, about half the RAM"
    return Memory(carveout=carve, carveout_from=carve_from, gtt=gtt, gtt_from=gtt_from, ram=m.host.memory_bytes)


def setting_findings(m: Machine) -> tuple[list[str], list[str]]:
    """(problems: settings that have no effect; notes: what is set) from the command line,
    /etc/modprobe.d and dmesg."""
    problems: list[str] = []
    notes: list[str] = []
    for token in (m.host.kernel_cmdline or "").split():
        key = token.split("=", 1)[0]
        if key == "ttm.pages_limit":
            notes.append(f"kernel command line sets {token}")
        elif key == "amdgpu.gttsize":
            notes.append(f"kernel command line sets {token} (deprecated: use ttm.pages_limit)")
        elif key.startswith(("amdgpu.", "ttm.")) and "gtt" in key.lower() and key != "amdgpu.gttsize":
            problems.append(f"kernel command line sets {token}, which is not a parameter: ignored")
    for line in m.host.modprobe_options:
        if "pages_limit=" in line or "gttsize=" in line:
            notes.append(f"/etc/modprobe.d: {line}" + (" (deprecated: use ttm pages_limit)" if "gttsize=" in line else ""))
    for k in m.kernel_messages:
        if k.kind == dmesg.UNKNOWN_PARAMETER:
            problems.append(f"dmesg: `{k.text}`")
        elif k.kind == dmesg.GTTSIZE_DEPRECATED:
            notes.append("dmesg: amdgpu says gttsize is deprecated, use ttm.pages_limit")
    if m.host.ttm_pages_limit and m.host.ttm_pages_limit > 0:
        notes.append(f"ttm pages_limit is {m.host.ttm_pages_limit}")
    return list(dict.fromkeys(problems)), list(dict.fromkeys(notes))
