"""Doctor level 3 (models.compile_speedup): thresholds and verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.bench.results import ModelResult, SuiteResult
from rocmkit.doctor.checks import models as check
from rocmkit.doctor.registry import CheckContext, load_checks
from rocmkit.doctor.result import Status
from rocmkit.errors import RocmkitError
from rocmkit.machine import Machine


def ctx(
    backend: str = "rocm", options: dict[str, object] | None = None, env: dict[str, str] | None = None
) -> CheckContext:
    return CheckContext(
        machine=Machine(),
        backend=backend,  # type: ignore[arg-type]
        options=options or {},
        env=env or {},
        cache_dir=Path("/tmp"),
    )


def suite(*speedups_or_status: float | str) -> SuiteResult:
    rows = []
    for i, v in enumerate(speedups_or_status):
        if isinstance(v, str):
            rows.append(ModelResult(name=f"m{i}", status=v, message="it went wrong"))  # type: ignore[arg-type]
        else:
            rows.append(ModelResult(name=f"m{i}", status="pass", speedup=v))
    return SuiteResult(
        backend="rocm", device="gpu", mode="infer", dtype="fp32", size="full", repeat=30, models=tuple(rows)
    )


def test_registered_at_level_3() -> None:
    chk = load_checks(("rocmkit.doctor.checks.models",))["models.compile_speedup"]
    assert chk.level == 3 and "torch" in chk.needs and not chk.isolated


def test_thresholds_by_backend_option_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(check.MIN_GEOMEAN_ENV, raising=False)
    assert check.threshold(ctx("cpu")) == 0.0
    assert check.threshold(ctx("rocm")) == 1.0
    assert check.threshold(ctx("cuda")) == 1.0
    assert check.threshold(ctx("rocm", env={check.MIN_GEOMEAN_ENV: "1.3"})) == 1.3
    assert check.threshold(ctx("rocm", {"models.min_geomean": 1.1}, {check.MIN_GEOMEAN_ENV: "1.3"})) == 1.1
    with pytest.raises(RocmkitError, match="not a number"):
        check.threshold(ctx("rocm", {"models.min_geomean": "fast"}))


def test_pass_above_threshold_with_figures() -> None:
    r = check.judge(suite(1.5, 1.2), 1.0)
    assert r.status is Status.PASS
    figs = {f.name: f.value for f in r.figures}
    assert figs["geomean_speedup"] == pytest.approx((1.5 * 1.2) ** 0.5)
    assert figs["pass_rate"] == 100.0 and figs["m0.speedup"] == 1.5
    assert r.details["bench"]["schema"] == "rocmkit.bench/1"


def test_slow_geomean_fails_but_cpu_only_reports() -> None:
    r = check.judge(suite(0.9, 0.8), 1.0)
    assert r.status is Status.FAIL and "below the 1x" in r.message and r.remedy
    assert check.judge(suite(0.9, 0.8), 0.0).status is Status.PASS


def test_a_wrong_or_uncompilable_model_fails_whatever_the_speed() -> None:
    r = check.judge(suite(3.0, "fail_accuracy", "compile_error"), 0.0)
    assert r.status is Status.FAIL
    assert "m1 fail_accuracy" in r.message and "m2 compile_error" in r.message
    assert r.remedy is not None and "--models m1,m2" in r.remedy


def test_timeouts_mean_the_check_could_not_run() -> None:
    r = check.judge(suite(1.5, "timeout"), 1.0)
    assert r.status is Status.ERROR and "m1 timeout" in r.message


def test_a_slow_geomean_within_noise_is_a_warning() -> None:
    rows = tuple(
        ModelResult(name=f"m{i}", status="pass", speedup=0.95, speedup_q1=0.8, speedup_q3=1.1)
        for i in range(3)
    )
    noisy = SuiteResult(
        backend="rocm", device="gpu", mode="infer", dtype="fp32", size="full", repeat=30, models=rows
    )
    r = check.judge(noisy, 1.0)
    assert r.status is Status.WARN and "within the noise" in r.message
