"""What a smoke kernel module declares about itself, so tools find it without a hand list.

A kernel module (``rocmkit/kernels/<name>.py``) sets ``SPEC = KernelSpec(...)``;
:func:`rocmkit.kernels.aot.kernel_specs` finds every module that does. Pure data: no
torch, no triton (the kernel modules themselves import triton).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

# Triton's pointer and scalar type names for the torch dtypes the kernels use.
TRITON_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "int32": "i32"}


@dataclass(frozen=True, kw_only=True)
class Build:
    """One kernel variant to compile ahead of time: the jitted function and its specialisation."""

    kernel: str  # "matmul"
    variant: str  # "float16 128x256x16 g1 w4 s2"
    fn: Any
    signature: dict[str, str]
    constexprs: dict[str, Any]
    num_warps: int = 4
    num_stages: int = 2
    # What Triton's launcher specialises on at the GPU sizes: arguments divisible by 16
    # (torch's allocations are; so are 4096-sized dims and strides) and integers equal to 1
    # (unit strides), which become constants. Without them the compiler neither vectorises
    # nor pipelines, and the shared memory reported would not be what a launch needs.
    divisible_by_16: tuple[str, ...] = ()
    ones: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class KernelSpec:
    """A smoke kernel's declaration: its name and what ``triton.codegen`` compiles of it."""

    name: str  # the module's name: "vector_add"
    # The variants the doctor launches at the GPU sizes, for backend "rocm" or "cuda".
    aot_builds: Callable[[str], Iterator[Build]]
    # Where its builds come in the codegen report (lower first; ties by name): the report
    # lists kernels in the order they have always been listed, and a new one comes last.
    order: int = 100
