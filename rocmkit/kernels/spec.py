"""What a smoke kernel module provides besides its declaration, and what the doctor hands it.

A kernel module (``rocmkit/kernels/<name>.py``; its ``CHECK`` declaration is read by
:mod:`rocmkit.kernels.catalog`) defines:

- ``run(k: KernelRun) -> Report``: the check body. It builds the inputs and the torch
  reference and measures the kernel through ``k``; the doctor's harness turns the
  :class:`Report` into the check's result (status, figures, message, remedy).
- ``aot_builds(backend) -> Iterator[Build]``: the variants the doctor launches at the GPU
  sizes, which ``triton.codegen`` compiles ahead of time (:mod:`rocmkit.kernels.aot`).

Pure types: no torch, no triton, nothing of the doctor (``k`` is its
:class:`~rocmkit.doctor.harness.KernelRunner`, seen here only as a protocol).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rocmkit.kernels.compare import Comparison, Tolerance
from rocmkit.kernels.metrics import PerfVerdict
from rocmkit.kernels.timing import Timing

# Triton's pointer and scalar type names for the torch dtypes the kernels use.
TRITON_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "int32": "i32"}


@dataclass(frozen=True, kw_only=True)
class Build:
    """One kernel variant to compile ahead of time: the jitted function and its specialisation."""

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
class Measurement:
    """One kernel run: correctness, timing and throughput against its reference."""

    label: str  # "float16", "float32 129x781": names the run in messages and figures
    comparison: Comparison
    timing: Timing
    throughput: float
    unit: str  # "GB/s" or "TFLOP/s"
    reference: float | None  # the torch reference's throughput in the same unit
    reference_name: str
    verdict: PerfVerdict
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class Report:
    """What a kernel's ``run(k)`` measured: the doctor names, judges and reports it."""

    what: str  # "vector add": the subject of the result's message
    runs: Sequence[Measurement]  # one per dtype (matmul) or one
    details: Mapping[str, Any] = field(default_factory=dict)  # the result's details: sizes


class CannotRun(Exception):
    """The check cannot run here (every tile too big for this GPU): an ``error`` result."""

    def __init__(self, message: str, remedy: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.remedy = remedy


class KernelRun(Protocol):
    """What a kernel's ``run(k)`` is handed: the device, its sizes, and the measuring."""

    @property
    def kernel(self) -> str:
        """The kernel module's name, whose declared tolerances apply."""

    @property
    def backend(self) -> str:
        """"rocm", "cuda" or "cpu" (the Triton interpreter)."""

    @property
    def torch_device(self) -> str:
        """"cuda" or "cpu": where the inputs go."""

    @property
    def arch(self) -> str | None:
        """"gfx90a:sramecc+:xnack-", "sm_90"; None on the CPU."""

    @property
    def interpreted(self) -> bool:
        """True under the Triton interpreter: no speed threshold applies there."""

    @property
    def repeats(self) -> int:
        """Timed calls per measurement (``--set repeats``)."""

    def size(self, key: str) -> Any:
        """An option's value for this backend (declared default or ``--set``)."""

    def generator(self) -> Any:
        """A CPU ``torch.Generator`` seeded with the doctor's seed: the same inputs every run."""

    def tolerance(self, dtype: str) -> Tolerance:
        """This kernel's declared tolerance for ``dtype`` on this device's architecture."""

    def time_ms(self, fn: Callable[[], Any]) -> float:
        """The median milliseconds of ``fn`` on this device: for a torch reference."""

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
        """First call (compile), compare with ``expected`` under :meth:`tolerance`, time a warm
        call, and on a GPU ``reference()`` in the same ``unit`` ("GB/s": ``work`` is bytes;
        "TFLOP/s": operations). Below ``warn_fraction`` (default ``--set warn_fraction``) of the
        reference is a warning; 0 never warns."""

    def vs_copy(
        self, *, kernel: Callable[[], Any], expected: Any, dtype: str, label: str, work: int, copy_n_bytes: int
    ) -> Measurement:
        """:meth:`measure` for a memory-bound kernel: GB/s against a device-to-device copy of
        ``copy_n_bytes`` (the kernel's input) timed in the same run."""
