"""Compare a kernel's output with torch's under a :class:`Tolerance` (the ``allclose`` rule).

Pure: no rocmkit import, torch only inside :func:`compare`. The tolerances themselves are
data, declared by each kernel module (read by :mod:`rocmkit.kernels.catalog`) and, for
the non-Triton checks, in :mod:`rocmkit.kernels.tolerance`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Tolerance:
    atol: float
    rtol: float
    source: str

    @property
    def exact(self) -> bool:
        return self.atol == 0 and self.rtol == 0

    def allows(self, error: float, magnitude: float) -> bool:
        """The ``allclose`` rule for one element: ``|a - b| <= atol + rtol * |b|``."""
        return error <= self.atol + self.rtol * magnitude

    def describe(self) -> str:
        return "exact" if self.exact else f"atol {self.atol:g}, rtol {self.rtol:g}"


@dataclass(frozen=True, kw_only=True)
class Comparison:
    ok: bool
    max_abs_error: float
    mismatched: int  # elements outside the tolerance (NaN counts as outside)
    total: int
    tolerance: Tolerance

    def describe(self) -> str:
        if self.ok:
            return f"max |err| {self.max_abs_error:.3g} ({self.tolerance.describe()})"
        return (
            f"{self.mismatched} of {self.total} elements outside {self.tolerance.describe()}, "
            f"max |err| {self.max_abs_error:.3g}"
        )

    def as_details(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "max_abs_error": self.max_abs_error,
            "mismatched": self.mismatched,
            "total": self.total,
            "atol": self.tolerance.atol,
            "rtol": self.tolerance.rtol,
            "tolerance_source": self.tolerance.source,
        }


def compare(actual: Any, expected: Any, tol: Tolerance) -> Comparison:
    """Elementwise ``|actual - expected| <= atol + rtol * |expected|``, in float64 on the CPU
    so the comparison itself adds no rounding. Shapes must match."""
    import torch

    if tuple(actual.shape) != tuple(expected.shape):
        raise ValueError(f"shape {tuple(actual.shape)} differs from the reference {tuple(expected.shape)}")
    a = actual.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    err = (a - e).abs()
    bound = tol.atol + tol.rtol * e.abs()
    # NaN compares false, so a NaN output is a mismatch rather than silently "close".
    within = err <= bound
    mismatched = int((~within).sum().item())
    finite = err[torch.isfinite(err)]
    max_err = float(finite.max().item()) if finite.numel() else float("nan")
    if finite.numel() < err.numel():
        max_err = float("inf")
    return Comparison(
        ok=mismatched == 0,
        max_abs_error=max_err,
        mismatched=mismatched,
        total=int(err.numel()),
        tolerance=tol,
    )
