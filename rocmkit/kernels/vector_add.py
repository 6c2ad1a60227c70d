"""Masked vector add: ``out = x + y`` over an odd number of elements.

The odd size makes the last block partial, so a broken mask (reads or writes past the
end) shows up as wrong values or a memory fault. After the Triton tutorial
01-vector-add (python/tutorials/01-vector-add.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import triton
import triton.language as tl

from rocmkit.kernels.spec import Build, KernelRun, Report

# Read without importing this module (rocmkit/kernels/catalog.py): literals only.
CHECK = {
    "level": 1,
    "order": 0,
    "description": "masked vector add over an odd size: correctness, compile time, GB/s vs a device copy",
    "timeout_s": 180.0,
    "options": {
        "vector_add_n": {
            "help": "elements in the vector add",
            "kind": "positive_int",
            "gpu": 16_777_223,  # 2**24 + 7: an odd size, so the last block is partial
            "interpreter": 131_079,  # 2**17 + 7
        },
    },
    "tolerances": {
        "float32": {
            "atol": 0.0,
            "rtol": 0.0,
            "source": "triton tutorial 01-vector-add: IEEE add is correctly rounded, so results match bit for bit",
        },
    },
}

BLOCK_SIZE = 1024


@triton.jit  # type: ignore[untyped-decorator]
def _add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):  # type: ignore[no-untyped-def]
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x: Any, y: Any, out: Any | None = None) -> Any:
    """``x + y`` for two contiguous 1-D tensors of the same shape and dtype."""
    import torch

    if out is None:
        out = torch.empty_like(x)
    n = out.numel()
    grid = (triton.cdiv(n, BLOCK_SIZE),)
    _add_kernel[grid](x, y, out, n, BLOCK_SIZE=BLOCK_SIZE)
    return out


def bytes_moved(n_elements: int, element_size: int) -> int:
    """Two reads and one write per element (the tutorial's ``12 * size`` for fp32)."""
    return 3 * n_elements * element_size


def run(k: KernelRun) -> Report:
    """The check: ``x + y`` against torch's, in GB/s against a device copy."""
    import torch

    gen = k.generator()
    n = k.size("vector_add_n")
    x = torch.randn(n, generator=gen).to(k.torch_device)
    y = torch.randn(n, generator=gen).to(k.torch_device)
    out = torch.empty_like(x)
    m = k.vs_copy(
        kernel=lambda: add(x, y, out),
        expected=x + y,
        dtype="float32",
        label=f"float32 n={n}",
        work=bytes_moved(n, x.element_size()),
        copy_n_bytes=n * x.element_size(),
    )
    return Report(what="vector add", runs=[m], details={"n": n})


def aot_builds(backend: str) -> Iterator[Build]:
    """The variant the doctor launches: fp32 at one block size, on either backend."""
    yield Build(
        kernel="vector_add",
        variant="float32",
        fn=_add_kernel,
        signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32"},
        constexprs={"BLOCK_SIZE": BLOCK_SIZE},
        divisible_by_16=("x_ptr", "y_ptr", "out_ptr"),
    )
