"""Mark SR-IOV virtual functions (#23): by the lspci description of the GPU's PCI
address, or by the name any tool gave it. ROCm runs on only some virtualized GPUs,
and on the others hipGetDeviceCount fails with hipErrorInvalidDevice."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rocmkit.machine import Gpu
from rocmkit.parsers.lspci import is_virtual_function
from rocmkit.parsers.records import GpuRecord


def mark_virtual(gpus: Sequence[Gpu], pci: Sequence[GpuRecord]) -> list[Gpu]:
    """Set ``virtual_function`` on AMD GPUs: True when lspci or a name says VF, False
    when lspci described the GPU without saying so, None when nothing is known."""
    described = {r.pci_bus_id: is_virtual_function(r.name) for r in pci if r.pci_bus_id}
    out = []
    for g in gpus:
        if g.vendor != "amd":
            out.append(g)
            continue
        flag: bool | None = described.get(g.pci_bus_id) if g.pci_bus_id else None
        if is_virtual_function(g.name):
            flag = True
        out.append(replace(g, virtual_function=flag) if flag is not None else g)
    return out
