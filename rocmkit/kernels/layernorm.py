"""Layer norm forward: a reduction (mean and variance per row) followed by an affine map.

One program per row walks the row in blocks three times (mean, variance, normalise), so
rows longer than one block exercise the loop and the tail mask. After the Triton tutorial
05-layer-norm (python/tutorials/05-layer-norm.py), forward pass only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import triton
import triton.language as tl

from rocmkit.kernels.spec import Build, KernelRun, Report

# Read without importing this module (rocmkit/kernels/catalog.py): literals only.
CHECK = {
    "level": 2,
    "order": 3,
    "description": "layer norm forward (a row reduction): correctness, compile time, GB/s vs a device copy",
    "timeout_s": 180.0,
    "options": {
        "layernorm_shape": {
            "help": "rows, columns of the layer norm input",
            "kind": "shape",
            "rank": 2,
            "gpu": [8192, 5003],
            "interpreter": [37, 1531],
        },
        "layernorm_block": {
            "help": "columns per block in the layer norm kernel",
            "kind": "power_of_two",
            "gpu": None,  # the kernel's own choice: one block per row
            "interpreter": 512,  # three blocks per row, the last one partial
        },
    },
    "tolerances": {
        "float16": {"atol": 1e-2, "rtol": 0.0, "source": "triton tutorial 05-layer-norm: atol 1e-2, rtol 0 for fp16"},
        "bfloat16": {"atol": 2e-2, "rtol": 1e-2, "source": "bf16-ulp"},
        "float32": {"atol": 1e-4, "rtol": 1e-4, "source": "fp32-reduction"},
    },
}


@triton.jit  # type: ignore[untyped-decorator]
def _layer_norm_fwd_kernel(  # type: ignore[no-untyped-def]
    x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr
):
    row = tl.program_id(0)
    x_ptr += row * row_stride
    y_ptr += row * row_stride
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        d = tl.where(cols < n_cols, x - mean, 0.0)
        acc += d * d
    var = tl.sum(acc, axis=0) / n_cols
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for off in range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        w = tl.load(w_ptr + cols, mask=mask).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask).to(tl.float32)
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_ptr + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def layer_norm(x: Any, weight: Any, bias: Any, eps: float = 1e-5, block_size: int | None = None) -> Any:
    """``torch.nn.functional.layer_norm(x, (n_cols,), weight, bias, eps)`` for a 2-D ``x``."""
    import torch

    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    mean = torch.empty((n_rows,), dtype=torch.float32, device=x.device)
    rstd = torch.empty((n_rows,), dtype=torch.float32, device=x.device)
    if block_size is None:
        # The tutorial caps a block at 64 KB of the input type; longer rows loop.
        block_size = min(65536 // x.element_size(), triton.next_power_of_2(n_cols))
    num_warps = min(max(block_size // 256, 1), 8)
    _layer_norm_fwd_kernel[(n_rows,)](
        x, y, weight, bias, mean, rstd, x.stride(0), n_cols, eps, BLOCK_SIZE=block_size, num_warps=num_warps
    )
    return y


def bytes_moved(n_rows: int, n_cols: int, element_size: int) -> int:
    """One read and one write of the matrix (weights and the per-row statistics are small)."""
    return 2 * n_rows * n_cols * element_size


def run(k: KernelRun) -> Report:
    """The check: against ``torch.nn.functional.layer_norm``, in GB/s against a device copy."""
    import torch

    # fp16 on GPUs as in the tutorial; fp32 under the interpreter.
    dtype = torch.float32 if k.interpreted else torch.float16
    name = str(dtype).removeprefix("torch.")
    gen = k.generator()
    rows, cols = k.size("layernorm_shape")
    block = k.size("layernorm_block")
    x = torch.randn(rows, cols, generator=gen).to(k.torch_device, dtype)
    w = torch.rand(cols, generator=gen).to(k.torch_device, dtype)
    b = torch.rand(cols, generator=gen).to(k.torch_device, dtype)
    eps = 1e-5
    m = k.vs_copy(
        kernel=lambda: layer_norm(x, w, b, eps, block_size=block),
        expected=torch.nn.functional.layer_norm(x, (cols,), w, b, eps),
        dtype=name,
        label=f"{name} {rows}x{cols}",
        work=bytes_moved(rows, cols, x.element_size()),
        copy_n_bytes=x.numel() * x.element_size(),
    )
    return Report(what="layer norm", runs=[m], details={"shape": [rows, cols], "block": block})


def aot_builds(backend: str) -> Iterator[Build]:
    block = 8192  # 5003 fp16 columns, one block per row
    yield Build(
        kernel="layernorm",
        variant=f"float16 block {block}",
        fn=_layer_norm_fwd_kernel,
        signature={
            "x_ptr": "*fp16",
            "y_ptr": "*fp16",
            "w_ptr": "*fp16",
            "b_ptr": "*fp16",
            "mean_ptr": "*fp32",
            "rstd_ptr": "*fp32",
            "row_stride": "i32",
            "n_cols": "i32",
            "eps": "fp32",
        },
        constexprs={"BLOCK_SIZE": block},
        num_warps=min(max(block // 256, 1), 8),
        divisible_by_16=("x_ptr", "y_ptr", "w_ptr", "b_ptr", "mean_ptr", "rstd_ptr"),
    )
