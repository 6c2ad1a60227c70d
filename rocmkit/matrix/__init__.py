"""The compatibility matrices: one cached, validated, typed view of ``matrices/*.toml``.

>>> m = load_matrix()
>>> m.pci_device("0x744c").arch
'gfx1100'
"""

from __future__ import annotations

from rocmkit.matrix.load import FILES, clear_cache, load_matrix, parse_matrix
from rocmkit.matrix.model import (
    Channel,
    CudaToolkit,
    Fact,
    FamilyIndex,
    GfxArch,
    Matrix,
    NvidiaGpu,
    PciDevice,
    RocmIndex,
    RocmRelease,
    TorchRelease,
    TorchVariant,
)

__all__ = [
    "FILES",
    "Channel",
    "CudaToolkit",
    "Fact",
    "FamilyIndex",
    "GfxArch",
    "Matrix",
    "NvidiaGpu",
    "PciDevice",
    "RocmIndex",
    "RocmRelease",
    "TorchRelease",
    "TorchVariant",
    "clear_cache",
    "load_matrix",
    "parse_matrix",
]
