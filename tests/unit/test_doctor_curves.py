"""PyTorch's same() rule on training curves: what compile.correctness judges with."""

from __future__ import annotations

from rocmkit.doctor.checks.compiled import judge
from rocmkit.doctor.curves import judge_curve, same_curve
from rocmkit.doctor.result import Status

FP64 = [2.30, 2.10, 1.95, 1.80, 1.70]
EAGER = [x + 1e-7 for x in FP64]  # fp32 noise


def test_identical_curves_pass_by_allclose() -> None:
    v = judge_curve(EAGER, list(EAGER), FP64, tol=1e-3)
    assert v.ok and v.method == "allclose" and v.first_bad_step is None


def test_small_drift_inside_the_tolerance_passes_even_when_fp64_would_reject_it() -> None:
    # allclose comes first in same(): 1e-4 on a loss of 2 is inside atol + rtol * |x|.
    res = [x + 1e-4 for x in EAGER]
    assert judge_curve(EAGER, res, FP64, tol=1e-3).ok


def test_divergence_fails_by_the_fp64_rule_and_names_the_step_it_began() -> None:
    res = list(EAGER[:2]) + [x + 0.05 * (i + 1) for i, x in enumerate(EAGER[2:])]
    v = judge_curve(EAGER, res, FP64, tol=1e-3)
    assert not v.ok and v.method == "failed:fp64_rmse"
    assert v.first_bad_step == 2
    assert v.res_rmse is not None and v.ref_rmse is not None and v.res_rmse > 3 * v.ref_rmse


def test_the_fp64_rule_rescues_a_compiled_curve_no_worse_than_eager() -> None:
    # Both drift from fp64 by the same amount, in opposite directions: beyond allclose
    # (tol 1e-4 here), within 3x eager's own error.
    eager = [x + 4e-3 for x in FP64]
    res = [x - 4e-3 for x in FP64]
    ok, method, _ = same_curve(eager, res, FP64, tol=1e-4)
    assert ok and method == "fp64_rmse"


def test_nan_in_the_compiled_curve_alone_fails() -> None:
    res = [*EAGER[:3], float("nan"), float("nan")]
    v = judge_curve(EAGER, res, FP64, tol=1e-3)
    assert not v.ok and v.method == "failed:nonfinite" and v.first_bad_step == 3


def test_cosine_rule_without_fp64() -> None:
    ok, method, info = same_curve([1.0, 2.0, 3.0], [1.1, 2.1, 3.2], None, tol=1e-3, cosine=True)
    assert ok and method == "cosine" and info["cosine"] > 0.99
    ok, method, _ = same_curve([1.0, 2.0, 3.0], [1.1, 2.1, 3.2], None, tol=1e-3)
    assert not ok and method == "failed:allclose"


def _run(mode: str, compiled: list[float]) -> dict[str, object]:
    curves = {"loss": compiled, "grad_norm": [1.0] * len(compiled)}
    base = {"loss": EAGER, "grad_norm": [1.0] * len(EAGER)}
    return {"model": "convnet", "mode": mode, "eager": base, "compiled": curves,
            "fp64": {"loss": FP64, "grad_norm": [1.0] * len(FP64)}}


def test_a_reduce_overhead_divergence_names_the_mode_to_avoid_and_the_upstream_issue() -> None:
    bad = [*EAGER[:3], EAGER[3] + 0.2, EAGER[4] + 0.3]
    r = judge([_run("default", list(EAGER)), _run("reduce-overhead", bad)], backend="inductor", tol=1e-3, skipped=[])
    assert r.status is Status.FAIL
    assert "convnet mode=reduce-overhead diverged from eager at step 3" in r.message
    assert "mode=default" not in r.message
    assert r.remedy is not None and "avoid torch.compile(mode='reduce-overhead')" in r.remedy
    assert "pytorch#187715" in r.remedy and "cudagraph_trees = False" in r.remedy


def test_a_default_mode_divergence_points_at_the_minifier() -> None:
    bad = [x + 0.5 for x in EAGER]
    r = judge([_run("default", bad)], backend="inductor", tol=1e-3, skipped=[])
    assert r.status is Status.FAIL and "step 0" in r.message
    assert r.remedy is not None and "TORCHDYNAMO_REPRO_LEVEL=4" in r.remedy


def test_a_compile_error_fails_and_skipped_modes_are_said() -> None:
    r = judge([{"model": "transformer", "mode": "default", "error": "torch.compile failed: boom"}],
              backend="inductor", tol=1e-3, skipped=["reduce-overhead not run: CUDA/HIP graphs need a GPU"])
    assert r.status is Status.FAIL and "boom" in r.message and "reduce-overhead not run" in r.message
