"""Problem sizes and thresholds for the kernel checks, per backend, overridable by options.

Each kernel module declares its own sizes (``CHECK["options"]``, read by
:mod:`rocmkit.kernels.catalog`): GPU sizes large enough to measure bandwidth and TFLOP/s,
interpreter sizes small enough that every kernel check together finishes in seconds on a
CPU, yet still irregular, so every mask is exercised. Here are the options every kernel
check shares (``repeats``, ``warn_fraction``) and those of the torch attention check, which
is not a Triton kernel.

Options come from ``ctx.options``, else from ``ROCMKIT_KERNEL_<KEY>`` environment variables
(:func:`merged_options`); a shape is a list of integers or a string such as ``"4096x4096x4096"``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rocmkit.kernels.catalog import CatalogError, kernels
from rocmkit.kernels.options import Option

# Warn when a kernel reaches less than this fraction of the torch reference measured in
# the same run (a device copy for bandwidth, torch.matmul for TFLOP/s).
DEFAULT_WARN_FRACTION = 0.5

SHARED: dict[str, Option] = {
    o.key: o
    for o in (
        Option(
            key="attention_shape",
            help="batch, heads, sequence length, head dim of the attention check",
            kind="shape",
            rank=4,
            gpu=(4, 16, 2048, 64),
            interpreter=(2, 4, 128, 64),
        ),
        Option(
            key="repeats",
            help="timed calls per measurement on the CPU, and the GPU fallback",
            kind="positive_int",
            gpu=20,
            interpreter=3,
        ),
        Option(
            key="warn_fraction",
            help="warn below this fraction of the torch reference (GPU only)",
            kind="fraction",
            gpu=DEFAULT_WARN_FRACTION,
            interpreter=DEFAULT_WARN_FRACTION,
        ),
    )
}

# Options read by the checks themselves rather than turned into sizes.
CHECK_OPTION_KEYS: dict[str, str] = {
    "codegen_targets": "GPU archs triton.codegen compiles for, e.g. gfx942,sm_90",
    "codegen_timeout_s": "seconds one target's ahead-of-time compile may take",
    "attention_min_vs_math": "warn when a fused attention backend is below this fraction of math (GPU)",
}
ENV_PREFIX = "ROCMKIT_KERNEL_"


@functools.cache
def all_options() -> dict[str, Option]:
    """Every kernel's options (in report order), then the shared ones."""
    out: dict[str, Option] = {}
    for k in kernels():
        for key, option in k.options.items():
            if key in SHARED or key in CHECK_OPTION_KEYS:
                raise CatalogError(
                    f"{k.path}: option {key!r} is one every check shares (rocmkit/kernels/sizes.py)",
                    f"give {k.name}'s option a name of its own",
                )
            out[key] = option
    return {**out, **SHARED}


def option_keys() -> dict[str, str]:
    """Every size option's key, with what it sets (``rocmkit doctor --list`` shows them)."""
    return {key: o.help for key, o in all_options().items()}


@dataclass(frozen=True)
class KernelSizes:
    """Every size option's value for one backend: ``sizes["matmul_shape"]``."""

    values: Mapping[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @property
    def repeats(self) -> int:
        return int(self.values["repeats"])

    @property
    def warn_fraction(self) -> float:
        return float(self.values["warn_fraction"])

    @property
    def attention_shape(self) -> tuple[int, int, int, int]:
        b, h, s, d = self.values["attention_shape"]
        return (b, h, s, d)


@functools.cache
def _defaults(interpreted: bool) -> KernelSizes:
    backend = "cpu" if interpreted else "rocm"
    return KernelSizes({key: o.default(backend) for key, o in all_options().items()})


def defaults(backend: str) -> KernelSizes:
    """The declared sizes for ``backend``: the interpreter's for "cpu", else the GPU ones."""
    return _defaults(backend == "cpu")


def merged_options(options: Mapping[str, Any] | None, env: Mapping[str, str] | None) -> dict[str, Any]:
    """``ctx.options`` with ``ROCMKIT_KERNEL_<KEY>`` variables filling the keys it lacks, so
    ``ROCMKIT_KERNEL_MATMUL_SHAPE=1024x1024x1024 rocmkit doctor`` works from any shell or job
    script. Every such variable is taken: a check reads only the keys it declares."""
    out = dict(options or {})
    for name, value in (env or {}).items():
        key = name[len(ENV_PREFIX) :].lower() if name.startswith(ENV_PREFIX) else ""
        if key and key not in out and value:
            out[key] = value
    return out


def kernel_sizes(backend: str, options: Mapping[str, Any] | None = None) -> KernelSizes:
    """The sizes for ``backend`` ("rocm", "cuda" or "cpu"), with ``options`` applied; a bad
    value is a :class:`~rocmkit.errors.UsageError` naming the key and what it should be."""
    base = defaults(backend)
    opts = dict(options or {})
    changes = {key: o.parse(opts[key], backend) for key, o in all_options().items() if key in opts}
    return KernelSizes({**base.values, **changes}) if changes else base
