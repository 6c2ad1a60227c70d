"""The machinery every kernel check shares: open the device, run a kernel against torch,
time it, and turn the measurements into one :class:`CheckResult`.

Imports neither torch nor triton at module level; the functions that need them import
them inside, in the doctor's child process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocmkit.doctor.registry import CheckContext, current_check
from rocmkit.doctor.result import CheckResult, Figure, Status
from rocmkit.errors import UsageError
from rocmkit.kernels.compare import Tolerance
from rocmkit.kernels.metrics import copy_bytes, gb_per_s, perf_verdict, tflop_per_s
from rocmkit.kernels.runtime import InterpreterNotActive
from rocmkit.kernels.sizes import KernelSizes
from rocmkit.kernels.spec import CannotRun, KernelRun, Measurement, Report
from rocmkit.kernels.timing import Timing
from rocmkit.proc.result_file import say_phase

SEED = 0
_INTERPRETER_NOTE = "Triton interpreter on the CPU: no performance threshold applies"


@dataclass(frozen=True, kw_only=True)
class Device:
    """What one check runs on, resolved once in the child."""

    backend: str  # ctx.backend: "rocm", "cuda" or "cpu"
    torch_device: str  # "cuda" or "cpu"
    arch: str | None  # "gfx90a:sramecc+:xnack-", "sm_90"; None on the CPU
    name: str | None
    cache_dir: Path

    @property
    def interpreted(self) -> bool:
        return self.backend == "cpu"

    @property
    def label(self) -> str:
        return "cpu-interpreter" if self.interpreted else self.backend

    def as_details(self) -> dict[str, Any]:
        return {
            "device": self.torch_device,
            "device_name": self.name,
            "arch": self.arch,
            "interpreter": self.interpreted,
            "triton_cache_dir": str(self.cache_dir),
        }


class CheckError(CannotRun):
    """The check could not run here (no GPU visible to torch, a bad option)."""


def open_device(ctx: CheckContext) -> Device:
    """Set up Triton's cache and interpreter, import torch and find the device."""
    from rocmkit.kernels import runtime

    cache = runtime.prepare(ctx.backend, ctx.cache_dir)
    import torch

    if ctx.backend == "cpu":
        return Device(backend="cpu", torch_device="cpu", arch=None, name=None, cache_dir=cache)
    if not torch.cuda.is_available():
        raise CheckError(
            f"torch {torch.__version__} sees no GPU, so the {ctx.backend} kernels cannot run",
            "run `rocmkit doctor --level 1` and fix the failing environment checks first",
        )
    return Device(
        backend=ctx.backend,
        torch_device="cuda",
        arch=runtime.gpu_arch(torch),
        name=runtime.device_name(torch),
        cache_dir=cache,
    )


def import_kernel_module(name: str, device: Device) -> Any:
    import importlib

    from rocmkit.kernels import runtime

    module = importlib.import_module(f"rocmkit.kernels.{name}")
    if device.interpreted:
        # Every jitted function, whatever a new kernel module calls it (ours are `_*_kernel`).
        for attr, value in vars(module).items():
            if type(value).__name__ in ("JITFunction", "InterpretedFunction") or (
                attr.startswith("_") and attr.endswith("_kernel")
            ):
                runtime.require_interpreted(value)
    return module


def copy_bandwidth(torch: Any, n_bytes: int, device: Device, repeats: int) -> float:
    """GB/s of a device-to-device copy of ``n_bytes``: the bandwidth reference."""
    from rocmkit.kernels.timing import measure_ms

    src = torch.empty(n_bytes, dtype=torch.uint8, device=device.torch_device).fill_(1)
    dst = torch.empty_like(src)
    ms, _method, _iterations = measure_ms(
        lambda: dst.copy_(src), device=device.torch_device, repeats=repeats
    )
    return gb_per_s(copy_bytes(n_bytes), ms)


def run_and_measure(
    *,
    kernel: Callable[[], Any],
    expected: Any,
    tolerance: Tolerance,
    device: Device,
    repeats: int,
    label: str,
    work: int,
    unit: str,
    reference: Callable[[], float] | None,
    reference_name: str,
    warn_fraction: float,
    details: dict[str, Any] | None = None,
) -> Measurement:
    """First call (compile), compare with torch, time a warm call, and on a GPU the reference.

    ``work`` is bytes for ``GB/s`` and floating-point operations for ``TFLOP/s``.
    """
    from rocmkit.kernels.compare import compare
    from rocmkit.kernels.timing import measure_ms, synchronize

    synchronize(device.torch_device)
    # The first call compiles (or loads from the cache); the terminal's status line says so.
    say_phase(f"running {label} in Triton's interpreter" if device.interpreted else f"compiling the kernel or loading it from the cache ({label})")
    start = time.perf_counter()
    out = kernel()
    synchronize(device.torch_device)
    first_ms = (time.perf_counter() - start) * 1e3
    say_phase(f"timing {label}")
    comparison = compare(out, expected, tolerance)
    ms, method, iterations = measure_ms(kernel, device=device.torch_device, repeats=repeats)
    timing = Timing(first_call_ms=first_ms, median_ms=ms, method=method, iterations=iterations)
    throughput = gb_per_s(work, ms) if unit == "GB/s" else tflop_per_s(work, ms)
    ref_value: float | None = None
    threshold: float | None = None
    if not device.interpreted and reference is not None:
        ref_value = reference()
        threshold = warn_fraction
    return Measurement(
        label=label,
        comparison=comparison,
        timing=timing,
        throughput=throughput,
        unit=unit,
        reference=ref_value,
        reference_name=reference_name,
        verdict=perf_verdict(throughput, ref_value, threshold),
        details=dict(details or {}),
    )


def measure_vs_copy(
    *,
    kernel: Callable[[], Any],
    expected: Any,
    tolerance: Tolerance,
    device: Device,
    sizes: KernelSizes,
    label: str,
    work: int,
    copy_n_bytes: int,
) -> Measurement:
    """:func:`run_and_measure` for a memory-bound kernel: GB/s against a device-to-device
    copy of ``copy_n_bytes`` (the kernel's input) timed in the same run."""
    import torch

    return run_and_measure(
        kernel=kernel,
        expected=expected,
        tolerance=tolerance,
        device=device,
        repeats=sizes.repeats,
        label=label,
        work=work,
        unit="GB/s",
        reference=lambda: copy_bandwidth(torch, copy_n_bytes, device, sizes.repeats),
        reference_name="a device copy",
        warn_fraction=sizes.warn_fraction,
    )


def _remedy_wrong(name: str, device: Device) -> str:
    if device.backend == "rocm":
        return (
            f"rerun `rocmkit doctor --only {name}`; if it fails again, check that HSA_OVERRIDE_GFX_VERSION "
            "is unset or matches this GPU and that Triton is the build torch pins "
            "(`rocmkit doctor --only torch_env`), then run `AMD_SERIALIZE_KERNEL=3 rocmkit doctor --only "
            f"{name}`"
        )
    if device.backend == "cuda":
        return (
            f"rerun `rocmkit doctor --only {name}`; if it fails again, check that Triton is the build "
            "torch pins and run `CUDA_LAUNCH_BLOCKING=1 rocmkit doctor --only " + name + "`"
        )
    return "check that triton is the version torch pins (`rocmkit doctor --only torch_env`)"


def _remedy_slow(name: str, device: Device) -> str:
    if device.backend == "rocm":
        tools = (
            "`amd-smi process` for other work on the GPU, `amd-smi metric` for clocks, power and temperature"
        )
    else:
        tools = "`nvidia-smi` for other work on the GPU, `nvidia-smi -q -d CLOCK,POWER,PERFORMANCE` for throttling"
    return f"check {tools}; then rerun `rocmkit doctor --only {name}`"


def build_result(
    *,
    what: str,
    device: Device,
    runs: list[Measurement],
    started: float,
    details: dict[str, Any],
) -> CheckResult:
    """One result from one or more measurements (matmul runs one per dtype), named after
    the running check."""
    chk = current_check()
    name = chk.name
    wrong = [m for m in runs if not m.comparison.ok]
    slow = [m for m in runs if m.verdict.slow]
    figures: list[Figure] = []
    for m in runs:
        prefix = name.split(".", 1)[-1] + (f".{m.label}" if len(runs) > 1 else "")
        figures += [
            Figure(name=f"{prefix}.first_call", value=round(m.timing.first_call_ms, 4), unit="ms"),
            # First call minus a warm one: compilation, or the load from the compile cache.
            Figure(name=f"{prefix}.compile", value=round(m.timing.compile_ms, 4), unit="ms"),
            Figure(name=f"{prefix}.time", value=round(m.timing.median_ms, 6), unit="ms"),
            Figure(
                name=f"{prefix}.{'bandwidth' if m.unit == 'GB/s' else 'throughput'}",
                value=round(m.throughput, 6),
                unit=m.unit,
                reference=None if m.reference is None else round(m.reference, 6),
            ),
            Figure(name=f"{prefix}.max_abs_error", value=m.comparison.max_abs_error, unit=""),
        ]
    parts = []
    for m in runs:
        perf = m.verdict.describe(m.unit, m.throughput, m.reference, m.reference_name)
        # Timings are in the figures; the line keeps what a reader acts on.
        parts.append(f"{m.label}: {m.comparison.describe()}; {perf}")
    summary = "; ".join(parts)
    if wrong:
        status, remedy = Status.FAIL, _remedy_wrong(name, device)
        message = f"{what} gives wrong results: {summary}"
    elif slow:
        status, remedy = Status.WARN, _remedy_slow(name, device)
        message = f"{what} is slow: {summary}"
    else:
        status, remedy = Status.PASS, None
        message = f"{what} correct: {summary}"
    if device.interpreted:
        message += f" [{_INTERPRETER_NOTE}]"
    return CheckResult(
        name=name,
        level=chk.level,
        status=status,
        message=message,
        remedy=remedy,
        figures=tuple(figures),
        duration_s=round(time.perf_counter() - started, 3),
        backend=device.label,
        details={
            **device.as_details(),
            **details,
            "runs": [
                {
                    "label": m.label,
                    "comparison": m.comparison.as_details(),
                    "timing": m.timing.as_details(),
                    "throughput": m.throughput,
                    "unit": m.unit,
                    "reference": m.reference,
                    "reference_name": m.reference_name,
                    "fraction": m.verdict.fraction,
                    "warn_below": m.verdict.threshold,
                    **m.details,
                }
                for m in runs
            ],
        },
    )


def guarded(ctx: CheckContext, body: Callable[[Device, KernelSizes, float], CheckResult]) -> CheckResult:
    """Run ``body(device, sizes, started)``; a missing GPU or a bad option is this check's
    ``error`` with a remedy (anything else propagates to the doctor's own handler)."""
    from rocmkit.kernels.sizes import kernel_sizes, merged_options

    started = time.perf_counter()
    try:
        sizes = kernel_sizes(ctx.backend, merged_options(ctx.options, ctx.env))
        device = open_device(ctx)
        return body(device, sizes, started)
    except (CannotRun, UsageError, InterpreterNotActive) as exc:
        remedy: str | None
        if isinstance(exc, InterpreterNotActive):
            message = str(exc)
            remedy = (
                "run it through `rocmkit doctor`, whose child process sets TRITON_INTERPRET=1 before "
                "importing triton, or export TRITON_INTERPRET=1 first"
            )
        elif isinstance(exc, CannotRun):
            message, remedy = exc.message, exc.remedy
        else:
            message, remedy = exc.message, exc.fix
        return CheckResult(
            status=Status.ERROR,
            message=message,
            remedy=remedy,
            duration_s=round(time.perf_counter() - started, 3),
            backend=ctx.backend,
        )


# --- the generic kernel check: the kernel module's run(k), judged here -------------------


@dataclass(frozen=True, kw_only=True)
class KernelRunner:
    """The :class:`~rocmkit.kernels.spec.KernelRun` a kernel module's ``run(k)`` is handed."""

    kernel: str
    device: Device
    sizes: KernelSizes

    @property
    def backend(self) -> str:
        return self.device.backend

    @property
    def torch_device(self) -> str:
        return self.device.torch_device

    @property
    def arch(self) -> str | None:
        return self.device.arch

    @property
    def interpreted(self) -> bool:
        return self.device.interpreted

    @property
    def repeats(self) -> int:
        return self.sizes.repeats

    def size(self, key: str) -> Any:
        return self.sizes[key]

    def generator(self) -> Any:
        import torch

        return torch.Generator(device="cpu").manual_seed(SEED)

    def tolerance(self, dtype: str) -> Tolerance:
        from rocmkit.kernels.tolerance import tolerance

        return tolerance(self.kernel, dtype, self.device.arch)

    def time_ms(self, fn: Callable[[], Any]) -> float:
        from rocmkit.kernels.timing import measure_ms

        ms, _method, _iterations = measure_ms(fn, device=self.device.torch_device, repeats=self.sizes.repeats)
        return ms

    def measure(
        self,
        *,
        kernel: Callable[[], Any],
        expected: Any,
        dtype: str,
        label: str,
        work: int,
        unit: str,
        reference: Callable[[], float] | None,
        reference_name: str,
        warn_fraction: float | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> Measurement:
        return run_and_measure(
            kernel=kernel,
            expected=expected,
            tolerance=self.tolerance(dtype),
            device=self.device,
            repeats=self.sizes.repeats,
            label=label,
            work=work,
            unit=unit,
            reference=reference,
            reference_name=reference_name,
            warn_fraction=self.sizes.warn_fraction if warn_fraction is None else warn_fraction,
            details=dict(details or {}),
        )

    def vs_copy(
        self, *, kernel: Callable[[], Any], expected: Any, dtype: str, label: str, work: int, copy_n_bytes: int
    ) -> Measurement:
        return measure_vs_copy(
            kernel=kernel,
            expected=expected,
            tolerance=self.tolerance(dtype),
            device=self.device,
            sizes=self.sizes,
            label=label,
            work=work,
            copy_n_bytes=copy_n_bytes,
        )


def _handed(runner: KernelRunner) -> KernelRun:
    """mypy proves here that :class:`KernelRunner` is what kernel modules are promised."""
    return runner


def run_kernel(ctx: CheckContext, name: str) -> CheckResult:
    """The body of every ``triton.<name>`` check, in the doctor's child: import the kernel
    module (and so triton), let its ``run(k)`` measure, and judge the :class:`Report`."""

    def body(device: Device, sizes: KernelSizes, started: float) -> CheckResult:
        module = import_kernel_module(name, device)
        report = module.run(_handed(KernelRunner(kernel=name, device=device, sizes=sizes)))
        if not isinstance(report, Report):
            raise TypeError(f"rocmkit.kernels.{name}.run() returned {type(report).__name__}, not a Report")
        return build_result(
            what=report.what, device=device, runs=list(report.runs), started=started, details=dict(report.details)
        )

    return guarded(ctx, body)
