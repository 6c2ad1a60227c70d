"""Level 2: ``scaled_dot_product_attention`` through each backend this torch offers.

Each backend (flash, memory-efficient, math, and cuDNN on CUDA) is forced with
``torch.nn.attention.sdpa_kernel`` and must agree with the math backend computed in
fp32 from the same inputs, with and without a causal mask. A backend this torch or this
device does not offer is ``skip`` with torch's own reason (on RDNA GPUs the ROCm flash
kernels are experimental and need TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL=1), never a
failure. On a GPU each fused backend's TFLOP/s is reported against the math backend's
in the same run; a fused backend slower than math is a warning (the fused path is then
not worth having on this node). On the CPU the inputs are fp32 and no threshold applies.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rocmkit.doctor.harness import CheckError, Device, open_device
from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status
from rocmkit.errors import UsageError
from rocmkit.kernels.metrics import perf_verdict, tflop_per_s
from rocmkit.kernels.sizes import CHECK_OPTION_KEYS, SHARED

NAME = "attention.sdpa"
ATTENTION_OPTIONS = {
    "attention_shape": SHARED["attention_shape"].help,
    "attention_min_vs_math": CHECK_OPTION_KEYS["attention_min_vs_math"],
    "repeats": SHARED["repeats"].help,
    "warn_fraction": SHARED["warn_fraction"].help,
}
SEED = 0
# A fused backend below this fraction of the math backend's speed is a warning.
DEFAULT_MIN_VS_MATH = 1.0
EXPERIMENTAL_VAR = "TORCH_ROCM_AOTRITON_ENABLE_EXPERIMENTAL"


@dataclass(frozen=True, kw_only=True)
class Backend:
    short: str  # "flash": the result is named attention.sdpa.flash
    member: str  # torch.nn.attention.SDPBackend member name
    cuda_only: bool = False


BACKENDS: tuple[Backend, ...] = (
    Backend(short="math", member="MATH"),
    Backend(short="flash", member="FLASH_ATTENTION"),
    Backend(short="efficient", member="EFFICIENT_ATTENTION"),
    Backend(short="cudnn", member="CUDNN_ATTENTION", cuda_only=True),
)


def attention_flops(batch: int, heads: int, seq: int, head_dim: int, *, causal: bool) -> float:
    """QK^T and PV, two FLOPs per multiply-add each; a causal mask halves the work."""
    full = 4.0 * batch * heads * seq * seq * head_dim
    return full / 2 if causal else full


def _unavailable_reason(exc: BaseException, caught: list[warnings.WarningMessage]) -> str:
    # torch explains why a backend was refused in UserWarnings just before it raises.
    reasons = [str(w.message).strip().splitlines()[0] for w in caught if str(w.message).strip()]
    text = "; ".join(dict.fromkeys(reasons)) or str(exc).strip().splitlines()[0]
    return text[:400]


def _skip(backend: Backend, device: Device, reason: str, started: float) -> CheckResult:
    remedy = None
    if EXPERIMENTAL_VAR in reason:
        remedy = f"export {EXPERIMENTAL_VAR}=1 to enable the experimental ROCm attention kernels for this GPU"
    return CheckResult(
        name=f"{NAME}.{backend.short}",
        status=Status.SKIP,
        message=f"{backend.short} attention is not available on {device.torch_device} here; torch says: {reason}",
        remedy=remedy,
        duration_s=round(time.perf_counter() - started, 3),
        backend=device.backend,
        details={"sdpa_backend": backend.member, "reason": reason},
    )


def _backend_error(backend: Backend, device: Device, exc: Exception) -> CheckResult:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:300]
    serialize = "AMD_SERIALIZE_KERNEL=3" if device.backend == "rocm" else "CUDA_LAUNCH_BLOCKING=1"
    return CheckResult(
        name=f"{NAME}.{backend.short}",
        status=Status.ERROR,
        message=f"{backend.short} attention raised {text}",
        remedy=f"rerun with `{serialize} rocmkit doctor --only {NAME}` for the precise error",
        backend=device.backend,
        details={"sdpa_backend": backend.member},
    )


def _time(fn: Callable[[], Any], device: Device, repeats: int) -> tuple[float, float]:
    from rocmkit.kernels.timing import measure_ms, time_call

    first = time_call(fn, device.torch_device)
    ms, _, _ = measure_ms(fn, device=device.torch_device, repeats=repeats)
    return first, ms


def _check_backend(
    backend: Backend,
    *,
    device: Device,
    inputs: tuple[Any, Any, Any],
    references: dict[bool, Any],
    shape: tuple[int, int, int, int],
    repeats: int,
    math_tflops: float | None,
    min_vs_math: float,
) -> tuple[CheckResult, float | None]:
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from rocmkit.kernels.compare import compare
    from rocmkit.kernels.tolerance import tolerance

    started = time.perf_counter()
    member = getattr(SDPBackend, backend.member, None)
    if member is None:
        return _skip(
            backend, device, f"torch {torch.__version__} has no SDPBackend.{backend.member}", started
        ), None
    q, k, v = inputs
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def call(causal: bool) -> Any:
        with sdpa_kernel([member]):
            return sdpa(q, k, v, is_causal=causal)

    dtype = str(q.dtype).removeprefix("torch.")
    tol = tolerance("sdpa", dtype, device.arch)
    comparisons = {}
    refused: dict[bool, str] = {}
    for causal in (False, True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                comparisons[causal] = compare(call(causal), references[causal], tol)
            except RuntimeError as exc:
                text = str(exc).lower()
                # torch refuses a forced backend it cannot use with one of these messages;
                # anything else is a real error and propagates.
                if "no viable backend" not in text and "no available kernel" not in text:
                    raise
                refused[causal] = _unavailable_reason(exc, caught)
    if not comparisons:
        return _skip(backend, device, "; ".join(dict.fromkeys(refused.values())), started), None
    timed_causal = False not in comparisons  # time full attention where it is offered
    first_ms, ms = _time(lambda: call(timed_causal), device, repeats)
    tflops = tflop_per_s(attention_flops(*shape, causal=timed_causal), ms)
    is_math = backend.short == "math"
    threshold = None if device.interpreted or is_math else min_vs_math
    verdict = perf_verdict(tflops, None if is_math else math_tflops, threshold)
    wrong = [c for c in comparisons.values() if not c.ok]
    agreement = ", ".join(
        f"{'causal' if causal else 'full'} {c.describe()}" for causal, c in comparisons.items()
    )
    perf = verdict.describe("TFLOP/s", tflops, None if is_math else math_tflops, "the math backend")
    if wrong:
        status = Status.FAIL
        message = f"{backend.short} attention disagrees with the fp32 math reference: {agreement}"
        remedy = (
            f"disable it for your jobs (torch.nn.attention.sdpa_kernel without {backend.member}) and report "
            "the torch and ROCm/CUDA versions from `rocmkit doctor --json`"
        )
    elif verdict.slow:
        status = Status.WARN
        message = f"{backend.short} attention is slower than the math backend: {perf}"
        remedy = "check that torch is the ROCm/CUDA build rocmkit resolves for this GPU (`rocmkit plan`)"
    else:
        status = Status.PASS
        message = f"{backend.short} attention agrees with the fp32 math reference: {agreement}; {perf}"
        remedy = None
    if refused:
        message += "; " + "; ".join(
            f"{'causal' if c else 'full'} attention not offered: {why}" for c, why in refused.items()
        )
    if device.interpreted:
        message += " [CPU: no performance threshold applies]"
    label = backend.short
    figures = (
        Figure(name=f"sdpa.{label}.first_call", value=round(first_ms, 4), unit="ms"),
        Figure(name=f"sdpa.{label}.time", value=round(ms, 6), unit="ms"),
        Figure(
            name=f"sdpa.{label}.throughput",
            value=round(tflops, 6),
            unit="TFLOP/s",
            reference=None if is_math or math_tflops is None else round(math_tflops, 6),
        ),
        Figure(
            name=f"sdpa.{label}.max_abs_error",
            value=max(c.max_abs_error for c in comparisons.values()),
            unit="",
        ),
    )
    result = CheckResult(
        name=f"{NAME}.{label}",
        status=status,
        message=message,
        remedy=remedy,
        figures=figures,
        duration_s=round(time.perf_counter() - started, 3),
        backend=device.backend,
        details={
            **device.as_details(),
            "sdpa_backend": backend.member,
            "shape": list(shape),
            "dtype": dtype,
            "comparisons": {("causal" if c else "full"): cmp.as_details() for c, cmp in comparisons.items()},
            "refused": {("causal" if c else "full"): why for c, why in refused.items()},
            "timed": "causal" if timed_causal else "full",
            "fraction_of_math": verdict.fraction,
            "warn_below": verdict.threshold,
        },
    )
    return result, tflops


@check(
    NAME,
    options=ATTENTION_OPTIONS,
    level=2,
    description="scaled_dot_product_attention per backend (flash, memory-efficient, math) vs the fp32 math reference",
    needs=("torch",),
    isolated=True,
    timeout_s=300.0,
)
def sdpa(ctx: CheckContext) -> list[CheckResult]:
    from rocmkit.kernels.sizes import kernel_sizes, merged_options

    started = time.perf_counter()
    try:
        options = merged_options(ctx.options, ctx.env)
        sizes = kernel_sizes(ctx.backend, options)
        min_vs_math = float(options.get("attention_min_vs_math", DEFAULT_MIN_VS_MATH))
        device = open_device(ctx)
    except (CheckError, UsageError, ValueError, TypeError) as exc:
        message = getattr(exc, "message", str(exc))
        remedy = getattr(exc, "remedy", None) or getattr(exc, "fix", None)
        return [
            CheckResult(
                status=Status.ERROR,
                message=message,
                remedy=remedy,
                duration_s=round(time.perf_counter() - started, 3),
                backend=ctx.backend,
            )
        ]
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    shape: tuple[int, int, int, int] = sizes.attention_shape
    dtype = torch.float32 if device.interpreted else torch.float16
    gen = torch.Generator(device="cpu").manual_seed(SEED)
    q, k, v = (torch.randn(*shape, generator=gen).to(device.torch_device, dtype) for _ in range(3))
    references = {}
    with sdpa_kernel([SDPBackend.MATH]):
        for causal in (False, True):
            references[causal] = torch.nn.functional.scaled_dot_product_attention(
                q.float(), k.float(), v.float(), is_causal=causal
            )
    results: list[CheckResult] = []
    math_tflops: float | None = None
    for backend in BACKENDS:
        if backend.cuda_only and device.backend != "cuda":
            continue
        try:
            result, tflops = _check_backend(
                backend,
                device=device,
                inputs=(q, k, v),
                references=references,
                shape=shape,
                repeats=sizes.repeats,
                math_tflops=math_tflops,
                min_vs_math=min_vs_math,
            )
        except Exception as exc:  # one backend's crash is its own result; the others still run
            result, tflops = _backend_error(backend, device, exc), None
        if backend.short == "math":
            math_tflops = tflops
        results.append(result)
    return results
