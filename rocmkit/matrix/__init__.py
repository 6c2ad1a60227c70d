"""The compatibility matrices: one cached, validated, typed view of ``matrices/*.toml``.

>>> m = load_matrix()
>>> m.pci_device("0x744c").arch
'gfx1100'
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from rocmkit.matrix.compiled import load_matrix
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

if TYPE_CHECKING:
    from rocmkit.matrix.load import FILES, parse_matrix


def __getattr__(name: str) -> Any:
    # The loader (TOML parser, validators) is imported only when a matrix is parsed:
    # `load_matrix` reads the compiled cache without it.
    if name in ("FILES", "parse_matrix"):
        from rocmkit.matrix import load

        return getattr(load, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def clear_cache() -> None:
    """Forget every matrix this process loaded; the next load reads the files again."""
    from rocmkit.matrix import compiled

    compiled.clear()
    loader = sys.modules.get("rocmkit.matrix.load")
    if loader is not None:
        loader.clear_cache()


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
