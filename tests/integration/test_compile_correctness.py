"""compile.correctness for real: training eager vs torch.compile on the CPU, in the doctor's fork.

The passing run compiles with inductor (the CPU backend); the failing runs compile with a
backend that really computes a wrong gradient (tests/integration/diverging_backend.py), so
the check must find the divergence, the step it began and the mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.doctor.result import CheckResult, Status
from rocmkit.doctor.run import RunOptions, doctor
from rocmkit.machine import Machine

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BAD = "tests.integration.diverging_backend"


def _check(tmp_path: Path, **options: object) -> CheckResult:
    report = doctor(
        Machine(),
        RunOptions(level=2, only=("compile.correctness",), backend="cpu", options=dict(options)),
        cache_dir=tmp_path / "cache",
    )
    (r,) = report.results
    return r


def test_inductor_trains_like_eager_on_the_cpu_and_the_pass_is_reused(tmp_path: Path) -> None:
    r = _check(tmp_path, **{"compile.steps": 3})
    assert r.status is Status.PASS, r.message
    assert r.name == "compile.correctness" and r.level == 2
    (run,) = r.details["runs"]  # level 2: the one small model
    assert run["model"] == "mini" and run["mode"] == "default" and run["loss"]["ok"] and run["grad_norm"]["ok"]
    assert len(run["curves"]["compiled"]["loss"]) == 3
    # No CUDA/HIP graphs on a CPU: reduce-overhead is said to be left out, not silently dropped.
    assert "reduce-overhead not run" in r.message
    # The same stack again: the verdict is reused, not compiled again, and says so.
    again = _check(tmp_path, **{"compile.steps": 3})
    assert again.status is Status.PASS and again.details["reused_from"].endswith("Z")
    assert "[verdict reused from " in again.message and again.duration_s == 0.0


def test_a_compiled_model_with_a_wrong_gradient_fails_at_step_0(tmp_path: Path) -> None:
    # Level 2's one small model catches it...
    small = _check(tmp_path, **{"compile.backend": f"{BAD}:wrong_relu_grad", "compile.steps": 4})
    assert small.status is Status.FAIL, small.message
    assert "mini mode=default diverged from eager at step 0" in small.message
    (run,) = small.details["runs"]
    assert run["grad_norm"]["first_bad_step"] == 0
    # ...and so do level 3's two.
    r = _check(tmp_path, **{"compile.backend": f"{BAD}:wrong_relu_grad", "compile.steps": 4,
                            "compile.models": "transformer,convnet"})
    assert r.status is Status.FAIL, r.message
    assert "transformer mode=default diverged from eager at step 0" in r.message
    assert "convnet mode=default diverged" in r.message
    by_model = {run["model"]: run for run in r.details["runs"]}
    assert by_model["convnet"]["grad_norm"]["first_bad_step"] == 0
    assert by_model["convnet"]["grad_norm"]["method"] == "failed:fp64_rmse"
    assert r.remedy is not None and "TORCHDYNAMO_REPRO_AFTER=aot" in r.remedy


def test_a_divergence_that_begins_later_is_dated(tmp_path: Path) -> None:
    r = _check(tmp_path, **{"compile.backend": f"{BAD}:late_wrong_relu_grad", "compile.models": "convnet",
                            "compile.steps": 5})
    assert r.status is Status.FAIL, r.message
    (run,) = r.details["runs"]
    # Right for three calls, wrong from the fourth: the gradient norm curve agrees up to step 2.
    assert run["grad_norm"]["first_bad_step"] == 3
    assert "convnet mode=default diverged from eager at step 3" in r.message


def test_bad_options_are_an_error_with_the_fix(tmp_path: Path) -> None:
    r = _check(tmp_path, **{"compile.models": "resnet"})
    assert r.status is Status.ERROR and "compile.models" in (r.remedy or "")
