"""How close a kernel's answer must be to torch's, per kernel, dtype and GPU architecture.

Pure data and lookup: no torch, no triton. Each entry names its source. Where a Triton
tutorial asserts a tolerance we use it; elsewhere the bound is ours, derived from the
dtype's rounding unit and stated next to the entry.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocmkit.arch import base_arch
from rocmkit.errors import UsageError


@dataclass(frozen=True, kw_only=True)
class Tolerance:
    atol: float
    rtol: float
    source: str

    @property
    def exact(self) -> bool:
        return self.atol == 0 and self.rtol == 0

    def allows(self, error: float, magnitude: float) -> bool:
        """The ``allclose`` rule for one element: ``|a - b| <= atol + rtol * |b|``."""
        return error <= self.atol + self.rtol * magnitude

    def describe(self) -> str:
        return "exact" if self.exact else f"atol {self.atol:g}, rtol {self.rtol:g}"


_TUTORIAL_ADD = "triton tutorial 01-vector-add: IEEE add is correctly rounded, so results match bit for bit"
_TUTORIAL_SOFTMAX = "triton tutorial 02-fused-softmax: torch.allclose defaults (rtol 1e-5, atol 1e-8)"
_TUTORIAL_MATMUL = "triton tutorial 03-matrix-multiplication: atol 1e-2, rtol 0 for fp16"
_TUTORIAL_LN = "triton tutorial 05-layer-norm: atol 1e-2, rtol 0 for fp16"
# rocmkit's own bounds, for cases no tutorial asserts:
_OWN_FP32_REDUCTION = (
    "rocmkit: fp32 sums in another order differ by about sqrt(n) * 6e-8 relative; 1e-4 leaves 10x headroom"
)
_OWN_BF16 = (
    "rocmkit: bf16 keeps 8 significant bits (one ulp is 2^-7 relative), so two correctly "
    "accumulated results may differ by one ulp: atol and rtol 1e-2"
)
_EXACT_INT = "integer counts have one right answer"
_OWN_SDPA = (
    "rocmkit: fused attention against the fp32 math reference; the output is a weighted mean of V, "
    "so a wrong kernel is off by O(1) while rounding stays near the dtype's ulp"
)

# (kernel, dtype) -> tolerance on every architecture unless overridden below.
TABLE: dict[tuple[str, str], Tolerance] = {
    ("vector_add", "float32"): Tolerance(atol=0.0, rtol=0.0, source=_TUTORIAL_ADD),
    ("softmax", "float32"): Tolerance(atol=1e-8, rtol=1e-5, source=_TUTORIAL_SOFTMAX),
    ("matmul", "float16"): Tolerance(atol=1e-2, rtol=0.0, source=_TUTORIAL_MATMUL),
    ("matmul", "bfloat16"): Tolerance(atol=1e-2, rtol=1e-2, source=_OWN_BF16),
    ("matmul", "float32"): Tolerance(atol=1e-4, rtol=1e-4, source=_OWN_FP32_REDUCTION),
    ("layernorm", "float16"): Tolerance(atol=1e-2, rtol=0.0, source=_TUTORIAL_LN),
    ("layernorm", "bfloat16"): Tolerance(atol=2e-2, rtol=1e-2, source=_OWN_BF16),
    ("layernorm", "float32"): Tolerance(atol=1e-4, rtol=1e-4, source=_OWN_FP32_REDUCTION),
    ("histogram", "int32"): Tolerance(atol=0.0, rtol=0.0, source=_EXACT_INT),
    ("sdpa", "float32"): Tolerance(atol=1e-4, rtol=1e-4, source=_OWN_FP32_REDUCTION),
    ("sdpa", "float16"): Tolerance(atol=1e-2, rtol=1e-2, source=_OWN_SDPA),
    ("sdpa", "bfloat16"): Tolerance(atol=2e-2, rtol=2e-2, source=_OWN_SDPA),
}

# CDNA2 (gfx90a: MI210/MI250/MI250X) matrix cores compute fp16/bf16 with reduced
# precision and flush input and output denormals to zero, so the Triton tutorial
# 03-matrix-multiplication relaxes rtol to 1e-2 there (`is_hip_cdna2()`).
CDNA2_ARCHS = frozenset({"gfx90a"})
_CDNA2_SOURCE = (
    "triton tutorial 03-matrix-multiplication: rtol 1e-2 on CDNA2 (is_hip_cdna2), denormals flushed"
)
CDNA2_OVERRIDES: dict[tuple[str, str], Tolerance] = {
    ("matmul", "float16"): Tolerance(atol=1e-2, rtol=1e-2, source=_CDNA2_SOURCE),
    ("matmul", "bfloat16"): Tolerance(atol=2e-2, rtol=2e-2, source=_CDNA2_SOURCE),
    ("sdpa", "float16"): Tolerance(atol=2e-2, rtol=2e-2, source=_CDNA2_SOURCE),
    ("sdpa", "bfloat16"): Tolerance(atol=3e-2, rtol=3e-2, source=_CDNA2_SOURCE),
}


def tolerance(kernel: str, dtype: str, arch: str | None = None) -> Tolerance:
    """The tolerance for ``kernel`` computing in ``dtype`` (``"float16"``) on ``arch``."""
    key = (kernel, dtype)
    if base_arch(arch) in CDNA2_ARCHS and key in CDNA2_OVERRIDES:
        return CDNA2_OVERRIDES[key]
    try:
        return TABLE[key]
    except KeyError:
        known = ", ".join(sorted(d for k, d in TABLE if k == kernel)) or "none"
        raise UsageError(
            f"no tolerance for {kernel} in {dtype}",
            f"use one of the dtypes with a known tolerance for {kernel}: {known}",
        ) from None
