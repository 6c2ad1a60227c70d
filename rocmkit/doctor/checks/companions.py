"""Level 1: the kernel libraries installed beside torch (``--with``), each proven on this device.

For each of xformers, flash-attn and bitsandbytes that the checked Python has (a library it
lacks is ``skip``, "not installed"): it imports; its build matches this torch (xformers' own
build record, ``xformers/cpp_lib.json``, names the torch and toolkit it was compiled for; a
flash-attn built against another torch fails to load its extension; bitsandbytes loads the
library of torch's toolkit); and one small real operation runs on the device and agrees with
torch: xformers' memory-efficient attention and flash-attn's attention against
``scaled_dot_product_attention``, a bitsandbytes 8-bit matmul against the float matmul, each
with its time. What a library offers no path for on this device (xformers and flash-attn have
no CPU kernels) is ``skip`` with the library's own reason, never a failure.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rocmkit.doctor.harness import CheckError, Device, open_device
from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status

SEED = 0
# Attention inputs: batch, sequence, heads, head dim (small: a smoke test, not a benchmark).
SHAPE = (2, 128, 4, 64)
REPEATS = 5
# int8 vector-wise quantisation rounds each operand to 1/127 of its row's largest value; their
# product then differs from the float matmul by about 1% in norm (0.8% measured with
# bitsandbytes 0.50.2 on the CPU). A wrong kernel is off by O(1).
INT8_MAX_RELATIVE_ERROR = 0.03
REINSTALL = "rocmkit install --venv V --with {name}   (the build that fits this torch and GPU)"


def result(
    status: Status,
    message: str,
    remedy: str | None = None,
    *,
    figures: tuple[Figure, ...] = (),
    details: dict[str, object] | None = None,
    installed: bool = True,
) -> CheckResult:
    """A result whose details are the library's facts (version, build, backend)."""
    facts = {**(details or {}), "installed": installed}
    return CheckResult(status=status, message=message, remedy=remedy, figures=figures, details=facts)


def _missing(module: str, name: str) -> CheckResult | None:
    if importlib.util.find_spec(module) is None:
        return result(Status.SKIP, f"{name} is not installed", installed=False)
    return None


def _import(module: str, name: str) -> tuple[Any, CheckResult | None]:
    try:
        return importlib.import_module(module), None
    except Exception as exc:  # an extension built for another torch fails here (undefined symbol)
        text = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:300]
        other_torch = "undefined symbol" in text or "different version of PyTorch" in text
        why = " (it was built against another torch)" if other_torch else ""
        return None, result(
            Status.FAIL, f"`import {module}` failed{why}: {text}", REINSTALL.format(name=name), installed=True
        )


def _device(ctx: CheckContext) -> tuple[Device | None, CheckResult | None]:
    try:
        return open_device(ctx), None
    except CheckError as exc:
        return None, result(Status.ERROR, exc.message, exc.remedy)


def _time_ms(fn: Callable[[], Any], device: Device) -> float:
    """Median wall time of ``fn`` in ms, synchronised on a GPU (after one warm-up call)."""
    import torch

    def sync() -> None:
        if device.torch_device != "cpu":
            torch.cuda.synchronize()

    fn()
    sync()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[len(times) // 2]


def _no_path(exc: BaseException, device: Device) -> bool:
    """The library refused this device (no kernels for it), as opposed to failing on it."""
    text = str(exc).lower()
    return isinstance(exc, NotImplementedError) or (
        device.torch_device == "cpu" and any(w in text for w in ("cuda", "cpu", "device", "no operator"))
    )


def _attention_inputs(device: Device) -> tuple[Any, Any, Any, str]:
    import torch

    dtype = torch.float32 if device.torch_device == "cpu" else torch.float16
    gen = torch.Generator(device="cpu").manual_seed(SEED)
    q, k, v = (torch.randn(*SHAPE, generator=gen, dtype=torch.float32).to(device.torch_device, dtype) for _ in range(3))
    return q, k, v, str(dtype).removeprefix("torch.")


def _against_sdpa(
    name: str, op: Callable[[Any, Any, Any], Any], device: Device, details: dict[str, object]
) -> CheckResult:
    """Run ``op`` on [batch, seq, heads, dim] inputs and compare with torch's SDPA (fp32 math)."""
    import torch

    from rocmkit.kernels.compare import compare
    from rocmkit.kernels.tolerance import tolerance

    q, k, v, dtype = _attention_inputs(device)
    try:
        out = op(q, k, v)
    except Exception as exc:
        if _no_path(exc, device):
            reason = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            return result(
                Status.SKIP,
                f"{name} has no path on {device.torch_device} here; it says: {reason}",
                details=details,
            )
        raise
    # SDPA takes [batch, heads, seq, dim]; computed in fp32 as the reference.
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(t.transpose(1, 2).float() for t in (q, k, v))
    ).transpose(1, 2)
    tol = tolerance("sdpa", dtype, device.arch)
    agreed = compare(out, ref, tol)
    ms = _time_ms(lambda: op(q, k, v), device)
    figures = (
        Figure(name=f"{name}.attention.time", value=round(ms, 4), unit="ms"),
        Figure(name=f"{name}.attention.max_abs_error", value=agreed.max_abs_error, unit=""),
    )
    shape = "x".join(str(d) for d in SHAPE)
    if not agreed.ok:
        return result(
            Status.FAIL,
            f"{name} attention ({shape}, {dtype}) disagrees with torch's SDPA: {agreed.describe()}",
            f"do not use {name} on this node; reinstall it: " + REINSTALL.format(name=name),
            figures=figures,
            details=details,
        )
    return result(
        Status.PASS,
        f"{name} attention ({shape}, {dtype}) agrees with torch's SDPA: {agreed.describe()}; {ms:.3f} ms",
        figures=figures,
        details=details,
    )


def _torch_release(version: str) -> str:
    return version.split("+", 1)[0]


def xformers_build_mismatch(build: dict[str, Any], torch_version: str, hip: str | None) -> str | None:
    """Why xformers' build record (cpp_lib.json) does not fit this torch, or None."""
    version = build.get("version") or {}
    built_for = str(version.get("torch") or "")
    if built_for and built_for != torch_version:
        return f"it was built for torch {built_for}, this is torch {torch_version}"
    if hip and not version.get("hip"):
        return f"it is a CUDA build (cuda {version.get('cuda')}), this torch is a ROCm build (hip {hip})"
    if not hip and version.get("hip") and not version.get("cuda"):
        return f"it is a ROCm build (hip {version.get('hip')}), this torch is not"
    return None


@check(
    "companion.xformers",
    level=1,
    description="xformers (if installed): its build is this torch's, and memory-efficient attention "
    "agrees with torch's SDPA on this device, with its time",
    needs=("torch",),
    isolated=True,
    timeout_s=180.0,
)
def xformers_check(ctx: CheckContext) -> CheckResult:
    name = "xformers"
    if (skip := _missing("xformers", name)) is not None:
        return skip
    import torch

    module, failed = _import("xformers", name)
    if failed is not None:
        return failed
    details: dict[str, object] = {"version": str(getattr(module, "__version__", "?"))}
    record = Path(module.__file__ or ".").parent / "cpp_lib.json"
    if record.is_file():
        build = json.loads(record.read_text())
        details["built_for"] = (build.get("version") or {}).get("torch")
        wrong = xformers_build_mismatch(build, str(torch.__version__), getattr(torch.version, "hip", None))
        if wrong is not None:
            return result(
                Status.FAIL,
                f"xformers {details['version']} does not fit: {wrong}; its C++/GPU operators do not load",
                REINSTALL.format(name=name),
                details=details,
            )
    else:
        details["built_for"] = None
    device, error = _device(ctx)
    if error is not None or device is None:
        return error or result(Status.ERROR, "no device")
    ops = importlib.import_module("xformers.ops")
    return _against_sdpa(name, ops.memory_efficient_attention, device, details)


@check(
    "companion.flash_attn",
    level=1,
    description="flash-attn (if installed): it loads against this torch, and its attention agrees "
    "with torch's SDPA on this device, with its time",
    needs=("torch",),
    isolated=True,
    timeout_s=180.0,
)
def flash_attn_check(ctx: CheckContext) -> CheckResult:
    name = "flash-attn"
    if (skip := _missing("flash_attn", name)) is not None:
        return skip
    import os

    module, failed = _import("flash_attn", name)
    if failed is not None:
        return failed
    details: dict[str, object] = {
        "version": str(getattr(module, "__version__", "?")),
        # Read at import: which ROCm backend is in use (flash_attn/flash_attn_interface.py).
        "triton_amd": os.environ.get("FLASH_ATTENTION_TRITON_AMD_ENABLE", "FALSE") == "TRUE",
    }
    device, error = _device(ctx)
    if error is not None or device is None:
        return error or result(Status.ERROR, "no device")
    return _against_sdpa(name, module.flash_attn_func, device, details)


@check(
    "companion.bitsandbytes",
    level=1,
    description="bitsandbytes (if installed): it loaded the library of this torch's toolkit, and an "
    "8-bit matmul agrees with the float matmul on this device, with its time",
    needs=("torch",),
    isolated=True,
    timeout_s=180.0,
)
def bitsandbytes_check(ctx: CheckContext) -> CheckResult:
    name = "bitsandbytes"
    if (skip := _missing("bitsandbytes", name)) is not None:
        return skip
    import torch

    module, failed = _import("bitsandbytes", name)
    if failed is not None:
        return failed
    ext = importlib.import_module("bitsandbytes.cextension")
    details: dict[str, object] = {
        "version": str(getattr(module, "__version__", "?")),
        "backend": str(getattr(ext, "BNB_BACKEND", "?")),
    }
    hip = getattr(torch.version, "hip", None)
    if bool(hip) != bool(getattr(ext, "HIP_ENVIRONMENT", False)):
        return result(
            Status.FAIL,
            f"bitsandbytes loaded its {details['backend']} library, but this torch is "
            f"{'a ROCm' if hip else 'not a ROCm'} build",
            REINSTALL.format(name=name),
            details=details,
        )
    device, error = _device(ctx)
    if error is not None or device is None:
        return error or result(Status.ERROR, "no device")
    functional = importlib.import_module("bitsandbytes.functional")
    gen = torch.Generator(device="cpu").manual_seed(SEED)
    a = torch.randn(64, 256, generator=gen).to(device.torch_device)
    w = torch.randn(128, 256, generator=gen).to(device.torch_device)

    def int8_matmul() -> Any:
        ca, sa, _ = functional.int8_vectorwise_quant(a)
        cw, sw, _ = functional.int8_vectorwise_quant(w)
        return functional.int8_mm_dequant(functional.int8_linear_matmul(ca, cw), sa, sw)

    try:
        out = int8_matmul()
    except Exception as exc:
        if _no_path(exc, device):
            return result(
                Status.SKIP,
                f"bitsandbytes has no 8-bit matmul on {device.torch_device} here; it says: {str(exc)[:300]}",
                details=details,
            )
        raise
    ref = a @ w.T
    error_norm = float((out.float() - ref).norm() / ref.norm())
    ms = _time_ms(int8_matmul, device)
    figures = (
        Figure(name="bitsandbytes.int8_matmul.time", value=round(ms, 4), unit="ms"),
        Figure(name="bitsandbytes.int8_matmul.relative_error", value=round(error_norm, 6), unit=""),
    )
    what = f"8-bit matmul (64x256 @ 256x128) on {device.torch_device}"
    if not error_norm <= INT8_MAX_RELATIVE_ERROR:
        return result(
            Status.FAIL,
            f"bitsandbytes {what} is off from the float matmul by {error_norm:.3g} in norm "
            f"(int8 rounding allows {INT8_MAX_RELATIVE_ERROR})",
            f"do not use bitsandbytes' 8-bit layers on this node; reinstall it: {REINSTALL.format(name=name)}",
            figures=figures,
            details=details,
        )
    return result(
        Status.PASS,
        f"bitsandbytes {details['version']} ({details['backend']}) {what} agrees with the float matmul "
        f"(relative error {error_norm:.3g} <= {INT8_MAX_RELATIVE_ERROR}); {ms:.3f} ms",
        figures=figures,
        details=details,
    )
