"""Levels 1-2: Triton smoke kernels, each checked against torch and timed.

Every kernel check runs in the doctor's child process (``isolated=True``): it compiles and
launches GPU code, so a compiler crash or a GPU hang is that check's result. Each one
reports the first call (compilation, or a load from the compile cache under rocmkit's
cache folder), a warm call, the largest error against torch under the tolerance for its
dtype and GPU architecture (:mod:`rocmkit.kernels.tolerance`) and, on a GPU, the
achieved GB/s or TFLOP/s as a fraction of a torch reference timed in the same run: a
device-to-device copy for bandwidth, ``torch.matmul`` for TFLOP/s. Below
``warn_fraction`` (default 0.5) of the reference is a warning, so a slow node stands out.

On the CPU backend the kernels run under Triton's interpreter (``TRITON_INTERPRET=1``):
that proves the kernels' logic and this Triton's language front end, not GPU code
generation, and its speed says nothing about the node, so no threshold applies there.

``triton.codegen`` compiles every kernel ahead of time for the node's GPU archs (or an
image build's), one compiler process per target: no GPU needed.

torch and triton are imported inside the functions only; the shared machinery is in
:mod:`rocmkit.doctor.harness`.
"""

from __future__ import annotations

import functools
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from rocmkit.doctor.cachestats import merge
from rocmkit.doctor.harness import (
    SEED,
    CheckError,
    Device,
    Measurement,
    build_result,
    dtype_name,
    fp32_matmul,
    guarded,
    import_kernel_module,
    measure_vs_copy,
    run_and_measure,
)
from rocmkit.doctor.isolate import fresh_env
from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status
from rocmkit.doctor.targets import codegen_targets, crash_line
from rocmkit.kernels.metrics import gb_per_s, tflop_per_s
from rocmkit.kernels.sizes import CHECK_OPTION_KEYS, OPTION_KEYS, KernelSizes

# --- the checks ---------------------------------------------------------------


def _options(*keys: str) -> dict[str, str]:
    """The --set keys a kernel check reads: its own sizes plus the timing ones all share."""
    return {k: OPTION_KEYS[k] for k in (*keys, "repeats", "warn_fraction")}


@check(
    "triton.vector_add",
    options=_options("vector_add_n"),
    level=1,
    description="masked vector add over an odd size: correctness, compile time, GB/s vs a device copy",
    needs=("torch", "triton"),
    isolated=True,
    timeout_s=180.0,
)
def vector_add(ctx: CheckContext) -> CheckResult:
    def body(device: Device, sizes: KernelSizes, started: float) -> CheckResult:
        import torch

        from rocmkit.kernels.tolerance import tolerance

        mod = import_kernel_module("vector_add", device)
        gen = torch.Generator(device="cpu").manual_seed(SEED)
        n = sizes.vector_add_n
        x = torch.randn(n, generator=gen).to(device.torch_device)
        y = torch.randn(n, generator=gen).to(device.torch_device)
        out = torch.empty_like(x)
        m = measure_vs_copy(
            kernel=lambda: mod.add(x, y, out),
            expected=x + y,
            tolerance=tolerance("vector_add", "float32", device.arch),
            device=device,
            sizes=sizes,
            label=f"float32 n={n}",
            work=mod.bytes_moved(n, x.element_size()),
            copy_n_bytes=n * x.element_size(),
        )
        return build_result(
            what="vector add", device=device, runs=[m], started=started, details={"n": n}
        )

    return guarded(ctx, body)


@check(
    "triton.softmax",
    options=_options("softmax_shape"),
    level=1,
    description="fused row softmax over an irregular shape: correctness, compile time, GB/s vs a device copy",
    needs=("torch", "triton"),
    isolated=True,
    timeout_s=180.0,
)
def softmax(ctx: CheckContext) -> CheckResult:
    def body(device: Device, sizes: KernelSizes, started: float) -> CheckResult:
        import torch

        from rocmkit.kernels.tolerance import tolerance

        mod = import_kernel_module("softmax", device)
        gen = torch.Generator(device="cpu").manual_seed(SEED)
        rows, cols = sizes.softmax_shape
        x = torch.randn(rows, cols, generator=gen).to(device.torch_device)
        m = measure_vs_copy(
            kernel=lambda: mod.softmax(x),
            expected=torch.softmax(x, dim=-1),
            tolerance=tolerance("softmax", "float32", device.arch),
            device=device,
            sizes=sizes,
            label=f"float32 {rows}x{cols}",
            work=mod.bytes_moved(rows, cols, x.element_size()),
            copy_n_bytes=x.numel() * x.element_size(),
        )
        return build_result(
            what="fused softmax",
            device=device,
            runs=[m],
            started=started,
            details={"shape": [rows, cols]},
        )

    return guarded(ctx, body)


@check(
    "triton.matmul",
    options=_options("matmul_shape", "matmul_dtypes"),
    level=2,
    description="tl.dot matmul (fp16 and bf16 on GPUs, fp32 interpreted): correctness, TFLOP/s vs torch.matmul",
    needs=("torch", "triton"),
    isolated=True,
    timeout_s=600.0,
)
def matmul(ctx: CheckContext) -> CheckResult:
    def body(device: Device, sizes: KernelSizes, started: float) -> CheckResult:
        import torch

        from rocmkit.kernels.timing import measure_ms
        from rocmkit.kernels.tolerance import tolerance

        mod = import_kernel_module("matmul", device)
        m_, n_, k_ = sizes.matmul_shape
        # fp16 and bf16 (the matrix-core dtypes) on GPUs; fp32 under the interpreter.
        dtypes = tuple(getattr(torch, d) for d in sizes.matmul_dtypes)
        configs = mod.configs_for(device.backend)
        runs: list[Measurement] = []
        for dtype in dtypes:
            gen = torch.Generator(device="cpu").manual_seed(SEED)
            # Scaled so the product is ~N(0, 1) at any K: fp16 keeps ~3 decimal digits there,
            # which is what the tutorial's atol 1e-2 assumes.
            scale = k_**-0.25
            a = (torch.randn(m_, k_, generator=gen) * scale).to(device.torch_device, dtype)
            b = (torch.randn(k_, n_, generator=gen) * scale).to(device.torch_device, dtype)
            # The reference accumulates and rounds once, in fp32: torch's own fp16 GEMM may
            # reduce split-K partial sums in fp16 (allow_fp16_reduced_precision_reduction),
            # which would put torch's rounding, not Triton's, into the comparison.
            expected = fp32_matmul(torch, a, b).to(dtype)
            tol = tolerance("matmul", dtype_name(dtype), device.arch)
            ref_ms: list[float] = []

            def reference(a: Any = a, b: Any = b, ref_ms: list[float] = ref_ms) -> float:
                if not ref_ms:
                    ms, _, _ = measure_ms(
                        lambda: torch.matmul(a, b), device=device.torch_device, repeats=sizes.repeats
                    )
                    ref_ms.append(ms)
                return tflop_per_s(mod.flops(m_, n_, k_), ref_ms[0])

            tried: list[Measurement] = []
            refused: dict[str, str] = {}
            for cfg in configs:
                try:
                    measured = run_and_measure(
                        kernel=functools.partial(mod.matmul, a, b, cfg),
                        expected=expected,
                        tolerance=tol,
                        device=device,
                        repeats=sizes.repeats,
                        label=dtype_name(dtype),
                        work=mod.flops(m_, n_, k_),
                        unit="TFLOP/s",
                        reference=reference,
                        reference_name="torch.matmul",
                        warn_fraction=sizes.warn_fraction,
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
                raise CheckError(
                    f"every matmul tile ran out of GPU resources in {dtype_name(dtype)}: {refused}",
                    "report this with `rocmkit doctor --json`; the tile list is in rocmkit/kernels/matmul.py",
                )
            # Every tile configuration must be right; the fastest one speaks for speed.
            bad = [t for t in tried if not t.comparison.ok]
            best = bad[0] if bad else max(tried, key=lambda t: t.throughput)
            tried_summary = {
                t.details["config"]: {"tflops": round(t.throughput, 3), "ok": t.comparison.ok} for t in tried
            }
            runs.append(
                replace(
                    best, details={**best.details, "configs_tried": tried_summary, "configs_refused": refused}
                )
            )
        return build_result(
            what=f"tl.dot matmul {m_}x{n_}x{k_}",
            device=device,
            runs=runs,
            started=started,
            details={"shape": [m_, n_, k_]},
        )

    return guarded(ctx, body)


@check(
    "triton.layernorm",
    options=_options("layernorm_shape", "layernorm_block"),
    level=2,
    description="layer norm forward (a row reduction): correctness, compile time, GB/s vs a device copy",
    needs=("torch", "triton"),
    isolated=True,
    timeout_s=180.0,
)
def layernorm(ctx: CheckContext) -> CheckResult:
    def body(device: Device, sizes: KernelSizes, started: float) -> CheckResult:
        import torch

        from rocmkit.kernels.tolerance import tolerance

        mod = import_kernel_module("layernorm", device)
        # fp16 on GPUs as in the tutorial; fp32 under the interpreter.
        dtype = torch.float32 if device.interpreted else torch.float16
        gen = torch.Generator(device="cpu").manual_seed(SEED)
        rows, cols = sizes.layernorm_shape
        x = torch.randn(rows, cols, generator=gen).to(device.torch_device, dtype)
        w = torch.rand(cols, generator=gen).to(device.torch_device, dtype)
        b = torch.rand(cols, generator=gen).to(device.torch_device, dtype)
        eps = 1e-5
        expected = torch.nn.functional.layer_norm(x, (cols,), w, b, eps)
        m = measure_vs_copy(
            kernel=lambda: mod.layer_norm(x, w, b, eps, block_size=sizes.layernorm_block),
            expected=expected,
            tolerance=tolerance("layernorm", dtype_name(dtype), device.arch),
            device=device,
            sizes=sizes,
            label=f"{dtype_name(dtype)} {rows}x{cols}",
            work=mod.bytes_moved(rows, cols, x.element_size()),
            copy_n_bytes=x.numel() * x.element_size(),
        )
        return build_result(
            what="layer norm",
            device=device,
            runs=[m],
            started=started,
            details={"shape": [rows, cols], "block": sizes.layernorm_block},
        )

    return guarded(ctx, body)


@check(
    "triton.atomics",
    options=_options("histogram_n", "histogram_bins"),
    level=2,
    description="tl.atomic_add histogram with an exact answer; values/s vs torch.bincount (no threshold)",
    needs=("torch", "triton"),
    isolated=True,
    timeout_s=180.0,
)
def atomics(ctx: CheckContext) -> CheckResult:
    def body(device: Device, sizes: KernelSizes, started: float) -> CheckResult:
        import torch

        from rocmkit.kernels.timing import measure_ms
        from rocmkit.kernels.tolerance import tolerance

        mod = import_kernel_module("atomics", device)
        gen = torch.Generator(device="cpu").manual_seed(SEED)
        n, bins = sizes.histogram_n, sizes.histogram_bins
        values = torch.randint(0, bins, (n,), generator=gen, dtype=torch.int32).to(device.torch_device)
        expected = torch.bincount(values, minlength=bins).to(torch.int32)

        def reference() -> float:
            ms, _, _ = measure_ms(
                lambda: torch.bincount(values, minlength=bins),
                device=device.torch_device,
                repeats=sizes.repeats,
            )
            return gb_per_s(mod.bytes_moved(n, values.element_size()), ms)

        m = run_and_measure(
            kernel=lambda: mod.histogram(values, bins),
            expected=expected,
            tolerance=tolerance("histogram", "int32", device.arch),
            device=device,
            repeats=sizes.repeats,
            label=f"int32 n={n} bins={bins}",
            work=mod.bytes_moved(n, values.element_size()),
            unit="GB/s",
            reference=reference,
            reference_name="torch.bincount",
            # torch.bincount may bin in shared memory; a global-atomics histogram is not
            # expected to match it, so this figure informs and never warns.
            warn_fraction=0.0,
        )
        return build_result(
            what="atomic-add histogram",
            device=device,
            runs=[m],
            started=started,
            details={"n": n, "bins": bins},
        )

    return guarded(ctx, body)


def _cache_counts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The compile cache hits of the compiler processes, for the report's hit rate."""
    total = {c: {k: v for k, v in n.items() if k != "hit_rate"} for c, n in merge(parts).items()}
    return {"compile_cache": total} if total else {}


@check(
    "triton.codegen",
    options={k: CHECK_OPTION_KEYS[k] for k in ("codegen_targets", "codegen_timeout_s")},
    level=1,
    description="compile every smoke kernel ahead of time for this node's GPU archs (no GPU needed)",
    needs=("triton",),
    timeout_s=300.0,
)
def codegen(ctx: CheckContext) -> CheckResult:
    """Triton compiles for a target without its driver, so this runs in an image build too
    (``codegen_targets``). It proves this Triton generates code for the arch, not that the code
    runs: the other kernel checks do that on the device.

    The compiler runs in its own process (``python -m rocmkit.kernels.aot``) through the
    command runner with a timeout, without TRITON_INTERPRET, which would replace even
    triton.language's helpers with interpreted ones.
    """
    import json
    import os
    import sys

    from rocmkit.runner import run

    started = time.perf_counter()
    targets = codegen_targets(ctx)
    caches: list[dict[str, Any]] = []  # per compiler process: Triton cache hits and misses

    def result(status: Status, message: str, remedy: str | None = None, **extra: Any) -> CheckResult:
        figures = extra.pop("figures", ())
        return CheckResult(
            status=status,
            message=message,
            remedy=remedy,
            figures=figures,
            duration_s=round(time.perf_counter() - started, 3),
            backend=ctx.backend,
            details={"targets": targets, **extra, **_cache_counts(caches)},
        )

    if not targets:
        return result(
            Status.SKIP,
            "no GPU architecture to compile for: none detected, no codegen_targets, no PYTORCH_ROCM_ARCH",
            "name the archs to check an image build for: `ROCMKIT_KERNEL_CODEGEN_TARGETS=gfx942,sm_90 rocmkit doctor`",
        )
    from rocmkit.kernels.aot import parse_target
    from rocmkit.kernels.sizes import merged_options

    for target in targets:
        try:
            parse_target(target)
        except ValueError as exc:
            return result(Status.ERROR, str(exc), "name targets as gfx942, gfx1100, sm_90 or 9.0")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(fresh_env(ctx))
    env.setdefault("TRITON_CACHE_DIR", str(Path(ctx.cache_dir) / "triton"))
    # The child must import this very rocmkit, even from a source checkout.
    root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    timeout = float(merged_options(ctx.options, ctx.env).get("codegen_timeout_s", 240.0))
    per_target: dict[str, Any] = {}
    version: str | None = None
    # One process per target: a compiler that aborts on one arch (LLVM does, for an ISA it
    # cannot lower to) must not hide the others' results.
    for target in targets:
        proc = run([sys.executable, "-m", "rocmkit.kernels.aot", target], timeout=timeout, env=env)
        try:
            data = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.ok else None
        except (ValueError, IndexError):
            data = None
        if data is not None:
            version = data.get("triton") or version
            per_target.update(data["targets"])
            caches.append(data.get("compile_cache") or {})
        elif proc.status == "signal":
            per_target[target] = {
                "error": f"the compiler crashed ({proc.describe()}): {crash_line(proc.stderr)}"
            }
        else:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
            return result(
                Status.ERROR,
                f"the Triton compiler process for {target} did not report: {proc.describe()}",
                f"rerun `python -m rocmkit.kernels.aot {target}` to see the full error",
                stderr_tail=tail,
            )
    figures: list[Figure] = []
    for t, r in per_target.items():
        if "builds" in r:
            figures += [
                Figure(name=f"codegen.{t}.compile", value=r["seconds"], unit="s"),
                Figure(
                    name=f"codegen.{t}.max_shared",
                    value=float(max(b["shared_bytes"] for b in r["builds"])),
                    unit="B",
                ),
            ]
    version = version or "?"
    api = [t for t, r in per_target.items() if r.get("api")]
    if api:
        return result(
            Status.ERROR,
            f"rocmkit cannot drive the ahead-of-time compiler of triton {version}: {per_target[api[0]]['error'][:200]}",
            "this check knows Triton 3.8's compile API; the launch checks (triton.vector_add and the "
            "others) still prove code generation on the device",
            per_target=per_target,
        )
    failed = [t for t, r in per_target.items() if "error" in r]
    if failed:
        errors = "; ".join(f"{t}: {per_target[t]['error'].splitlines()[0][:200]}" for t in failed)
        return result(
            Status.FAIL,
            f"triton {version} cannot generate code for {', '.join(failed)}: {errors}",
            "install the torch and Triton builds rocmkit resolves for this GPU (`rocmkit plan`); for an "
            "unsupported consumer GPU set HSA_OVERRIDE_GFX_VERSION to a supported ISA",
            figures=tuple(figures),
            per_target=per_target,
        )
    summary = ", ".join(
        f"{t} ({len(r['builds'])} kernels, {r['seconds']:.1f} s)" for t, r in per_target.items()
    )
    return result(
        Status.PASS,
        f"triton {version} compiles every smoke kernel for {summary}",
        figures=tuple(figures),
        per_target=per_target,
    )
