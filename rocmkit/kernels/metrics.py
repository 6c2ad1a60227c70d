"""The arithmetic behind kernel figures: throughput, fractions of a reference, verdicts.

Pure: no torch, no triton, so the unit tests check every formula on plain numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def gb_per_s(n_bytes: int | float, ms: float) -> float:
    """Bytes moved in ``ms`` milliseconds, in GB/s (10^9 bytes, as the Triton tutorials report)."""
    if ms <= 0 or not math.isfinite(ms):
        raise ValueError(f"a duration must be positive and finite, got {ms!r} ms")
    return n_bytes / (ms * 1e-3) / 1e9


def tflop_per_s(flops: int | float, ms: float) -> float:
    """Floating-point operations in ``ms`` milliseconds, in TFLOP/s."""
    if ms <= 0 or not math.isfinite(ms):
        raise ValueError(f"a duration must be positive and finite, got {ms!r} ms")
    return flops / (ms * 1e-3) / 1e12


def copy_bytes(n_bytes: int) -> int:
    """A device-to-device copy reads and writes every byte once."""
    return 2 * n_bytes


def median(values: Sequence[float]) -> float:
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


@dataclass(frozen=True, kw_only=True)
class PerfVerdict:
    fraction: float | None  # achieved / reference
    threshold: float | None  # warn below this fraction; None when no threshold applies
    slow: bool  # below the threshold

    def describe(self, unit: str, value: float, reference: float | None, reference_name: str) -> str:
        text = f"{value:.4g} {unit}"
        if reference is not None and self.fraction is not None:
            text += f" = {self.fraction:.3g} of {reference_name} ({reference:.4g} {unit})"
        if self.slow and self.threshold is not None:
            text += f", below the {self.threshold:g} warning threshold"
        return text


def perf_verdict(value: float, reference: float | None, threshold: float | None) -> PerfVerdict:
    """Compare a throughput with a reference measured in the same run.

    ``threshold`` None means no threshold applies (the CPU interpreter, whose speed says
    nothing about the node). A missing or zero reference gives no fraction and no warning:
    a node is never flagged slow against a number that was not measured.
    """
    if reference is None or reference <= 0 or not math.isfinite(reference) or not math.isfinite(value):
        return PerfVerdict(fraction=None, threshold=threshold, slow=False)
    fraction = value / reference
    slow = threshold is not None and fraction < threshold
    return PerfVerdict(fraction=fraction, threshold=threshold, slow=slow)
