"""Matrix multiply with ``tl.dot``: the tensor-core / matrix-core path.

Grouped tile ordering for L2 reuse and fp32 accumulation, after the Triton tutorial
03-matrix-multiplication (python/tutorials/03-matrix-multiplication.py). fp16 and bf16
on GPUs; fp32 under the interpreter (which has no bfloat16 arithmetic). Masks on every
edge, so shapes need not be multiples of the tile.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import triton
import triton.language as tl

from rocmkit.kernels.spec import TRITON_DTYPES, Build, KernelSpec


@dataclass(frozen=True, kw_only=True)
class TileConfig:
    block_m: int
    block_n: int
    block_k: int
    group_m: int = 8
    num_warps: int = 4
    num_stages: int = 2

    def label(self) -> str:
        return (
            f"{self.block_m}x{self.block_n}x{self.block_k} g{self.group_m} "
            f"w{self.num_warps} s{self.num_stages}"
        )


# Tiles from the Triton tutorial's autotune lists (get_cuda_autotune_config and
# get_hip_autotune_config in 03-matrix-multiplication), first four of each. The check
# times each and keeps the fastest, so one poor pick does not flag a good node. AMD's
# LDS is 64 KiB (NVIDIA Hopper has 228 KiB of shared memory), hence the small-K tiles
# and two stages there; `waves_per_eu` is left out because only the HIP backend knows it.
CUDA_CONFIGS: tuple[TileConfig, ...] = (
    TileConfig(block_m=128, block_n=256, block_k=64, group_m=8, num_warps=8, num_stages=3),
    TileConfig(block_m=64, block_n=256, block_k=32, group_m=8, num_warps=4, num_stages=4),
    TileConfig(block_m=128, block_n=128, block_k=32, group_m=8, num_warps=4, num_stages=4),
    TileConfig(block_m=128, block_n=64, block_k=32, group_m=8, num_warps=4, num_stages=4),
)
HIP_CONFIGS: tuple[TileConfig, ...] = (
    TileConfig(block_m=128, block_n=256, block_k=16, group_m=1, num_warps=4, num_stages=2),
    TileConfig(block_m=256, block_n=256, block_k=16, group_m=4, num_warps=8, num_stages=2),
    TileConfig(block_m=128, block_n=128, block_k=32, group_m=1, num_warps=8, num_stages=2),
    TileConfig(block_m=64, block_n=128, block_k=32, group_m=8, num_warps=4, num_stages=2),
)
# Under the interpreter every program instance is simulated with numpy, one at a time:
# few, large tiles are fastest.
INTERPRETER_CONFIG = TileConfig(block_m=64, block_n=64, block_k=64, group_m=4)


def configs_for(backend: str) -> tuple[TileConfig, ...]:
    """The tiles to try on ``backend`` ("rocm", "cuda" or "cpu")."""
    if backend == "cpu":
        return (INTERPRETER_CONFIG,)
    return HIP_CONFIGS if backend == "rocm" else CUDA_CONFIGS


@triton.jit  # type: ignore[untyped-decorator]
def _matmul_kernel(  # type: ignore[no-untyped-def]
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    IEEE_FP32: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    # Rows and columns past the edge wrap around (the tutorial's `% M`) instead of being
    # masked, so the loads stay unpredicated; the store below drops them.
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        # A constexpr `if`: Triton compiles only the branch taken. `acc +=` rather than
        # tl.dot's `acc=` keeps the kernel valid for older Triton builds too.
        if IEEE_FP32:
            acc += tl.dot(a, b, input_precision="ieee")
        else:
            acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def matmul(a: Any, b: Any, config: TileConfig = INTERPRETER_CONFIG) -> Any:
    """``a @ b`` for 2-D tensors of one dtype; the result has that dtype."""
    import torch

    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions differ: {tuple(a.shape)} @ {tuple(b.shape)}")
    m, k = a.shape
    _, n = b.shape
    c = torch.empty((m, n), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(m, config.block_m) * triton.cdiv(n, config.block_n),)
    # fp32 inputs would silently go through TF32 on NVIDIA (and CDNA3) by default; "ieee"
    # keeps the product exact enough to compare with torch at fp32 tolerance. fp16/bf16
    # take tl.dot's default, the native matrix-core path.
    ieee_fp32 = a.dtype == torch.float32
    _matmul_kernel[grid](
        a,
        b,
        c,
        m,
        n,
        k,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BLOCK_M=config.block_m,
        BLOCK_N=config.block_n,
        BLOCK_K=config.block_k,
        GROUP_M=config.group_m,
        IEEE_FP32=ieee_fp32,
        num_warps=config.num_warps,
        num_stages=config.num_stages,
    )
    return c


def flops(m: int, n: int, k: int) -> int:
    """One multiply and one add per inner-product term."""
    return 2 * m * n * k


_INT_ARGS = ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn")


def aot_builds(backend: str) -> Iterator[Build]:
    """Every tile the doctor tries on ``backend``, in fp16 and bf16 (the GPU dtypes)."""
    for dtype in ("float16", "bfloat16"):
        t = "*" + TRITON_DTYPES[dtype]
        for cfg in configs_for(backend):
            yield Build(
                kernel="matmul",
                variant=f"{dtype} {cfg.label()}",
                fn=_matmul_kernel,
                signature={"a_ptr": t, "b_ptr": t, "c_ptr": t, **dict.fromkeys(_INT_ARGS, "i32")},
                constexprs={
                    "BLOCK_M": cfg.block_m,
                    "BLOCK_N": cfg.block_n,
                    "BLOCK_K": cfg.block_k,
                    "GROUP_M": cfg.group_m,
                    "IEEE_FP32": False,
                },
                num_warps=cfg.num_warps,
                num_stages=cfg.num_stages,
                # 4096^3, row-major: every size and leading stride divisible by 16.
                divisible_by_16=("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm"),
                ones=("stride_ak", "stride_bn", "stride_cn"),
            )


SPEC = KernelSpec(name="matmul", aot_builds=aot_builds, order=4)
