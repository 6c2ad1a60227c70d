"""``amd-smi``: ``list`` (text), ``static --json`` (three JSON shapes across ROCm 6.0-7.x) and ``version``."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from rocmkit.arch import parse_gfx
from rocmkit.machine import Problem
from rocmkit.parsers.records import (
    GpuRecord,
    clean_name,
    count,
    norm_bus_id,
    norm_hex,
    strip_ansi,
    to_int,
)
from rocmkit.util.safeload import tool_output_decoder

SOURCE = "amd-smi"


@dataclass(frozen=True, kw_only=True)
class AmdSmiResult:
    gpus: tuple[GpuRecord, ...] = ()
    driver_version: str | None = None
    rocm_version: str | None = None  # `amd-smi version` prints the ROCm release it belongs to
    problems: tuple[Problem, ...] = ()


_LIST_GPU = re.compile(r"^\s*GPU:\s*(\d+)\s*$")
_LIST_KV = re.compile(r"^\s+([A-Z_]+):\s*(.*?)\s*$")


def _uuid(value: object) -> str | None:
    text = clean_name(value)
    return text if text and not text.upper().endswith("-XX") else None


def parse_list(text: str) -> AmdSmiResult:
    """``amd-smi list``: GPU n / BDF / UUID / KFD_ID / NODE_ID / PARTITION_ID blocks."""
    blocks: list[tuple[int | None, dict[str, str]]] = []
    for line in strip_ansi(text).splitlines():
        m = _LIST_GPU.match(line)
        if m:
            # A garbled ordinal still opens a block (its lines must not join the previous GPU's).
            blocks.append((count(m.group(1)), {}))
            continue
        kv = _LIST_KV.match(line)
        if kv and blocks:
            blocks[-1][1].setdefault(kv.group(1), kv.group(2))
    gpus = tuple(
        GpuRecord(
            source=SOURCE,
            vendor="amd",
            ordinal=idx,
            pci_bus_id=norm_bus_id(v.get("BDF")),
            uuid=_uuid(v.get("UUID")),
            kfd_node=to_int(v.get("NODE_ID")),
            pci_vendor_id="0x1002",
        )
        for idx, v in blocks
    )
    return AmdSmiResult(gpus=gpus)


_UNITS = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "KIB": 1024, "MIB": 1024**2, "GIB": 1024**3}


# 1 EiB: far above any GPU's memory, far below float overflow.
_MAX_BYTES = 2**60


def _size_bytes(value: object, default_unit: str = "MB") -> int | None:
    """amd-smi prints VRAM as 196592, "196592 MB" or {"value": 196592, "unit": "MB"}."""
    if isinstance(value, Mapping):
        return _size_bytes(value.get("value"), str(value.get("unit") or default_unit))
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        factor = _UNITS.get(default_unit.strip().upper())
        size = value * factor if factor and value > 0 else None
        # A size past any real memory (or "1e400" read as inf) is garbage, not bytes.
        return int(size) if size is not None and math.isfinite(size) and size < _MAX_BYTES else None
    if isinstance(value, str):
        m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$", value)
        if m:
            return _size_bytes(float(m.group(1)), m.group(2) or default_unit)
    return None


def _gpu_entries(data: object) -> list[Mapping[str, object]]:
    if isinstance(data, Mapping):
        inner = data.get("gpu_data")
        data = inner if isinstance(inner, list) else [data]
    if not isinstance(data, list):
        return []
    return [d for d in data if isinstance(d, Mapping)]


def _section(entry: Mapping[str, object], *names: str) -> Mapping[str, object]:
    for name in names:
        value = entry.get(name)
        if isinstance(value, Mapping):
            return value
    return {}


def parse_static_json(text: str) -> AmdSmiResult:
    """``amd-smi static --json``: a list of GPUs (6.0-6.3) or ``{"gpu_data": [...]}`` (6.4+)."""
    clean = strip_ansi(text)
    data = _first_json(clean)
    if data is None:
        return AmdSmiResult(
            problems=(
                Problem(
                    source=SOURCE,
                    message="amd-smi static --json printed no JSON",
                    hint="run `amd-smi static --json` yourself; an old amd-smi may not support --json",
                    severity="info",
                ),
            )
        )
    gpus = []
    drivers = set()
    for pos, entry in enumerate(_gpu_entries(data)):
        asic = _section(entry, "asic")
        bus = _section(entry, "bus")
        vram = _section(entry, "vram")
        driver = _section(entry, "driver")
        board = _section(entry, "board")
        size = None
        for key in ("size", "vram_size", "vram_size_mb"):
            if key in vram:
                size = _size_bytes(vram[key])
                break
        bdf = bus.get("bdf") or asic.get("pci_bdf") or entry.get("bdf")
        name = clean_name(asic.get("market_name")) or clean_name(board.get("product_name"))
        ver = driver.get("version") or driver.get("driver_version")
        if isinstance(ver, str) and clean_name(ver):
            drivers.add(ver.strip())
        ordinal = to_int(entry.get("gpu"))
        gpus.append(
            GpuRecord(
                source=SOURCE,
                vendor="amd",
                ordinal=ordinal if ordinal is not None else pos,
                arch=parse_gfx(asic.get("target_graphics_version")),
                name=name,
                memory_bytes=size,
                pci_device_id=norm_hex(asic.get("device_id")),
                pci_vendor_id=norm_hex(asic.get("vendor_id")) or "0x1002",
                pci_bus_id=norm_bus_id(bdf) if isinstance(bdf, str) else None,
                uuid=_uuid(entry.get("uuid") or asic.get("uuid")),
            )
        )
    return AmdSmiResult(gpus=tuple(gpus), driver_version=drivers.pop() if len(drivers) == 1 else None)


_VERSION = re.compile(r"ROCm version:\s*(?P<v>\d+\.\d+(?:\.\d+)?)", re.I)


def parse_version(text: str) -> AmdSmiResult:
    """``amd-smi version``: "AMDSMI Tool: 24.6.3+9578815 | AMDSMI Library version: 24.6.3.0 | ROCm version: 6.2.4"."""
    m = _VERSION.search(strip_ansi(text))
    return AmdSmiResult(rocm_version=m.group("v") if m else None)


# Warnings before the JSON hold a few brackets at most; give up on text full of them.
_MAX_ATTEMPTS = 20


def _first_json(text: str) -> object:
    decoder = tool_output_decoder()
    attempts = 0
    for opener in ("[", "{"):
        start = text.find(opener)
        while start != -1:
            try:
                obj, _ = decoder.raw_decode(text, start)
            except RecursionError:
                return None  # absurdly nested: not a tool's output
            except json.JSONDecodeError:
                attempts += 1
                if attempts > _MAX_ATTEMPTS:
                    return None
                start = text.find(opener, start + 1)
                continue
            if isinstance(obj, list | dict) and obj:
                return obj
            start = text.find(opener, start + 1)
    return None
