"""How close a check's answer must be to torch's, per kernel, dtype and GPU architecture.

Pure data and lookup: no torch, no triton. Each Triton kernel declares its own tolerances
(``CHECK["tolerances"]`` and ``["arch_tolerances"]`` in its module, read by
:mod:`rocmkit.kernels.catalog`); the checks that are not Triton kernels (the torch
attention check) keep theirs here. Every entry names its source: where a Triton tutorial
asserts a tolerance we use it; elsewhere the bound is ours, derived from the dtype's
rounding unit and stated next to the entry.
"""

from __future__ import annotations

from rocmkit.kernels.catalog import SOURCES, Tolerances, kernels
from rocmkit.kernels.compare import Tolerance

__all__ = ["SHARED", "Tolerance", "table", "tolerance"]

_OWN_SDPA = (
    "rocmkit: fused attention against the fp32 math reference; the output is a weighted mean of V, "
    "so a wrong kernel is off by O(1) while rounding stays near the dtype's ulp"
)

SHARED: dict[str, Tolerances] = {
    "sdpa": Tolerances(
        by_dtype={
            "float32": Tolerance(atol=1e-4, rtol=1e-4, source=SOURCES["fp32-reduction"]),
            "float16": Tolerance(atol=1e-2, rtol=1e-2, source=_OWN_SDPA),
            "bfloat16": Tolerance(atol=2e-2, rtol=2e-2, source=_OWN_SDPA),
        },
        by_family={
            "cdna2": {
                "float16": Tolerance(atol=2e-2, rtol=2e-2, source=SOURCES["cdna2-tutorial-03"]),
                "bfloat16": Tolerance(atol=3e-2, rtol=3e-2, source=SOURCES["cdna2-tutorial-03"]),
            }
        },
    ),
}


def _tables() -> dict[str, Tolerances]:
    return {**{k.name: k.tolerances for k in kernels()}, **SHARED}


def tolerance(kernel: str, dtype: str, arch: str | None = None) -> Tolerance:
    """The tolerance for ``kernel`` (a kernel module's name, or ``"sdpa"``) computing in
    ``dtype`` (``"float16"``) on ``arch``."""
    found = _tables().get(kernel, Tolerances(by_dtype={}, by_family={}))
    return found.pick(kernel, dtype, arch)


def table() -> dict[tuple[str, str], Tolerance]:
    """Every ``(kernel, dtype)``'s tolerance on architectures without a family override."""
    return {(name, d): t for name, tols in _tables().items() for d, t in tols.by_dtype.items()}
