"""``rocm-smi``: the concise table (three layouts across ROCm 5.x-6.x), ``--showproductname``,
``--csv`` and ``--json``.

rocm-smi reads sysfs, so it still lists GPUs when /dev/kfd cannot be opened;
that makes it the fallback when rocminfo fails. Its concise table shows no gfx
target, and the 6.0/6.1 layout cuts names to 20 characters.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from rocmkit.arch import parse_gfx
from rocmkit.machine import Problem
from rocmkit.parsers.records import (
    GpuRecord,
    clean_name,
    count,
    csv_rows,
    norm_bus_id,
    norm_hex,
    strip_ansi,
    to_int,
)
from rocmkit.util.safeload import tool_output_decoder

SOURCE = "rocm-smi"


@dataclass(frozen=True, kw_only=True)
class RocmSmiResult:
    gpus: tuple[GpuRecord, ...] = ()
    driver_version: str | None = None
    problems: tuple[Problem, ...] = ()


# 6.2+: "0       2     0x740f,   22303  42.0°C ..."  (Device, Node, DID, GUID)
_ROW_NODE = re.compile(r"^(?P<idx>\d+)\s+(?P<node>\d+)\s+(?P<did>0x[0-9a-fA-F]{1,4}),\s*(?P<guid>\d+)?")
# 6.0/6.1: "0       [0x74a1 : 0x00]       45.0°C ..." with the name on the next line
_ROW_MODEL = re.compile(r"^(?P<idx>\d+)\s+\[(?P<did>0x[0-9a-fA-F]{1,4})\s*:\s*0x[0-9a-fA-F]+\]")
# 5.x: "0    41.0c  5.0W ..." (index only)
_ROW_PLAIN = re.compile(r"^(?P<idx>\d+)\s+\S")
_PRODUCT = re.compile(r"^GPU\[(?P<idx>\d+)\]\s*:\s*(?P<key>[^:]+?)\s*:\s*(?P<value>.*)$")


def _problems_from_text(text: str) -> list[Problem]:
    problems = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith(("Exception caught", "ERROR:", "WARNING:")) or "Permission denied" in s:
            problems.append(Problem(source=SOURCE, message=f"rocm-smi printed: {s[:200]}", severity="info"))
    return problems


def parse_concise(text: str) -> RocmSmiResult:
    """The table plain ``rocm-smi`` prints."""
    text = strip_ansi(text)
    lines = text.splitlines()
    gpus: list[GpuRecord] = []
    in_table = False
    named_layout = False
    pending: dict[str, object] | None = None
    rows: list[dict[str, object]] = []
    for line in lines:
        stripped = line.strip()
        if "Concise Info" in stripped:
            in_table = True
            continue
        if not in_table:
            continue
        if "End of ROCm SMI Log" in stripped:
            break
        if stripped.startswith("Device") or stripped.startswith("GPU ") or stripped.startswith("("):
            continue
        if "Name (20 chars)" in stripped:
            named_layout = True
            continue
        if not stripped or set(stripped) <= {"="}:
            continue
        m = _ROW_NODE.match(stripped) or _ROW_MODEL.match(stripped) or _ROW_PLAIN.match(stripped)
        if m:
            pending = m.groupdict()
            rows.append(pending)
            continue
        if named_layout and pending is not None and line[:1].isspace() and "name" not in pending:
            pending["name"] = stripped
    for row in rows:
        name = clean_name(row.get("name"))
        gpus.append(
            GpuRecord(
                source=SOURCE,
                vendor="amd",
                ordinal=to_int(row.get("idx")),
                pci_device_id=norm_hex(row.get("did")),
                kfd_node=to_int(row.get("node")),
                name=name,
                # The column holds 20 characters: a 20-character name may be cut.
                name_truncated=name is not None and len(name) >= 20,
                pci_vendor_id="0x1002",
            )
        )
    return RocmSmiResult(gpus=tuple(gpus), problems=tuple(_problems_from_text(text)))


# Keys differ between versions and between text/csv/json; lower-cased here.
_NAME_KEYS = ("card series", "card model", "marketing name")
# Where the PCI device id is. rocm-smi 6.x prints "Card Model" as the device id beside its own
# "Subsystem ID", "Device Rev" and "GFX Version" lines (MI210: 0x740f and 0x0c34). Older rocm-smi
# prints only series, model, vendor and SKU: its "Card series" is the device (its pci.ids name, or
# the hex id when it has none: an MI100 under ROCm 4.0 printed "0x738c") and its "Card model" the
# *subsystem* (0xc34, the same on MI100s and MI210s), never a device id.
_DID_KEYS_NEW = ("device id", "card model", "card series")
_DID_KEYS_OLD = ("device id", "card series")
_NEW_LAYOUT = ("subsystem id", "device rev", "gfx version")


def _record(idx: int | None, values: Mapping[str, object]) -> GpuRecord:
    low = {str(k).strip().lower(): v for k, v in values.items()}
    name = None
    for key in _NAME_KEYS:
        cand = clean_name(low.get(key))
        if cand and norm_hex(cand) is None:
            name = cand
            break
    did = None
    for key in _DID_KEYS_NEW if any(k in low for k in _NEW_LAYOUT) else _DID_KEYS_OLD:
        did = norm_hex(low.get(key))
        if did:
            break
    mem = to_int(low.get("vram total memory (b)"))
    bus = low.get("pci bus")
    return GpuRecord(
        source=SOURCE,
        vendor="amd",
        ordinal=idx,
        name=name,
        arch=parse_gfx(low.get("gfx version")),
        pci_device_id=did,
        pci_vendor_id="0x1002",
        kfd_node=to_int(low.get("node id")),
        memory_bytes=mem if mem and mem > 0 else None,
        pci_bus_id=norm_bus_id(bus) if isinstance(bus, str) else None,
    )


def parse_productname(text: str) -> RocmSmiResult:
    """``rocm-smi --showproductname`` (and any ``GPU[n] : key : value`` text output)."""
    per_gpu: dict[int, dict[str, str]] = {}
    for line in strip_ansi(text).splitlines():
        m = _PRODUCT.match(line.strip())
        idx = count(m.group("idx")) if m else None
        if m and idx is not None:
            per_gpu.setdefault(idx, {}).setdefault(
                m.group("key").strip(), m.group("value").strip()
            )
    gpus = tuple(_record(idx, values) for idx, values in sorted(per_gpu.items()))
    return RocmSmiResult(gpus=gpus, problems=tuple(_problems_from_text(text)))


def _card_index(key: str) -> int | None:
    m = re.fullmatch(r"card(\d+)", key.strip().lower())
    return count(m.group(1)) if m else None


def parse_json(text: str) -> RocmSmiResult:
    """``rocm-smi ... --json``: ``{"card0": {...}, "system": {"Driver version": ...}}``, maybe after warnings."""
    data = _first_json_object(strip_ansi(text))
    if not isinstance(data, dict):
        return RocmSmiResult(
            problems=(
                Problem(source=SOURCE, message="rocm-smi --json printed no JSON object", severity="info"),
            )
        )
    gpus = []
    driver = None
    for key, values in data.items():
        if not isinstance(values, dict):
            continue
        idx = _card_index(str(key))
        if idx is not None:
            gpus.append(_record(idx, values))
        elif str(key).lower() == "system":
            drv = values.get("Driver version")
            driver = drv.strip() if isinstance(drv, str) and drv.strip() else None
    gpus.sort(key=lambda g: g.ordinal or 0)
    return RocmSmiResult(gpus=tuple(gpus), driver_version=driver, problems=tuple(_problems_from_text(text)))


def parse_csv(text: str) -> RocmSmiResult:
    """``rocm-smi ... --csv``: a header starting with ``device`` (or ``system``) and one row per card."""
    gpus = []
    driver = None
    header: list[str] | None = None
    for row in csv_rows(strip_ansi(text)):
        if not row:
            continue
        first = row[0].strip().lower()
        if first == "driver version" and len(row) == 2:  # "name,value" layout
            driver = row[1].strip() or driver
            continue
        if first == "device" or (first == "system" and header is None):
            header = [c.strip() for c in row]
            continue
        if header is None:
            continue
        values = dict(zip(header, (c.strip() for c in row), strict=False))
        idx = _card_index(row[0])
        low = {k.lower(): v for k, v in values.items()}
        drv = low.get("driver version")
        if drv and drv.upper() != "N/A":
            driver = drv
        if idx is not None and len(header) > 1 and any(k.lower() != "driver version" for k in header[1:]):
            gpus.append(_record(idx, values))
    return RocmSmiResult(gpus=tuple(gpus), driver_version=driver, problems=tuple(_problems_from_text(text)))


# Warnings before the JSON hold a few brackets at most; give up on text full of them.
_MAX_ATTEMPTS = 20


def _first_json_object(text: str) -> object:
    decoder = tool_output_decoder()
    attempts = 0
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(text, start)
            return obj
        except RecursionError:
            return None  # absurdly nested: not a tool's output
        except json.JSONDecodeError:
            attempts += 1
            if attempts > _MAX_ATTEMPTS:
                return None
            start = text.find("{", start + 1)
    return None
