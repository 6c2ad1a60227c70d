"""Matrix multiply with ``tl.dot``: the tensor-core / matrix-core path.

Grouped tile ordering for L2 reuse and fp32 accumulation, after the Triton tutorial
03-matrix-multiplication (python/tutorials/03-matrix-multiplication.py). fp16 and bf16
on GPUs; fp32 under the interpreter (which has no bfloat16 arithmetic). Masks on every
edge, so shapes need not be multiples of the tile.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import triton
import triton.language as tl

from rocmkit.kernels.metrics import tflop_per_s
from rocmkit.kernels.spec import TRITON_DTYPES, Build, CannotRun, KernelRun, Measurement, Report

# Read without importing this module (rocmkit/kernels/catalog.py): literals only.
CHECK = {
    "level": 2,
    "order": 2,
    "description": "tl.dot matmul (fp16 and bf16 on GPUs, fp32 interpreted): correctness, TFLOP/s vs torch.matmul",
    "timeout_s": 600.0,
    "options": {
        "matmul_shape": {
            "help": "M, N, K of the matmul",
            "kind": "shape",
            "rank": 3,
            "gpu": [4096, 4096, 4096],
            "interpreter": [192, 160, 208],  # partial tiles on N and K with 64x64x64 tiles
        },
        "matmul_dtypes": {
            "help": "dtypes of the matmul: float16, bfloat16, float32 (comma-separated)",
            "kind": "dtypes",
            "choices": ["float16", "bfloat16", "float32"],
            # The interpreter has no bfloat16 arithmetic (Triton's debugging guide).
            "interpreter_choices": ["float32", "float16"],
            "gpu": ["float16", "bfloat16"],
            "interpreter": ["float32"],
        },
    },
    "tolerances": {
        "float16": {
            "atol": 1e-2,
            "rtol": 0.0,
            "source": "triton tutorial 03-matrix-multiplication: atol 1e-2, rtol 0 for fp16",
        },
        "bfloat16": {"atol": 1e-2, "rtol": 1e-2, "source": "bf16-ulp"},
        "float32": {"atol": 1e-4, "rtol": 1e-4, "source": "fp32-reduction"},
    },
    # CDNA2 matrix cores compute fp16/bf16 at reduced precision and flush denormals.
    "arch_tolerances": {
        "cdna2": {
            "float16": {"atol": 1e-2, "rtol": 1e-2, "source": "cdna2-tutorial-03"},
            "bfloat16": {"atol": 2e-2, "rtol": 2e-2, "source": "cdna2-tutorial-03"},
        },
    },
}


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


def fp32_matmul(torch: Any, a: Any, b: Any) -> Any:
    """``a @ b`` in full fp32, with TF32 off even where a site enables it globally."""
    matmul_backend = torch.backends.cuda.matmul
    saved = matmul_backend.allow_tf32
    matmul_backend.allow_tf32 = False
    try:
        return torch.matmul(a.float(), b.float())
    finally:
        matmul_backend.allow_tf32 = saved


def run(k: KernelRun) -> Report:
    """The check: every tile in every dtype against an fp32 reference; the fastest correct
    tile against ``torch.matmul`` in TFLOP/s."""
    import torch

    m_, n_, k_ = k.size("matmul_shape")
    # fp16 and bf16 (the matrix-core dtypes) on GPUs; fp32 under the interpreter.
    configs = configs_for(k.backend)
    runs: list[Measurement] = []
    for name in k.size("matmul_dtypes"):
        dtype = getattr(torch, name)
        gen = k.generator()
        # Scaled so the product is ~N(0, 1) at any K: fp16 keeps ~3 decimal digits there,
        # which is what the tutorial's atol 1e-2 assumes.
        scale = k_**-0.25
        a = (torch.randn(m_, k_, generator=gen) * scale).to(k.torch_device, dtype)
        b = (torch.randn(k_, n_, generator=gen) * scale).to(k.torch_device, dtype)
        # The reference accumulates and rounds once, in fp32: torch's own fp16 GEMM may
        # reduce split-K partial sums in fp16 (allow_fp16_reduced_precision_reduction),
        # which would put torch's rounding, not Triton's, into the comparison.
        expected = fp32_matmul(torch, a, b).to(dtype)
        ref_ms: list[float] = []

        def reference(a: Any = a, b: Any = b, ref_ms: list[float] = ref_ms) -> float:
            if not ref_ms:
                ref_ms.append(k.time_ms(lambda: torch.matmul(a, b)))
            return tflop_per_s(flops(m_, n_, k_), ref_ms[0])

        tried: list[Measurement] = []
        refused: dict[str, str] = {}
        for cfg in configs:
            try:
                measured = k.measure(
                    kernel=functools.partial(matmul, a, b, cfg),
                    expected=expected,
                    dtype=name,
                    label=name,
                    work=flops(m_, n_, k_),
                    unit="TFLOP/s",
                    reference=reference,
                    reference_name="torch.matmul",
                    details={"config": cfg.label()},
                )
            except Exception as exc:
                # A tile too big for this GPU's shared memory / LDS is that tile's problem,
                # not the node's; any other error propagates and the check errors out.
                if type(exc).__name__ != "OutOfResources":
                    raise
                refused[cfg.label()] = str(exc).splitlines()[0][:200]
                continue
            tried.append(measured)
        if not tried:
            raise CannotRun(
                f"every matmul tile ran out of GPU resources in {name}: {refused}",
                "report this with `rocmkit doctor --json`; the tile list is in rocmkit/kernels/matmul.py",
            )
        # Every tile configuration must be right; the fastest one speaks for speed.
        bad = [t for t in tried if not t.comparison.ok]
        best = bad[0] if bad else max(tried, key=lambda t: t.throughput)
        tried_summary = {
            t.details["config"]: {"tflops": round(t.throughput, 3), "ok": t.comparison.ok} for t in tried
        }
        runs.append(
            replace(best, details={**best.details, "configs_tried": tried_summary, "configs_refused": refused})
        )
    return Report(what=f"tl.dot matmul {m_}x{n_}x{k_}", runs=runs, details={"shape": [m_, n_, k_]})


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
