"""Timing for the kernel checks.

GPUs: ``triton.testing.do_bench`` (GPU events, L2 flushed between runs, median). It
has been seen to return about 0 ms for tiny kernels where HIP events misreport
(docs/failure-modes.md, "Timing small kernels"), so a result that is not a positive finite number, or an
exception, falls back to a fixed number of calls timed by the wall clock between two
device synchronisations. CPU (Triton's interpreter, torch on the CPU): a fixed number of
calls, each timed by the wall clock, median.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rocmkit.kernels.metrics import median


@dataclass(frozen=True, kw_only=True)
class Timing:
    first_call_ms: float  # includes JIT compilation, or loading it from the cache
    median_ms: float  # a warm call
    method: str  # "do_bench", "fixed-iterations" or "wall-clock"
    iterations: int | None = None  # calls behind median_ms where we counted them

    @property
    def compile_ms(self) -> float:
        """First call minus a warm call: the time spent compiling (or loading from the cache)."""
        return max(self.first_call_ms - self.median_ms, 0.0)

    def as_details(self) -> dict[str, Any]:
        return {
            "first_call_ms": round(self.first_call_ms, 4),
            "median_ms": round(self.median_ms, 6),
            "method": self.method,
            "iterations": self.iterations,
        }


def synchronize(device: str) -> None:
    if device != "cpu":
        import torch

        torch.cuda.synchronize()


def time_call(fn: Callable[[], object], device: str) -> float:
    """One call, synchronised on both sides, in milliseconds."""
    synchronize(device)
    start = time.perf_counter()
    fn()
    synchronize(device)
    return (time.perf_counter() - start) * 1e3


def fixed_iterations_ms(fn: Callable[[], object], device: str, iterations: int) -> float:
    """Mean of ``iterations`` back-to-back calls between two synchronisations."""
    fn()  # warm
    synchronize(device)
    start = time.perf_counter()
    for _ in range(iterations):
        fn()
    synchronize(device)
    return (time.perf_counter() - start) * 1e3 / iterations


def measure_ms(fn: Callable[[], object], *, device: str, repeats: int) -> tuple[float, str, int | None]:
    """A warm call's duration in ms, how it was measured, and how many calls were timed."""
    if device == "cpu":
        times = [time_call(fn, device) for _ in range(repeats)]
        return median(times), "wall-clock", repeats
    try:
        import triton.testing

        ms = float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))
    except Exception:  # do_bench is best effort; the fallback below always works
        ms = math.nan
    if math.isfinite(ms) and ms > 0:
        return ms, "do_bench", None
    # Enough calls to span a few milliseconds even for a tiny kernel.
    iterations = max(repeats, 10)
    return fixed_iterations_ms(fn, device, iterations), "fixed-iterations", iterations
