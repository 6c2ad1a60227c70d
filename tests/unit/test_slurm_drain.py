"""The health check drains what is broken (issue 27, point 8): a configured venv or Python
that is gone, a node rocmkit could not check twice in a row, a "Prolog error" drain that
rocmkit's prolog caused (lifted once the checks pass), a report from the future, and reasons
short enough for `sinfo -R`."""

from __future__ import annotations

import os
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from rocmkit.doctor.result import Status
from rocmkit.slurm.checks import (
    REASON_LIMIT,
    Finding,
    Outcome,
    drain_reason,
    report_findings,
    target_findings,
)
from rocmkit.slurm.hooks import PROLOG_ERROR, Action, Log, NodeMemo, decide, health_check, prolog
from rocmkit.slurm.request import HookRequest, quick_outcome
from rocmkit.slurm.scontrol import NodeState
from tests.unit.test_slurm_hooks import _Control, _report

NOBODY = 65534


def _state(state: str, reason: str = "") -> NodeState:
    return NodeState(name="n0", state=state, reason=reason)


def test_a_configured_venv_that_is_gone_or_has_no_python_is_a_node_fault(tmp_path: Path) -> None:
    gone = target_findings(tmp_path / "venv", None)
    assert [f.check for f in gone] == ["venv missing"] and "is gone" in gone[0].message
    (tmp_path / "venv").mkdir()
    broken = target_findings(tmp_path / "venv", None)
    assert [f.check for f in broken] == ["venv broken"]
    assert broken[0].remedy and "python3 -m venv --clear" in broken[0].remedy
    assert [f.check for f in target_findings(None, str(tmp_path / "python3"))] == ["python missing"]
    assert target_findings(Path(sys.prefix), sys.executable) == []


def test_quick_outcome_drains_a_missing_venv_without_starting_a_doctor(tmp_path: Path) -> None:
    # No child process runs (tests/unit refuses them): the venv is judged before any doctor.
    outcome = quick_outcome(HookRequest(venv=tmp_path / "gone"), "n0")
    assert not outcome.unchecked and drain_reason(outcome.findings) == "rocmkit: venv missing"
    control = _Control(_state("IDLE"))
    log = tmp_path / "hc.log"
    result = health_check("n0", outcome, control, Log(str(log), "hc"), memo=NodeMemo("n0", tmp_path))
    assert result.exit_code == 1 and control.calls == [("drain", "n0", "rocmkit: venv missing")]
    assert f"the venv this node serves, {tmp_path / 'gone'}, is gone" in log.read_text()


def test_the_second_run_in_a_row_that_cannot_check_drains(tmp_path: Path) -> None:
    memo = NodeMemo("n0", tmp_path)
    log = tmp_path / "hc.log"
    unchecked = Outcome(findings=(), notes=("the doctor wrote no report: exit 2",), unchecked=True)
    control = _Control(_state("IDLE"))
    first = health_check("n0", unchecked, control, Log(str(log), "hc"), memo=memo)
    assert first.exit_code == 3 and control.calls == []
    assert "NOT CHECKED: rocmkit could not run its checks (run 1 in a row; the next such run drains" in (
        log.read_text()
    )
    second = health_check("n0", unchecked, control, Log(str(log), "hc"), memo=memo)
    assert second.exit_code == 1 and control.calls == [("drain", "n0", "rocmkit: cannot check")]
    assert "could not run its checks 2 times in a row (the doctor wrote no report: exit 2)" in log.read_text()
    # A run that checks (here: healthy) resets the count, and resumes rocmkit's drain.
    control.state = _state("IDLE+DRAIN", "rocmkit: cannot check")
    healthy = health_check("n0", Outcome(findings=(), ran=5), control, Log(str(log), "hc"), memo=memo)
    assert healthy.action is Action.RESUME and not memo.unchecked_path.exists()
    assert health_check("n0", unchecked, _Control(_state("IDLE")), Log(None, "hc"), memo=memo).exit_code == 3


@pytest.mark.parametrize("plant", ["other_owner", "group_writable", "symlink"])
def test_a_planted_memo_is_not_believed(tmp_path: Path, plant: str) -> None:
    memo = NodeMemo("n0", tmp_path)
    target = memo.prolog_path
    if plant == "symlink":
        real = tmp_path / "real"
        real.write_text("1")
        target.symlink_to(real)
    else:
        target.write_text("1")
        if plant == "other_owner":
            os.chown(target, NOBODY, NOBODY)
        else:
            target.chmod(0o664)
    assert not memo.prolog_failed()
    # The count is written anew (rename over the planted file), never through it.
    memo.unchecked_path.symlink_to(tmp_path / "elsewhere")
    assert memo.bump_unchecked() == 1
    assert not (tmp_path / "elsewhere").exists() and not memo.unchecked_path.is_symlink()


def test_a_prolog_error_drain_is_lifted_only_when_rocmkits_prolog_caused_it(tmp_path: Path) -> None:
    memo = NodeMemo("n0", tmp_path)
    drained = _state("IDLE+DRAIN", PROLOG_ERROR)
    healthy = Outcome(findings=(), ran=5)
    # Another site prolog failed: not rocmkit's drain, so it stays.
    assert decide(drained, healthy, prolog_ours=memo.prolog_failed()) == (Action.KEEP, "")
    failing = Outcome(findings=(Finding(check="torch.import", status=Status.FAIL, message="x"),))
    assert prolog("n0", failing, Log(None, "pro"), job="42", memo=memo) == 1
    assert memo.prolog_failed()
    control = _Control(drained)
    result = health_check("n0", healthy, control, Log(None, "hc"), memo=memo)
    assert result.action is Action.RESUME and control.calls == [("resume", "n0")]
    assert not memo.prolog_failed()
    # Still failing: the drain is rocmkit's, and its reason names the check.
    prolog("n0", failing, Log(None, "pro"), job="43", memo=memo)
    assert decide(drained, failing, prolog_ours=memo.prolog_failed()) == (
        Action.DRAIN,
        "rocmkit: torch.import",
    )
    # A mark a day old does not count.
    assert not memo.prolog_failed(now=memo.prolog_path.stat().st_mtime + 25 * 3600)


def test_a_report_from_the_future_is_refused_as_such(tmp_path: Path) -> None:
    path = _report(tmp_path)
    past = datetime(2026, 12, 5, 8, 0, tzinfo=timezone.utc)  # 2 h before the report finished
    found, note = report_findings(path, 3600.0, "n0", strict=False, now=past)
    assert found == [] and note and "min in the future" in note and "clock" in note
    assert "-" not in note.split("in the future")[0].split("finished")[1]


def test_reasons_fit_sinfo_and_the_detail_goes_to_the_log() -> None:
    many = [Finding(check=f"env.check_number_{i}", status=Status.FAIL, message="m") for i in range(6)]
    reason = drain_reason(many)
    assert len(reason) <= REASON_LIMIT == 50
    assert reason.startswith("rocmkit: env.check_number_0") and reason.endswith("more)")


def test_a_venv_another_user_can_write_is_not_run_as_root(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the rule is root's: only root would run another user's code")

    def venv(name: str) -> Path:
        made = tmp_path / name
        (made / "bin").mkdir(parents=True)
        (made / "bin" / "python").symlink_to(sys.executable)
        return made

    assert target_findings(venv("root-owned"), None) == []
    # A second venv, built the same way but with its bin/ another user's (they could swap
    # bin/python). Not the first one chowned: an interpreter that passed is not walked again
    # in the same process (49e17f5; only root could have changed it), and each hook run is
    # a fresh process.
    planted = venv("planted")
    os.chown(planted / "bin", NOBODY, NOBODY)
    (finding,) = target_findings(planted, None)
    assert finding.check == "venv untrusted" and "owned by uid 65534" in finding.message
    assert finding.remedy and "chown -R root:root" in finding.remedy


def test_a_doctor_that_refuses_the_node_is_a_finding_not_unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    from rocmkit.proc.runner import CommandResult
    from rocmkit.slurm import checks

    line = "error: the install journal /v/rocmkit-journal.json is writable by others\nfix: remove it"

    def refused(argv: list[str], **_: object) -> CommandResult:
        return CommandResult(argv=tuple(argv), status="failed", returncode=13, stderr=line + "\n")

    monkeypatch.setattr(checks, "run", refused)
    outcome = checks.run_quick(checks.QuickOptions(), names=["env.shm"])
    assert not outcome.unchecked
    (finding,) = outcome.findings
    assert finding.check == "untrusted" and line.replace("\n", " ") in finding.message
    assert drain_reason(outcome.findings) == "rocmkit: untrusted"
