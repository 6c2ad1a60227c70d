"""Problem sizes and thresholds for the kernel checks, per backend, overridable by options.

GPU sizes are large enough to measure bandwidth and TFLOP/s (tens of MB per tensor,
4096^3 matmul); interpreter sizes are small enough that every kernel check together
finishes in seconds on a CPU, yet still irregular, so every mask is exercised.

Options come from ``ctx.options``, else from ``ROCMKIT_KERNEL_<KEY>`` environment variables
(:func:`merged_options`), under the keys in :data:`OPTION_KEYS`; a shape is a list of
integers or a string such as ``"4096x4096x4096"``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from rocmkit.errors import UsageError

MATMUL_DTYPES = ("float16", "bfloat16", "float32")
# Warn when a kernel reaches less than this fraction of the torch reference measured in
# the same run (a device copy for bandwidth, torch.matmul for TFLOP/s).
DEFAULT_WARN_FRACTION = 0.5


@dataclass(frozen=True, kw_only=True)
class KernelSizes:
    vector_add_n: int
    softmax_shape: tuple[int, int]
    layernorm_shape: tuple[int, int]
    layernorm_block: int | None  # None: the kernel's own choice (one block per row on GPUs)
    matmul_shape: tuple[int, int, int]  # M, N, K
    matmul_dtypes: tuple[str, ...]  # torch dtype names
    histogram_n: int
    histogram_bins: int
    attention_shape: tuple[int, int, int, int]  # batch, heads, sequence, head dim
    repeats: int  # timed calls on the CPU, and the fixed-iteration fallback on GPUs
    warn_fraction: float


GPU = KernelSizes(
    vector_add_n=2**24 + 7,
    softmax_shape=(8192, 3001),
    layernorm_shape=(8192, 5003),
    layernorm_block=None,
    matmul_shape=(4096, 4096, 4096),
    matmul_dtypes=("float16", "bfloat16"),
    histogram_n=2**24 + 3,
    histogram_bins=256,
    attention_shape=(4, 16, 2048, 64),
    repeats=20,
    warn_fraction=DEFAULT_WARN_FRACTION,
)

INTERPRETER = KernelSizes(
    vector_add_n=2**17 + 7,
    softmax_shape=(129, 781),  # the tutorial's 781 columns; fewer rows, one program each
    layernorm_shape=(37, 1531),
    layernorm_block=512,  # three blocks per row, the last one partial
    matmul_shape=(192, 160, 208),  # partial tiles on N and K with 64x64x64 tiles
    # The interpreter has no bfloat16 arithmetic (Triton's debugging guide).
    matmul_dtypes=("float32",),
    histogram_n=65_537,
    histogram_bins=64,
    attention_shape=(2, 4, 128, 64),
    repeats=3,
    warn_fraction=DEFAULT_WARN_FRACTION,
)

OPTION_KEYS: dict[str, str] = {
    "vector_add_n": "elements in the vector add",
    "softmax_shape": "rows, columns of the softmax input",
    "layernorm_shape": "rows, columns of the layer norm input",
    "layernorm_block": "columns per block in the layer norm kernel",
    "matmul_shape": "M, N, K of the matmul",
    "matmul_dtypes": "dtypes of the matmul: float16, bfloat16, float32 (comma-separated)",
    "histogram_n": "values binned by the atomics check",
    "histogram_bins": "bins of the histogram (a power of two)",
    "attention_shape": "batch, heads, sequence length, head dim of the attention check",
    "repeats": "timed calls per measurement on the CPU, and the GPU fallback",
    "warn_fraction": "warn below this fraction of the torch reference (GPU only)",
}


# Options read by the checks themselves rather than turned into sizes.
CHECK_OPTION_KEYS: dict[str, str] = {
    "codegen_targets": "GPU archs triton.codegen compiles for, e.g. gfx942,sm_90",
    "codegen_timeout_s": "seconds one target's ahead-of-time compile may take",
    "attention_min_vs_math": "warn when a fused attention backend is below this fraction of math (GPU)",
}
ENV_PREFIX = "ROCMKIT_KERNEL_"


def merged_options(options: Mapping[str, Any] | None, env: Mapping[str, str] | None) -> dict[str, Any]:
    """``ctx.options`` with ``ROCMKIT_KERNEL_<KEY>`` variables filling the keys it lacks, so
    ``ROCMKIT_KERNEL_MATMUL_SHAPE=1024x1024x1024 rocmkit doctor`` works from any shell or job script."""
    out = dict(options or {})
    for key in (*OPTION_KEYS, *CHECK_OPTION_KEYS):
        value = (env or {}).get(ENV_PREFIX + key.upper())
        if key not in out and value:
            out[key] = value
    return out


def _bad(key: str, value: Any, want: str) -> UsageError:
    return UsageError(
        f"kernel option {key}={value!r} is not {want}",
        f"pass {key} as {want} ({OPTION_KEYS[key]})",
    )


def _positive_int(key: str, value: Any) -> int:
    if isinstance(value, bool):
        raise _bad(key, value, "a positive integer")
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise _bad(key, value, "a positive integer") from None
    if number <= 0 or (isinstance(value, float) and value != number):
        raise _bad(key, value, "a positive integer")
    return number


def _shape(key: str, value: Any, rank: int) -> tuple[int, ...]:
    parts: Any = value
    if isinstance(value, str):
        parts = [p for p in value.replace("x", ",").split(",") if p.strip()]
    if not isinstance(parts, (list, tuple)) or len(parts) != rank:
        raise _bad(key, value, f"{rank} positive integers")
    return tuple(_positive_int(key, p) for p in parts)


def kernel_sizes(backend: str, options: Mapping[str, Any] | None = None) -> KernelSizes:
    """The sizes for ``backend`` ("rocm", "cuda" or "cpu"), with ``options`` applied."""
    sizes = INTERPRETER if backend == "cpu" else GPU
    opts = dict(options or {})
    changes: dict[str, Any] = {}
    for key in ("vector_add_n", "histogram_n", "repeats"):
        if key in opts:
            changes[key] = _positive_int(key, opts[key])
    if "histogram_bins" in opts:
        bins = _positive_int("histogram_bins", opts["histogram_bins"])
        if bins & (bins - 1):
            raise _bad("histogram_bins", opts["histogram_bins"], "a power of two")
        changes["histogram_bins"] = bins
    if "layernorm_block" in opts:
        block = _positive_int("layernorm_block", opts["layernorm_block"])
        if block & (block - 1):
            raise _bad("layernorm_block", opts["layernorm_block"], "a power of two")
        changes["layernorm_block"] = block
    for key, rank in (
        ("softmax_shape", 2),
        ("layernorm_shape", 2),
        ("matmul_shape", 3),
        ("attention_shape", 4),
    ):
        if key in opts:
            changes[key] = _shape(key, opts[key], rank)
    if "matmul_dtypes" in opts:
        raw = opts["matmul_dtypes"]
        names = (
            raw.split(",") if isinstance(raw, str) else list(raw) if isinstance(raw, (list, tuple)) else []
        )
        dtypes = tuple(dict.fromkeys(str(n).strip() for n in names if str(n).strip()))
        if not dtypes or any(d not in MATMUL_DTYPES for d in dtypes):
            raise _bad("matmul_dtypes", raw, "one or more of " + ", ".join(MATMUL_DTYPES))
        if backend == "cpu" and "bfloat16" in dtypes:
            raise UsageError(
                "kernel option matmul_dtypes asks for bfloat16 under the Triton interpreter, which has no bfloat16",
                "use matmul_dtypes=float32 or float16 on the CPU backend",
            )
        changes["matmul_dtypes"] = dtypes
    if "warn_fraction" in opts:
        try:
            fraction = float(opts["warn_fraction"])
        except (TypeError, ValueError):
            raise _bad("warn_fraction", opts["warn_fraction"], "a number between 0 and 1") from None
        if not math.isfinite(fraction) or not 0 <= fraction <= 1:
            raise _bad("warn_fraction", opts["warn_fraction"], "a number between 0 and 1")
        changes["warn_fraction"] = fraction
    return replace(sizes, **changes) if changes else sizes
