"""The KFD topology in sysfs: ``/sys/class/kfd/kfd/topology/nodes/<n>/properties``.

The kernel's own view: it needs no ROCm user space and no access to /dev/kfd,
so it is the most reliable source for the gfx target, PCI ids and VRAM. A node
with SIMDs is a GPU; one with CPU cores and SIMDs is an APU (integrated GPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rocmkit.machine import Problem
from rocmkit.parsers.records import GpuRecord, norm_hex

SOURCE = "kfd"

# HSA heap types of a memory bank: 1 = frame buffer public, 2 = frame buffer private.
_VRAM_HEAPS = (1, 2)


@dataclass(frozen=True, kw_only=True)
class KfdNode:
    """The raw text of one topology node: its properties and each mem_banks/<i>/properties."""

    node: int
    properties: str
    mem_banks: Sequence[str] = ()


@dataclass(frozen=True, kw_only=True)
class KfdResult:
    gpus: tuple[GpuRecord, ...] = ()
    cpu_nodes: int | None = None
    problems: tuple[Problem, ...] = ()


def parse_properties(text: str) -> dict[str, int]:
    """ "key value" lines; values are integers (non-integer lines are skipped)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2:
            continue
        try:
            out.setdefault(parts[0], int(parts[1]))
        except ValueError:
            continue
    return out


def gfx_from_target_version(value: int) -> str | None:
    """90010 -> "gfx90a", 110000 -> "gfx1100", 90402 -> "gfx942": major, then minor and stepping in hex."""
    if value <= 0 or value > 999999:
        return None
    major, minor, step = value // 10000, (value // 100) % 100, value % 100
    if minor > 15 or step > 15 or major == 0:
        return None
    return f"gfx{major}{minor:x}{step:x}"


def parse_kfd(nodes: Sequence[KfdNode]) -> KfdResult:
    gpus: list[GpuRecord] = []
    cpu_nodes = 0
    problems: list[Problem] = []
    for node in sorted(nodes, key=lambda n: n.node):
        props = parse_properties(node.properties)
        if not props:
            if node.properties.strip():
                problems.append(
                    Problem(
                        source=SOURCE,
                        message=f"KFD node {node.node} has unreadable properties",
                        severity="info",
                    )
                )
            continue
        simds = props.get("simd_count", 0)
        cores = props.get("cpu_cores_count", 0)
        if simds <= 0:
            if cores > 0:
                cpu_nodes += 1
            continue
        vram = 0
        for bank in node.mem_banks:
            bp = parse_properties(bank)
            if bp.get("heap_type") in _VRAM_HEAPS:
                vram += max(bp.get("size_in_bytes", 0), 0)
        location = props.get("location_id")
        bus_id = None
        if location is not None and 0 < location <= 0xFFFF:
            domain = props.get("domain", 0)
            bus_id = f"{domain:04x}:{location >> 8:02x}:{(location >> 3) & 0x1F:02x}.{location & 0x7}"
        unique = props.get("unique_id")
        gpus.append(
            GpuRecord(
                source=SOURCE,
                vendor="amd",
                kfd_node=node.node,
                arch=gfx_from_target_version(props.get("gfx_target_version", 0)),
                pci_device_id=norm_hex(props["device_id"]) if props.get("device_id") else None,
                pci_vendor_id=norm_hex(props["vendor_id"]) if props.get("vendor_id") else None,
                pci_bus_id=bus_id,
                memory_bytes=vram or None,
                # An APU node carries both the CPU cores and the GPU's SIMDs; a node without
                # CPU cores proves nothing (newer kernels split APUs), so that stays unknown.
                integrated=True if cores > 0 else None,
                # rocminfo and ROCR_VISIBLE_DEVICES write this id as "GPU-<16 hex digits>".
                uuid=f"GPU-{unique:016x}" if unique else None,
            )
        )
        if cores > 0:
            cpu_nodes += 1
    return KfdResult(gpus=tuple(gpus), cpu_nodes=cpu_nodes if nodes else None, problems=tuple(problems))


def node_numbers(entries: Sequence[str] | None) -> list[int]:
    """The numeric entries of the nodes/ folder listing."""
    return sorted(int(e) for e in entries or () if e.isascii() and e.isdigit())
