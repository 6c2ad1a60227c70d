"""Fused row-wise softmax over an irregular 2-D shape (columns not a power of two).

One program per row loads the whole row once, subtracts the row maximum for numerical
stability, exponentiates, normalises and stores: one read and one write per element.
After the Triton tutorial 02-fused-softmax (python/tutorials/02-fused-softmax.py),
which uses the shape 1823x781 to exercise the column mask.
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
    "order": 1,
    "description": "fused row softmax over an irregular shape: correctness, compile time, GB/s vs a device copy",
    "timeout_s": 180.0,
    "options": {
        "softmax_shape": {
            "help": "rows, columns of the softmax input",
            "kind": "shape",
            "rank": 2,
            "gpu": [8192, 3001],
            "interpreter": [129, 781],  # the tutorial's 781 columns; fewer rows, one program each
        },
    },
    "tolerances": {
        "float32": {
            "atol": 1e-8,
            "rtol": 1e-5,
            "source": "triton tutorial 02-fused-softmax: torch.allclose defaults (rtol 1e-5, atol 1e-8)",
        },
    },
}


@triton.jit  # type: ignore[untyped-decorator]
def _softmax_kernel(  # type: ignore[no-untyped-def]
    out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    y = num / tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def _num_warps(block_size: int) -> int:
    # The tutorial's heuristic: more warps for longer rows so each thread keeps a few values.
    if block_size >= 4096:
        return 16
    if block_size >= 2048:
        return 8
    return 4


def softmax(x: Any) -> Any:
    """Softmax over the last dimension of a 2-D tensor."""
    import torch

    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    _softmax_kernel[(n_rows,)](
        out, x, x.stride(0), out.stride(0), n_cols, BLOCK_SIZE=block, num_warps=_num_warps(block)
    )
    return out


def bytes_moved(n_rows: int, n_cols: int, element_size: int) -> int:
    """One read and one write of the matrix: the floor any softmax must move."""
    return 2 * n_rows * n_cols * element_size


def run(k: KernelRun) -> Report:
    """The check: row softmax against ``torch.softmax``, in GB/s against a device copy."""
    import torch

    rows, cols = k.size("softmax_shape")
    x = torch.randn(rows, cols, generator=k.generator()).to(k.torch_device)
    m = k.vs_copy(
        kernel=lambda: softmax(x),
        expected=torch.softmax(x, dim=-1),
        dtype="float32",
        label=f"float32 {rows}x{cols}",
        work=bytes_moved(rows, cols, x.element_size()),
        copy_n_bytes=x.numel() * x.element_size(),
    )
    return Report(what="fused softmax", runs=[m], details={"shape": [rows, cols]})


def aot_builds(backend: str) -> Iterator[Build]:
    block = 4096  # the GPU softmax shape has 3001 columns
    yield Build(
        kernel="softmax",
        variant=f"float32 block {block}",
        fn=_softmax_kernel,
        signature={
            "out_ptr": "*fp32",
            "in_ptr": "*fp32",
            "in_row_stride": "i32",
            "out_row_stride": "i32",
            "n_cols": "i32",
        },
        constexprs={"BLOCK_SIZE": block},
        num_warps=_num_warps(block),
        divisible_by_16=("out_ptr", "in_ptr"),
    )
