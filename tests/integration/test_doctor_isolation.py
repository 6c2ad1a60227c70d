"""Isolation for real: each check in its own child; crashes, hangs and exceptions
become that check's result while the others run."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.doctor.registry import CheckContext, load_checks
from rocmkit.doctor.result import Status
from rocmkit.doctor.run import RunOptions, doctor
from rocmkit.machine import Machine

pytestmark = pytest.mark.integration

MOD = "tests.integration.doctor_fake_checks"


def _run(tmp_path: Path, *only: str, backend: str = "cpu"):  # type: ignore[no-untyped-def]
    seen: list[str] = []
    report = doctor(
        Machine(),
        RunOptions(level=3, only=only, modules=(MOD,), backend=backend),  # type: ignore[arg-type]
        cache_dir=tmp_path / "cache",
        on_result=lambda chk, results: seen.extend(r.name for r in results),
    )
    return report, {r.name: r for r in report.results}, seen


def test_crash_hang_and_raise_are_results_and_the_others_run(tmp_path: Path) -> None:
    report, by_name, seen = _run(tmp_path, "fake.segfault", "fake.hang", "fake.raises", "fake.ok")
    assert seen == ["fake.ok", "fake.segfault", "fake.hang", "fake.raises"]  # registration order

    seg = by_name["fake.segfault"]
    assert seg.status is Status.ERROR
    assert "SIGSEGV" in seg.message
    tail = "\n".join(seg.details["stderr_tail"])
    assert "about to crash" in tail
    assert "Fatal Python error: Segmentation fault" in tail  # faulthandler's dump
    assert seg.remedy and "AMD_SERIALIZE_KERNEL=3" in seg.remedy

    hang = by_name["fake.hang"]
    assert hang.status is Status.ERROR
    assert "did not finish within 3 s" in hang.message
    assert hang.duration_s >= 3  # it got its whole timeout; the message says it was killed at it

    raised = by_name["fake.raises"]
    assert raised.status is Status.ERROR
    assert raised.message == "raised RuntimeError: boom in the child"
    assert any("boom in the child" in line for line in raised.details["traceback"])

    assert by_name["fake.ok"].status is Status.PASS
    assert report.verdict is Status.ERROR
    assert report.exit_code == 3


def test_child_environment_interpreter_and_caches(tmp_path: Path) -> None:
    _, by_name, _ = _run(tmp_path, "fake.ok")
    ok = by_name["fake.ok"]
    assert ok.status is Status.PASS
    assert ok.backend == "cpu"
    assert ok.details["TRITON_INTERPRET"] == "1"
    assert ok.details["TRITON_CACHE_DIR"] == str(tmp_path / "cache" / "triton")
    assert ok.details["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "cache" / "inductor")
    assert ok.details["triton_imported_before_check"] is False
    assert ok.figures[0].value == 42.0
    import os

    assert ok.details["pid"] != os.getpid()


def test_rocm_backend_does_not_force_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    _, by_name, _ = _run(tmp_path, "fake.ok", backend="rocm")
    assert by_name["fake.ok"].details["TRITON_INTERPRET"] is None
    assert by_name["fake.ok"].details["backend"] == "rocm"


def test_oom_killer_exit_and_multiple_results(tmp_path: Path) -> None:
    report, by_name, _ = _run(tmp_path, "fake.oom", "fake.killed", "fake.exits", "fake.many")
    assert by_name["fake.oom"].status is Status.ERROR
    assert by_name["fake.oom"].message.startswith("ran out of device memory")
    assert "SIGKILL" in by_name["fake.killed"].message
    assert "out-of-memory killer" in by_name["fake.killed"].message
    exits = by_name["fake.exits"]
    assert exits.message == "the check's process exited with code 17: fake.exits: giving up"
    assert by_name["fake.many.a"].status is Status.PASS
    assert by_name["fake.many.b"].status is Status.WARN
    assert report.exit_code == 3


def test_fail_outranks_error_in_the_exit_code(tmp_path: Path) -> None:
    report, _, _ = _run(tmp_path, "fake.fail", "fake.raises")
    assert report.exit_code == 1


def test_modules_env_var_loads_extra_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    from rocmkit.doctor.registry import check_modules

    monkeypatch.setenv("ROCMKIT_DOCTOR_MODULES", f" {MOD} ,")
    mods = check_modules()
    assert mods[-1] == MOD
    assert "fake.hang" in load_checks(mods)
    assert "fake.hang" not in load_checks(mods[:-1])


def test_context_round_trips_to_the_child(tmp_path: Path) -> None:
    from rocmkit.machine import Gpu

    m = Machine(gpus=(Gpu(vendor="amd", index=0, arch="gfx90a"), Gpu(vendor="amd", index=1, arch="gfx90a")))
    ctx = CheckContext(machine=m, backend="rocm", cache_dir=tmp_path)
    assert CheckContext.from_dict(ctx.to_dict()) == ctx
    report = doctor(
        m,
        RunOptions(only=("fake.ok",), modules=(MOD,), backend="rocm"),
        cache_dir=tmp_path,
    )
    assert report.results[0].details["gpus"] == 2


def test_details_json_cannot_encode_are_kept_as_text(tmp_path: Path) -> None:
    _, by_name, _ = _run(tmp_path, "fake.odd_details")
    assert by_name["fake.odd_details"].status is Status.PASS
    assert by_name["fake.odd_details"].details == {"where": "/tmp"}


def test_a_hang_in_exit_handlers_does_not_lose_a_finished_result(tmp_path: Path) -> None:
    _, by_name, _ = _run(tmp_path, "fake.teardown_hang")
    r = by_name["fake.teardown_hang"]
    assert r.status is Status.PASS
    # The child skipped its exit handlers: it ended on its own, not by the timeout (a child
    # killed at its timeout, or one that ended badly, has a child_exit note beside its result).
    assert "child_exit" not in r.details


def test_a_gpu_hang_skips_the_later_gpu_checks(tmp_path: Path) -> None:
    _, by_name, _ = _run(tmp_path, "fake.gpu_hang", "fake.gpu_after", "fake.ok", backend="rocm")
    assert by_name["fake.gpu_hang"].status is Status.ERROR
    after = by_name["fake.gpu_after"]
    assert after.status is Status.SKIP
    assert after.message == "not run: fake.gpu_hang hung, so the GPU may be wedged"
    assert by_name["fake.ok"].status is Status.PASS  # needs no GPU: still runs
