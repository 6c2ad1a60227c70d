"""Compile every smoke kernel ahead of time for a GPU target, with no GPU present.

Triton compiles for any target it has a backend for (``GPUTarget("hip", "gfx942", 64)``,
``GPUTarget("cuda", 90, 32)``) without a driver, so a CPU machine or an image build can
prove that this Triton generates code for a GPU it has never seen, and how much shared
memory (LDS) each tile needs. It does not prove the code runs correctly: only a launch
on the device does.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Build:
    """One kernel variant to compile: the jitted function and its specialisation."""

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
class Built:
    kernel: str
    variant: str
    target: str  # "hip:gfx942", "cuda:90"
    shared_bytes: int
    seconds: float
    binary: str  # "hsaco" or "cubin"


_TRITON_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def builds(backend: str) -> Iterator[Build]:
    """What the doctor launches on ``backend`` ("rocm" or "cuda"), kernel by kernel."""
    from rocmkit.kernels import atomics, layernorm, matmul, softmax, vector_add

    yield Build(
        kernel="vector_add",
        variant="float32",
        fn=vector_add._add_kernel,
        signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32"},
        constexprs={"BLOCK_SIZE": vector_add.BLOCK_SIZE},
        divisible_by_16=("x_ptr", "y_ptr", "out_ptr"),
    )
    block = 4096  # the GPU softmax shape has 3001 columns
    yield Build(
        kernel="softmax",
        variant=f"float32 block {block}",
        fn=softmax._softmax_kernel,
        signature={
            "out_ptr": "*fp32",
            "in_ptr": "*fp32",
            "in_row_stride": "i32",
            "out_row_stride": "i32",
            "n_cols": "i32",
        },
        constexprs={"BLOCK_SIZE": block},
        num_warps=softmax._num_warps(block),
        divisible_by_16=("out_ptr", "in_ptr"),
    )
    ln_block = 8192  # 5003 fp16 columns, one block per row
    yield Build(
        kernel="layernorm",
        variant=f"float16 block {ln_block}",
        fn=layernorm._layer_norm_fwd_kernel,
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
        constexprs={"BLOCK_SIZE": ln_block},
        num_warps=min(max(ln_block // 256, 1), 8),
        divisible_by_16=("x_ptr", "y_ptr", "w_ptr", "b_ptr", "mean_ptr", "rstd_ptr"),
    )
    yield Build(
        kernel="atomics",
        variant="int32 256 bins",
        fn=atomics._histogram_kernel,
        signature={"values_ptr": "*i32", "hist_ptr": "*i32", "n_values": "i32"},
        constexprs={"NUM_BINS": 256, "BLOCK_SIZE": atomics.BLOCK_SIZE},
        divisible_by_16=("values_ptr", "hist_ptr"),
    )
    for dtype in ("float16", "bfloat16"):
        t = "*" + _TRITON_DTYPES[dtype]
        for cfg in matmul.configs_for(backend):
            yield Build(
                kernel="matmul",
                variant=f"{dtype} {cfg.label()}",
                fn=matmul._matmul_kernel,
                signature={
                    "a_ptr": t,
                    "b_ptr": t,
                    "c_ptr": t,
                    **{
                        k: "i32"
                        for k in (
                            "M",
                            "N",
                            "K",
                            "stride_am",
                            "stride_ak",
                            "stride_bk",
                            "stride_bn",
                            "stride_cm",
                            "stride_cn",
                        )
                    },
                },
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
                divisible_by_16=(
                    "a_ptr",
                    "b_ptr",
                    "c_ptr",
                    "M",
                    "N",
                    "K",
                    "stride_am",
                    "stride_bk",
                    "stride_cm",
                ),
                ones=("stride_ak", "stride_bn", "stride_cn"),
            )


def parse_target(text: str) -> tuple[str, str | int, int]:
    """``gfx942`` -> ("rocm", "gfx942", 64); ``gfx1100`` -> ("rocm", "gfx1100", 32);
    ``sm_90`` or ``9.0`` -> ("cuda", 90, 32). Raises ValueError for anything else."""
    t = text.strip().lower().split(":", 1)[0]
    if t.startswith("gfx") and len(t) > 3:
        # GCN and CDNA (three characters: gfx803, gfx90a, gfx942) run 64-wide wavefronts;
        # RDNA (four: gfx1030, gfx1100, gfx1151) runs 32-wide, which Triton compiles for there.
        return "rocm", t, 64 if len(t) == 6 else 32
    digits = t.removeprefix("sm_").removeprefix("sm").replace(".", "").removesuffix("a")
    if (digits.isascii() and digits.isdigit()) and len(digits) in (2, 3):
        return "cuda", int(digits), 32
    raise ValueError(f"not a GPU target: {text!r} (expected e.g. gfx942, gfx1100, sm_90 or 9.0)")


def compile_all(backend: str, arch: str | int, warp_size: int) -> list[Built]:
    """Compile every build for one target; a compiler error propagates with its message."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    target = GPUTarget("hip" if backend == "rocm" else "cuda", arch, warp_size)
    out: list[Built] = []
    for b in builds(backend):
        # Constexprs (and the unit strides the launcher turns into constants) are part of the
        # signature too, as Triton's own launcher passes them.
        constexprs = {**b.constexprs, **dict.fromkeys(b.ones, 1)}
        signature = {**b.signature, **{k: "constexpr" for k in constexprs}}
        names = list(b.fn.arg_names)
        attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in b.divisible_by_16}
        src = ASTSource(fn=b.fn, signature=signature, constexprs=constexprs, attrs=attrs)
        start = time.perf_counter()
        kernel = triton.compile(
            src, target=target, options={"num_warps": b.num_warps, "num_stages": b.num_stages}
        )
        out.append(
            Built(
                kernel=b.kernel,
                variant=b.variant,
                target=f"{target.backend}:{arch}",
                shared_bytes=int(kernel.metadata.shared),
                seconds=time.perf_counter() - start,
                binary="hsaco" if "hsaco" in kernel.asm else "cubin",
            )
        )
    return out


def compile_targets(targets: list[str]) -> dict[str, Any]:
    """Compile for each target; per target either its builds or the compiler's error."""
    import triton

    out: dict[str, Any] = {"triton": getattr(triton, "__version__", None), "targets": {}}
    for text in targets:
        try:
            backend, arch, warp = parse_target(text)
        except ValueError as exc:
            out["targets"][text] = {"error": str(exc), "bad_name": True}
            continue
        start = time.perf_counter()
        try:
            built = compile_all(backend, arch, warp)
        except (TypeError, AttributeError, KeyError, ImportError) as exc:
            # Not the compiler refusing the arch: this Triton's ahead-of-time API differs from
            # the one rocmkit drives (written against Triton 3.8).
            out["targets"][text] = {"error": f"{type(exc).__name__}: {exc}".strip()[:2000], "api": True}
            continue
        except Exception as exc:  # the compiler's own error is the finding
            out["targets"][text] = {"error": f"{type(exc).__name__}: {exc}".strip()[:2000]}
            continue
        out["targets"][text] = {
            "seconds": round(time.perf_counter() - start, 3),
            "builds": [
                {"kernel": b.kernel, "variant": b.variant, "shared_bytes": b.shared_bytes, "binary": b.binary}
                for b in built
            ],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m rocmkit.kernels.aot gfx942 sm_90``: JSON on stdout. Must start without
    TRITON_INTERPRET=1, which replaces even triton.language's own helpers with interpreted ones."""
    import json
    import os
    import sys

    args = sys.argv[1:] if argv is None else argv
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        print("rocmkit.kernels.aot: unset TRITON_INTERPRET to compile ahead of time", file=sys.stderr)
        return 2
    print(json.dumps(compile_targets(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
