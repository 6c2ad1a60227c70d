"""``lspci -nn``: display-class PCI devices of AMD and NVIDIA, with vendor and device ids.

lspci sees a GPU even when no driver is loaded, so it is the fallback that
tells "no GPU" from "a GPU the driver does not drive".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocmkit.arch import Vendor
from rocmkit.machine import Problem
from rocmkit.parsers.records import GpuRecord, norm_bus_id, strip_ansi

SOURCE = "lspci"

# VGA, XGA, 3D controller, other display controller, processing accelerator.
_CLASSES = {"0300", "0301", "0302", "0380", "1200"}
_VENDORS: dict[str, Vendor] = {"1002": "amd", "10de": "nvidia"}
_LINE = re.compile(
    r"^(?P<bus>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+"
    r"(?P<cls_name>[^\[]*?)\s*\[(?P<cls>[0-9a-fA-F]{4})\]:\s*"
    r"(?P<desc>.*?)\s*\[(?P<ven>[0-9a-fA-F]{4}):(?P<dev>[0-9a-fA-F]{4})\]"
)
_VENDOR_PREFIX = re.compile(r"^(Advanced Micro Devices, Inc\. \[AMD/ATI\]|NVIDIA Corporation)\s*")


@dataclass(frozen=True, kw_only=True)
class LspciResult:
    gpus: tuple[GpuRecord, ...] = ()
    problems: tuple[Problem, ...] = ()


def parse_lspci(text: str) -> LspciResult:
    gpus = []
    for line in strip_ansi(text).splitlines():
        m = _LINE.match(line.strip())
        if not m or m.group("cls") not in _CLASSES:
            continue
        vendor = _VENDORS.get(m.group("ven").lower())
        if vendor is None:
            continue
        desc = _VENDOR_PREFIX.sub("", m.group("desc")).strip()
        gpus.append(
            GpuRecord(
                source=SOURCE,
                vendor=vendor,
                # lspci names chips by code name ("Navi 31 [Radeon RX 7900 XT/7900 XTX]"):
                # kept as the last resort for the name.
                name=desc or None,
                pci_bus_id=norm_bus_id(m.group("bus")),
                pci_vendor_id=f"0x{m.group('ven').lower()}",
                pci_device_id=f"0x{m.group('dev').lower()}",
            )
        )
    return LspciResult(gpus=tuple(gpus))


# An SR-IOV virtual function (#23): lspci's "Virtual Function" (pci.ids names VFs so),
# AMD's "MxGPU" brand ("Navi 21 [Radeon Pro V620 MxGPU]", ROCm legacy#2995; "Radeon
# Instinct MI25 MxGPU", legacy#1638) and the " VF" suffix tools print ("AMD Instinct
# MI300X VF", AlphaMine-Tech/alpha-miner#4).
_VIRTUAL = re.compile(r"Virtual Function|\bMxGPU\b|\bVF\b")


def is_virtual_function(name: str | None) -> bool:
    """Whether a GPU name or lspci description marks an SR-IOV virtual function."""
    return bool(name) and _VIRTUAL.search(name or "") is not None
