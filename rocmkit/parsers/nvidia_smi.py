"""NVIDIA: ``nvidia-smi --query-gpu=... --format=csv``, the plain ``nvidia-smi`` table,
``/proc/driver/nvidia/version`` and ``/sys/module/nvidia/version``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocmkit.machine import Problem
from rocmkit.parsers.records import GpuRecord, clean_name, count, csv_rows, norm_bus_id, strip_ansi, to_int

SOURCE = "nvidia-smi"


@dataclass(frozen=True, kw_only=True)
class NvidiaSmiResult:
    gpus: tuple[GpuRecord, ...] = ()
    driver_version: str | None = None
    cuda_version: str | None = None
    problems: tuple[Problem, ...] = ()


_MIB = re.compile(r"^\s*(\d+)\s*MiB\s*$", re.I)
_CC = re.compile(r"^\d+\.\d+$")
_DRIVER = re.compile(r"^\d+\.\d+(?:\.\d+)?$")


def _problems(text: str) -> list[Problem]:
    out = []
    for line in text.splitlines():
        s = line.strip()
        if "couldn't communicate with the NVIDIA driver" in s or "NVIDIA-SMI has failed" in s:
            out.append(
                Problem(
                    source=SOURCE,
                    message=s[:200],
                    hint="the NVIDIA kernel driver is not loaded or does not match the user-space "
                    "library: reinstall the driver and reboot",
                    severity="error",
                )
            )
            break
        if "is not a valid field to query" in s:
            out.append(
                Problem(
                    source=SOURCE,
                    message=s[:200],
                    hint="this nvidia-smi is too old to report compute capability; it is taken "
                    "from the GPU name instead",
                    severity="info",
                )
            )
            break
    return out


def parse_query_csv(text: str) -> NvidiaSmiResult:
    """The query CSV: a header of field names (with units), then one row per GPU."""
    text = strip_ansi(text)
    rows = csv_rows(text)
    header: list[str] | None = None
    gpus = []
    drivers = set()
    for row in rows:
        cells = [c.strip() for c in row]
        if cells and cells[0].lower() == "index":
            header = [c.split(" ", 1)[0].lower() for c in cells]
            continue
        if header is None or len(cells) != len(header):
            continue
        values = dict(zip(header, cells, strict=True))
        idx = to_int(values.get("index"))
        if idx is None:
            continue
        mem = _MIB.match(values.get("memory.total", ""))
        cc = values.get("compute_cap", "")
        drv = values.get("driver_version", "")
        if _DRIVER.match(drv):
            drivers.add(drv)
        uuid = values.get("uuid", "")
        gpus.append(
            GpuRecord(
                source=SOURCE,
                vendor="nvidia",
                ordinal=idx,
                name=clean_name(values.get("name")),
                memory_bytes=_mib(mem.group(1)) if mem else None,
                compute_capability=cc if _CC.match(cc) else None,
                pci_bus_id=norm_bus_id(values.get("pci.bus_id")),
                pci_vendor_id="0x10de",
                uuid=uuid if uuid.startswith(("GPU-", "MIG-")) else None,
            )
        )
    return NvidiaSmiResult(
        gpus=tuple(gpus),
        driver_version=drivers.pop() if len(drivers) == 1 else None,
        problems=tuple(_problems(text)),
    )


_HEADER = re.compile(r"Driver Version:\s*(?P<drv>[\d.]+)(?:.*?CUDA Version:\s*(?P<cuda>[\d.]+))?")
# "|   0  NVIDIA GeForce GTX 1050 Ti    Off |   00000000:01:00.0 Off |                  N/A |"
_GPU_ROW = re.compile(
    r"^\|\s*(?P<idx>\d+)\s+(?P<name>.+?)\s+(?:On|Off)\s*\|\s*(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])"
)
_MEM = re.compile(r"(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")


def parse_table(text: str) -> NvidiaSmiResult:
    """The plain ``nvidia-smi`` table (names may be cut to the column width)."""
    text = strip_ansi(text)
    m = _HEADER.search(text)
    gpus = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        row = _GPU_ROW.match(line.strip())
        if not row:
            continue
        mem = None
        if i + 1 < len(lines):
            mm = _MEM.search(lines[i + 1])
            if mm:
                mem = _mib(mm.group(2))
        name = clean_name(row.group("name"))
        gpus.append(
            GpuRecord(
                source=SOURCE,
                vendor="nvidia",
                ordinal=count(row.group("idx")),
                name=name,
                name_truncated=name is not None and name.endswith("..."),
                memory_bytes=mem,
                pci_bus_id=norm_bus_id(row.group("bus")),
                pci_vendor_id="0x10de",
            )
        )
    return NvidiaSmiResult(
        gpus=tuple(gpus),
        driver_version=m.group("drv") if m else None,
        cuda_version=m.group("cuda") if m and m.group("cuda") else None,
        problems=tuple(_problems(text)),
    )


_PROC = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(?P<v>\d+\.\d+(?:\.\d+)?)")


def parse_driver_version(text: str | None) -> str | None:
    """``/sys/module/nvidia/version`` ("550.54.15") or ``/proc/driver/nvidia/version``
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar ...")."""
    if not text:
        return None
    first = text.strip().splitlines()[0].strip() if text.strip() else ""
    if _DRIVER.match(first):
        return first
    m = _PROC.search(text)
    return m.group("v") if m else None


def _mib(text: str) -> int | None:
    mib = count(text)
    return mib * 1024 * 1024 if mib is not None else None
