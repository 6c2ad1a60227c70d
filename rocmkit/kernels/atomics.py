"""Atomics: a histogram built with ``tl.atomic_add``, whose answer is known exactly.

Each program bins a block of values with ``tl.histogram`` and then adds its counts into
the global histogram with one atomic add per bin, so every program contends on the same
few addresses (the pattern that breaks when atomics are broken or lost). Integer counts
make the answer exact: it must equal ``torch.bincount`` and sum to the number of values.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import triton
import triton.language as tl

from rocmkit.kernels.metrics import gb_per_s
from rocmkit.kernels.spec import Build, KernelRun, Report

# Read without importing this module (rocmkit/kernels/catalog.py): literals only.
CHECK = {
    "level": 2,
    "order": 4,
    "description": "tl.atomic_add histogram with an exact answer; values/s vs torch.bincount (no threshold)",
    "timeout_s": 180.0,
    "options": {
        "histogram_n": {
            "help": "values binned by the atomics check",
            "kind": "positive_int",
            "gpu": 16_777_219,  # 2**24 + 3
            "interpreter": 65_537,
        },
        "histogram_bins": {
            "help": "bins of the histogram (a power of two)",
            "kind": "power_of_two",
            "gpu": 256,
            "interpreter": 64,
        },
    },
    "tolerances": {"int32": {"atol": 0, "rtol": 0, "source": "exact-int"}},
}

BLOCK_SIZE = 1024


@triton.jit  # type: ignore[untyped-decorator]
def _histogram_kernel(  # type: ignore[no-untyped-def]
    values_ptr, hist_ptr, n_values, NUM_BINS: tl.constexpr, BLOCK_SIZE: tl.constexpr
):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_values
    values = tl.load(values_ptr + offsets, mask=mask, other=0)
    # Lanes past the end load 0 and land in bin 0; take them out again. (tl.histogram's own
    # `mask=` is newer than some Triton builds torch pins.)
    counts = tl.histogram(values, NUM_BINS)
    bins = tl.arange(0, NUM_BINS)
    outside = BLOCK_SIZE - tl.sum(mask.to(tl.int32), axis=0)
    counts = counts - tl.where(bins == 0, outside, 0)
    tl.atomic_add(hist_ptr + bins, counts.to(tl.int32))


def histogram(values: Any, num_bins: int) -> Any:
    """Counts of each value in ``[0, num_bins)`` (int32); ``num_bins`` must be a power of two."""
    import torch

    if num_bins & (num_bins - 1):
        raise ValueError(f"num_bins must be a power of two, got {num_bins}")
    hist = torch.zeros((num_bins,), dtype=torch.int32, device=values.device)
    n = values.numel()
    _histogram_kernel[(triton.cdiv(n, BLOCK_SIZE),)](
        values, hist, n, NUM_BINS=num_bins, BLOCK_SIZE=BLOCK_SIZE
    )
    return hist


def bytes_moved(n_values: int, element_size: int) -> int:
    """Each value is read once; the histogram itself is tiny."""
    return n_values * element_size


def run(k: KernelRun) -> Report:
    """The check: the histogram must equal ``torch.bincount`` exactly; its speed informs."""
    import torch

    n, bins = k.size("histogram_n"), k.size("histogram_bins")
    values = torch.randint(0, bins, (n,), generator=k.generator(), dtype=torch.int32).to(k.torch_device)
    expected = torch.bincount(values, minlength=bins).to(torch.int32)
    work = bytes_moved(n, values.element_size())
    m = k.measure(
        kernel=lambda: histogram(values, bins),
        expected=expected,
        dtype="int32",
        label=f"int32 n={n} bins={bins}",
        work=work,
        unit="GB/s",
        reference=lambda: gb_per_s(work, k.time_ms(lambda: torch.bincount(values, minlength=bins))),
        reference_name="torch.bincount",
        # torch.bincount may bin in shared memory; a global-atomics histogram is not
        # expected to match it, so this figure informs and never warns.
        warn_fraction=0.0,
    )
    return Report(what="atomic-add histogram", runs=[m], details={"n": n, "bins": bins})


def aot_builds(backend: str) -> Iterator[Build]:
    yield Build(
        kernel="atomics",
        variant="int32 256 bins",
        fn=_histogram_kernel,
        signature={"values_ptr": "*i32", "hist_ptr": "*i32", "n_values": "i32"},
        constexprs={"NUM_BINS": 256, "BLOCK_SIZE": BLOCK_SIZE},
        divisible_by_16=("values_ptr", "hist_ptr"),
    )
