"""Levels 1-2: Triton smoke kernels, each checked against torch and timed.

One check, ``triton.<name>``, per kernel module in ``rocmkit/kernels``: its level, options,
tolerances and body live in that module, whose ``CHECK`` declaration this parent reads
without importing it (:mod:`rocmkit.kernels.catalog`), so adding a kernel touches no file here.

Every kernel check runs in the doctor's child process (``isolated=True``): it compiles and
launches GPU code, so a compiler crash or a GPU hang is that check's result. Each one
reports the first call (compilation, or a load from the compile cache under rocmkit's
cache folder), a warm call, the largest error against torch under the tolerance for its
dtype and GPU architecture (declared by the kernel's module) and, on a GPU, the
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

import time
from pathlib import Path
from typing import Any

from rocmkit.doctor.cachestats import merge
from rocmkit.doctor.harness import run_kernel
from rocmkit.doctor.isolate import fresh_env
from rocmkit.doctor.registry import CheckContext, CheckFunc, check
from rocmkit.doctor.result import CheckResult, Figure, Status
from rocmkit.doctor.targets import codegen_targets, crash_line
from rocmkit.kernels.catalog import Kernel, kernels
from rocmkit.kernels.sizes import CHECK_OPTION_KEYS, all_options
from rocmkit.util.trust import compile_cache_dirs

# --- one check per kernel module, from its declaration ------------------------------------


def _register(kernel: Kernel) -> CheckFunc:
    """``triton.<name>`` as its module declares it; the body runs in the child, where it
    imports the module and calls its ``run(k)`` (:func:`rocmkit.doctor.harness.run_kernel`)."""

    def kernel_check(ctx: CheckContext) -> CheckResult:
        return run_kernel(ctx, kernel.name)

    kernel_check.__name__ = kernel_check.__qualname__ = kernel.name
    # The --set keys a kernel check reads: its own sizes plus the timing ones all share.
    # (all_options() refuses, here in the parent, a kernel option named like a shared one.)
    known = all_options()
    options = {key: known[key].help for key in (*kernel.options, "repeats", "warn_fraction")}
    return check(
        kernel.check,
        options=options,
        level=kernel.level,
        description=kernel.description,
        needs=("torch", "triton"),
        isolated=True,
        timeout_s=kernel.timeout_s,
    )(kernel_check)


# Registered in the kernels' report order, before triton.codegen (as they always were).
KERNEL_CHECKS: dict[str, CheckFunc] = {k.name: _register(k) for k in kernels()}


def __getattr__(name: str) -> CheckFunc:
    """``kernels.vector_add(ctx)``: a kernel's check function by the module's name."""
    try:
        return KERNEL_CHECKS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


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
    import os
    import sys

    from rocmkit.pyenv import run_json

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
    # Never a compile cache another user can write (compiled .so files are loaded and run).
    env.setdefault("TRITON_CACHE_DIR", compile_cache_dirs(Path(ctx.cache_dir))["TRITON_CACHE_DIR"])
    # The child must import this very rocmkit, even from a source checkout.
    root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    timeout = float(merged_options(ctx.options, ctx.env).get("codegen_timeout_s", 240.0))
    per_target: dict[str, Any] = {}
    version: str | None = None
    # One process per target: a compiler that aborts on one arch (LLVM does, for an ISA it
    # cannot lower to) must not hide the others' results.
    for target in targets:
        ran = run_json(sys.executable, "rocmkit.kernels.aot", [target], timeout=timeout, env=env)
        proc = ran.proc
        data = ran.data if proc.ok and isinstance(ran.data, dict) else None
        if data is not None and isinstance(data.get("targets"), dict):
            version = data.get("triton") or version
            per_target.update(data["targets"])
            caches.append(data.get("compile_cache") or {})
        elif proc.status == "signal":
            per_target[target] = {
                "error": f"the compiler crashed ({proc.describe()}): {crash_line(proc.stderr)}"
            }
        else:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
            how = ran.error if proc.ok and ran.error else proc.describe()
            return result(
                Status.ERROR,
                f"the Triton compiler process for {target} did not report: {how}",
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
