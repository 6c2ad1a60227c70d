"""The fork server: one warm worker per run, a fork per check, nothing shared between checks."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from rocmkit.doctor.forkserver import ForkServer, WorkerUnavailable
from rocmkit.doctor.registry import CheckContext, load_checks
from rocmkit.doctor.result import CheckResult, Status
from rocmkit.doctor.run import RunOptions, doctor
from rocmkit.machine import Machine

pytestmark = pytest.mark.integration

MOD = "tests.integration.doctor_fake_checks"


def _run(tmp_path: Path, *only: str, **opts: Any) -> dict[str, CheckResult]:
    report = doctor(
        Machine(),
        RunOptions(level=3, only=only, modules=(MOD,), backend="cpu", **opts),
        cache_dir=tmp_path / "cache",
    )
    return {r.name: r for r in report.results}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purpose.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_state_a_check_changes_does_not_reach_the_next_and_torch_is_imported_once(tmp_path: Path) -> None:
    by_name = _run(tmp_path, "fake.state_before", "fake.set_state", "fake.state_after", jobs=1)
    before, changed, after = (by_name[n].details for n in ("fake.state_before", "fake.set_state", "fake.state_after"))
    assert changed["leak_env"] == "1" and changed["cwd"] == "/"
    assert changed["default_dtype"] == "torch.float64" and changed["deterministic"] is True
    for seen in (before, after):
        assert seen["leak_env"] is None
        assert seen["cwd"] != "/"
        assert seen["default_dtype"] == "torch.float32"
        assert seen["deterministic"] is False
    # torch was imported once, by the worker, before any check ran: every fork found it
    # loaded, and all three forks share that one worker as their parent.
    assert before["torch_preloaded"] and changed["torch_preloaded"] and after["torch_preloaded"]
    assert before["worker_pid"] == changed["worker_pid"] == after["worker_pid"] != os.getpid()


def test_a_worker_that_dies_is_restarted_and_the_rest_run(tmp_path: Path) -> None:
    by_name = _run(tmp_path, "fake.state_before", "fake.kill_worker", "fake.state_after", jobs=1)
    died = by_name["fake.kill_worker"]
    assert died.status is Status.ERROR
    # Run once more in a new worker (a neighbour may have been the killer), it killed that
    # one too: then it is this check's error.
    assert "worker process died twice" in died.message
    assert "the second time killed by SIGKILL" in died.message and died.details["worker_exit"] == "killed by SIGKILL"
    before, after = by_name["fake.state_before"], by_name["fake.state_after"]
    assert before.status is after.status is Status.PASS
    assert after.details["worker_pid"] != before.details["worker_pid"]
    assert after.details["torch_preloaded"] is True
    assert not _alive(int(before.details["worker_pid"]))


def test_a_worker_ended_by_its_check_is_reported_as_what_happened(tmp_path: Path) -> None:
    # SIGTERM from the check itself: no out-of-memory killer sends that.
    died = _run(tmp_path, "fake.term_worker", jobs=1)["fake.term_worker"]
    assert died.status is Status.ERROR
    assert "the second time killed by SIGTERM" in died.message, died.message
    assert "out-of-memory" not in died.message and "out of memory" not in (died.remedy or "")
    assert "ended its parent process" in (died.remedy or "")


def test_endless_output_kills_only_that_fork(tmp_path: Path) -> None:
    by_name = _run(tmp_path, "fake.flood", "fake.ok")
    flood = by_name["fake.flood"]
    assert flood.status is Status.ERROR
    assert flood.message == "the check printed more than 8 MiB and was stopped"
    assert flood.details["stderr_tail"][-1].startswith("fake.flood: xxx")
    assert by_name["fake.ok"].status is Status.PASS


def test_a_grandchild_left_behind_is_stopped(tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"
    by_name = _run(tmp_path, "fake.escape", "fake.ok", options={"fake_marker": str(marker)})
    assert by_name["fake.escape"].status is Status.PASS
    pid = int(marker.read_text())
    for _ in range(100):  # the worker kills the group as it reaps the fork
        if not _alive(pid):
            break
        time.sleep(0.05)
    assert not _alive(pid)


def test_a_pristine_check_gets_a_fresh_interpreter(tmp_path: Path) -> None:
    by_name = _run(tmp_path, "fake.pristine", "fake.state_before")
    fresh = by_name["fake.pristine"].details
    assert fresh["torch_preloaded"] is False
    assert fresh["parent"] == os.getpid()  # spawned by the doctor, not forked by the worker
    assert by_name["fake.state_before"].details["torch_preloaded"] is True


def test_the_jax_checks_fork_from_one_worker_that_imported_jax_alone(tmp_path: Path) -> None:
    by_name = _run(tmp_path, "fake.jax_a", "fake.jax_b", "fake.state_before")
    a, b = by_name["fake.jax_a"].details, by_name["fake.jax_b"].details
    # jax was imported once, by a worker of its own, with the platform pinned before it;
    # torch never came near it (a jax venv need not have torch), unlike the main worker's forks.
    assert a["jax_preloaded"] and b["jax_preloaded"] and not a["torch_preloaded"] and not b["torch_preloaded"]
    assert a["jax_platforms"] == b["jax_platforms"] == "cpu"
    assert a["parent"] == b["parent"] not in (os.getpid(), by_name["fake.state_before"].details["worker_pid"])
    # --isolation spawn: a fresh interpreter each, as pristine checks had.
    spawned = _run(tmp_path, "fake.jax_a", "fake.jax_b", isolation="spawn")
    for name in ("fake.jax_a", "fake.jax_b"):
        assert spawned[name].details["parent"] == os.getpid() and not spawned[name].details["jax_preloaded"]


def test_the_spawn_baseline_still_runs_one_child_per_check(tmp_path: Path) -> None:
    by_name = _run(tmp_path, "fake.state_before", "fake.state_after", isolation="spawn")
    before, after = by_name["fake.state_before"].details, by_name["fake.state_after"].details
    assert before["torch_preloaded"] is False and after["torch_preloaded"] is False
    assert before["worker_pid"] == after["worker_pid"] == os.getpid()


def test_server_counts_one_start_and_refuses_when_cuda_is_initialised(tmp_path: Path) -> None:
    checks = load_checks((MOD,))
    ctx = CheckContext(machine=Machine(), backend="cpu", cache_dir=tmp_path)
    server = ForkServer(ctx, preload=("torch",), modules=(MOD,))
    try:
        for name in ("fake.ok", "fake.many", "fake.ok"):
            assert server.run(checks[name], ctx, timeout_s=30)[0].status is Status.PASS
        assert server.starts == 1
        assert set(server.imports[0]["imported"]) == {"torch", MOD}
    finally:
        server.close()
    # A module whose import initialises CUDA (here: says it did) makes forking unsafe.
    unsafe = ForkServer(ctx, preload=("tests.integration.doctor_fake_cuda",), modules=(MOD,))
    try:
        with pytest.raises(WorkerUnavailable, match="forking is unsafe"):
            unsafe.run(checks["fake.ok"], ctx, timeout_s=30)
    finally:
        unsafe.close()
