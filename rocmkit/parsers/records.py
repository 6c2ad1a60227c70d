"""The record every GPU-listing parser returns, and small text helpers they share."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocmkit.machine import Vendor


@dataclass(frozen=True, kw_only=True)
class GpuRecord:
    """One GPU as one tool saw it. ``None`` means the tool did not show that fact."""

    source: str  # "kfd", "rocminfo", "amd-smi", "rocm-smi", "lspci", "nvidia-smi", ...
    vendor: Vendor
    ordinal: int | None = None  # the tool's own index (rocm-smi GPU[n], nvidia-smi index)
    arch: str | None = None
    name: str | None = None
    memory_bytes: int | None = None
    pci_device_id: str | None = None  # "0x740f"
    pci_vendor_id: str | None = None  # "0x1002"
    pci_bus_id: str | None = None  # "0000:03:00.0", or "03:00.0" when the tool shows no domain
    kfd_node: int | None = None
    uuid: str | None = None
    integrated: bool | None = None  # only where the tool itself says so (KFD's CPU cores)
    compute_capability: str | None = None  # NVIDIA "9.0"
    name_truncated: bool = False  # rocm-smi prints 20 characters of the name at most


# Real escape sequences and their caret-notation form pasted into bug reports ("^[[37m").
_ANSI = re.compile(r"(?:\x1b|\^\[)\[[0-9;?]*[A-Za-z]")
_HEX = re.compile(r"^(?:0x)?([0-9a-fA-F]{1,8})$")
_GFX = re.compile(r"^gfx[0-9]{1,2}[0-9a-f]{2}$")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def norm_hex(value: object, width: int = 4) -> str | None:
    """ "0x740F", "740f", 29711 -> "0x740f"; anything else -> None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return f"0x{value:0{width}x}" if 0 <= value < 16**8 else None
    if not isinstance(value, str):
        return None
    m = _HEX.match(value.strip())
    if not m:
        return None
    return f"0x{int(m.group(1), 16):0{width}x}"


def norm_gfx(value: object) -> str | None:
    """ "gfx90a" stays; "GFX90A", "gfx90a:sramecc+:xnack-" -> "gfx90a"; "gfx000" (the CPU) -> None."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower().split(":", 1)[0]
    if text.startswith("amdgcn-amd-amdhsa--"):
        text = text[len("amdgcn-amd-amdhsa--") :]
    if not _GFX.match(text) or text == "gfx000":
        return None
    return text


def count(text: str) -> int | None:
    """A decimal count or size as tools print it: ASCII digits, at most 18 of them.

    Anything else is None: ``int()`` takes other scripts' digits ("١") and raises
    past 4300 digits, and no real quantity a tool prints is that long."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def to_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if len(text) > 40:
            return None  # no tool prints such a number; int() would raise past 4300 digits
        try:
            return int(text, 16) if text.lower().startswith("0x") else int(text)
        except ValueError:
            return None
    return None


def clean_name(value: object) -> str | None:
    """A marketing name, or None for the placeholders tools print."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    if not text or text.upper() in {"N/A", "NA", "NONE", "UNKNOWN", "UNSUPPORTED", "0X0000"}:
        return None
    return text


_BDF = re.compile(
    r"^(?:(?P<dom>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})\.(?P<fn>[0-7])$"
)


def norm_bus_id(value: object) -> str | None:
    """ "00000000:18:00.0" (nvidia-smi) -> "0000:18:00.0"; "03:00.0" stays short (domain unknown)."""
    if not isinstance(value, str):
        return None
    m = _BDF.match(value.strip())
    if not m:
        return None
    tail = f"{m.group('bus')}:{m.group('dev')}.{m.group('fn')}".lower()
    dom = m.group("dom")
    if dom is None:
        return tail
    return f"{int(dom, 16):04x}:{tail}"


def bus_key(bus_id: str | None) -> str | None:
    """The part of a bus id every tool shows: "03:00.0" (domains are usually 0 and often omitted)."""
    if bus_id is None:
        return None
    return bus_id[-7:]


def csv_rows(text: str) -> list[list[str]]:
    """CSV rows, one per line; a line the csv module rejects (stray quotes, NULs) is split on commas."""
    import csv

    rows: list[list[str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            rows.extend(csv.reader([line]))
        except csv.Error:
            rows.append(line.split(","))
    return rows
