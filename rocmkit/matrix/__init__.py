"""The compatibility matrices: one cached, validated, typed view of ``matrices/*.toml``.

>>> m = load_matrix()
>>> m.pci_device("0x744c").arch
'gfx1100'
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from rocmkit.matrix.compiled import load_matrix

if TYPE_CHECKING:
    from rocmkit.matrix.load import FILES, parse_matrix
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

_LOADER_NAMES = ("FILES", "parse_matrix")


def __getattr__(name: str) -> Any:
    # Imported on first use: the loader (TOML parser, validators) only when a matrix is
    # parsed, since `load_matrix` reads the compiled cache without it; the model (a dozen
    # dataclasses) only when a caller names one, so the matrix key costs no more than zlib.
    if name in _LOADER_NAMES:
        from rocmkit.matrix import load

        return getattr(load, name)
    if name in __all__:
        from rocmkit.matrix import model

        return getattr(model, name)
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
