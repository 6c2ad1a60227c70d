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

from rocmkit.arch import sm_number, strip_features, wavefront_size
from rocmkit.kernels.catalog import kernels
from rocmkit.kernels.spec import Build


@dataclass(frozen=True, kw_only=True)
class Built:
    kernel: str
    variant: str
    target: str  # "hip:gfx942", "cuda:90"
    shared_bytes: int
    seconds: float
    binary: str  # "hsaco" or "cubin"


def builds(backend: str) -> Iterator[Build]:
    """What the doctor launches on ``backend`` ("rocm" or "cuda"), kernel by kernel: each
    kernel module the catalog finds, in report order, so a new kernel is one new module.
    Imports them (and so triton): call it in a compiler child."""
    import importlib

    import rocmkit.kernels as package

    for k in kernels():
        module = importlib.import_module(f"{package.__name__}.{k.name}")
        yield from module.aot_builds(backend)


def parse_target(text: str) -> tuple[str, str | int, int]:
    """``gfx942`` -> ("rocm", "gfx942", 64); ``gfx1100`` -> ("rocm", "gfx1100", 32);
    ``sm_90`` or ``9.0`` -> ("cuda", 90, 32). Raises ValueError for anything else."""
    t = strip_features(text)
    if t.startswith("gfx") and len(t) > 3:
        return "rocm", t, wavefront_size(t)
    number = sm_number(t)
    if number is not None:
        return "cuda", number, 32
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
    """``python -m rocmkit.kernels.aot gfx942 sm_90``: JSON in the result file of
    :func:`rocmkit.pyenv.run_json` (Triton and LLVM print freely), or on stdout when run
    by hand. Must start without
    TRITON_INTERPRET=1, which replaces even triton.language's own helpers with interpreted ones."""
    import json
    import os
    import sys

    args = sys.argv[1:] if argv is None else argv
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        print("rocmkit.kernels.aot: unset TRITON_INTERPRET to compile ahead of time", file=sys.stderr)
        return 2
    import triton

    # Triton 3.3+ tells a listener after every compile whether its cache had the kernel:
    # the doctor reports the hit rate, so a warm rerun shows what the cache saved.
    counts = {"hits": 0, "misses": 0}
    compilation = getattr(getattr(triton, "knobs", None), "compilation", None)
    if compilation is not None and hasattr(compilation, "listener"):

        def listener(*_: Any, cache_hit: bool = False, **__: Any) -> None:
            counts["hits" if cache_hit else "misses"] += 1

        compilation.listener = listener
    out = compile_targets(args)
    if counts["hits"] or counts["misses"]:
        out["compile_cache"] = {"triton": counts}
    from rocmkit.proc.result_file import RESULT_ENV, write_result

    if os.environ.get(RESULT_ENV):
        write_result(out)
    else:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
