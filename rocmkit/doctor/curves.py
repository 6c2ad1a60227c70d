"""Do two training curves agree? PyTorch's own accuracy rule, applied to loss and grad-norm curves.

``compile.correctness`` trains the same tiny models eagerly and under ``torch.compile``
and records, per step, the loss and the global gradient norm; an fp64 eager run of the
same steps is the reference both are measured against. This module judges those curves
with no torch at all (the doctor's parent and the unit tests run it on plain floats).

The rule is ``torch._dynamo.utils.same`` (torch 2.13.0, git cf30153c, the version the
suite runs; PyTorch's dynamo benchmark harness, benchmarks/dynamo/common.py, judges every
model with it), applied to a curve as one tensor:

1. ``allclose(eager, compiled, atol=tol, rtol=tol)`` passes;
2. else the fp64 rule: ``rmse(fp64, compiled) <= multiplier * rmse(fp64, eager) + tol / 10``,
   with ``multiplier`` 3.0 here: ``same`` uses 3.0 for reduced precision (AMP) and for
   tensors of fewer than 1000 elements, which a curve of a few dozen steps always is;
3. with ``cosine``, a cosine similarity of at least 0.99 passes instead of rule 2.

``tol``: the harness's training tolerance for a GPU, 1e-3 in fp32 and 1e-2 under AMP
(benchmarks/dynamo/torchbench.py ``get_tolerance_and_cosine_flag``: training on cuda 1e-3;
float16/amp models on its ``higher_fp16`` list 1e-2), recorded as ``TOLERANCES``.

The step a divergence began is the first step whose prefix of the curve fails the rule:
the curves agreed up to the step before it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# (precision) -> tol, from benchmarks/dynamo/torchbench.py get_tolerance_and_cosine_flag.
TOLERANCES: dict[str, float] = {"fp32": 1e-3, "amp": 1e-2}
TOLERANCE_SOURCE = (
    "pytorch/pytorch benchmarks/dynamo/torchbench.py get_tolerance_and_cosine_flag "
    "(training on a GPU 1e-3; amp/fp16 'higher' 1e-2) and torch/_dynamo/utils.py same()"
)
COSINE_MIN = 0.99
# same(): 3.0 for bf16/fp16 results and for tensors under 1000 elements (every curve here).
MULTIPLIER = 3.0


@dataclass(frozen=True, kw_only=True)
class CurveVerdict:
    """How one compiled curve compared with the eager one."""

    ok: bool
    method: str  # "allclose", "fp64_rmse", "cosine", or "failed:<rule>"
    tol: float
    first_bad_step: int | None = None  # the step the divergence began (0-based)
    max_abs_diff: float = 0.0
    res_rmse: float | None = None  # compiled vs fp64
    ref_rmse: float | None = None  # eager vs fp64
    cosine: float | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "method": self.method,
            "tol": self.tol,
            "first_bad_step": self.first_bad_step,
            "max_abs_diff": self.max_abs_diff,
            "res_rmse": self.res_rmse,
            "ref_rmse": self.ref_rmse,
            "cosine": self.cosine,
        }


def _finite(xs: Sequence[float]) -> bool:
    return all(math.isfinite(x) for x in xs)


def _allclose(ref: Sequence[float], res: Sequence[float], tol: float) -> bool:
    # torch.allclose: |res - ref| <= atol + rtol * |ref's counterpart| (other = ref here, as in same()).
    return all(abs(a - b) <= tol + tol * abs(b) for a, b in zip(ref, res, strict=True))


def _rmse(a: Sequence[float], b: Sequence[float]) -> float:
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)) / len(a)) if a else 0.0


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / max(na * nb, 1e-6)


def same_curve(
    ref: Sequence[float],
    res: Sequence[float],
    fp64: Sequence[float] | None,
    *,
    tol: float,
    cosine: bool = False,
) -> tuple[bool, str, dict[str, float]]:
    """``same()`` for one whole curve: (passes, the rule that decided, its numbers)."""
    if len(ref) != len(res) or (fp64 is not None and len(fp64) != len(ref)):
        return False, "failed:length", {}
    info: dict[str, float] = {"max_abs_diff": max((abs(a - b) for a, b in zip(ref, res, strict=True)), default=0.0)}
    if not _finite(res) and _finite(ref):
        return False, "failed:nonfinite", info  # compiled went to inf/NaN where eager did not
    if _allclose(ref, res, tol):
        return True, "allclose", info
    if cosine:
        cos = _cosine(ref, res)
        info["cosine"] = cos
        return cos >= COSINE_MIN, "cosine" if cos >= COSINE_MIN else "failed:cosine", info
    if fp64 is None:
        return False, "failed:allclose", info
    res_err, ref_err = _rmse(fp64, res), _rmse(fp64, ref)
    info["res_rmse"], info["ref_rmse"] = res_err, ref_err
    ok = res_err <= MULTIPLIER * ref_err + tol / 10.0
    return ok, "fp64_rmse" if ok else "failed:fp64_rmse", info


def judge_curve(
    ref: Sequence[float],
    res: Sequence[float],
    fp64: Sequence[float] | None,
    *,
    tol: float,
    cosine: bool = False,
) -> CurveVerdict:
    """The whole curve's verdict and, when it fails, the first step whose prefix fails."""
    ok, method, info = same_curve(ref, res, fp64, tol=tol, cosine=cosine)
    first: int | None = None
    if not ok and method != "failed:length":
        for k in range(1, len(ref) + 1):
            good, _, _ = same_curve(ref[:k], res[:k], None if fp64 is None else fp64[:k], tol=tol, cosine=cosine)
            if not good:
                first = k - 1
                break
    return CurveVerdict(
        ok=ok,
        method=method,
        tol=tol,
        first_bad_step=first,
        max_abs_diff=info.get("max_abs_diff", 0.0),
        res_rmse=info.get("res_rmse"),
        ref_rmse=info.get("ref_rmse"),
        cosine=info.get("cosine"),
    )
