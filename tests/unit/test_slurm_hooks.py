"""What the Slurm hooks decide (drain, resume, leave an admin's drain), the reasons
they give, the slurm.conf lines and scripts they are installed with, and the
all-reduce result when a node cannot take part. The real Slurm runs are in
tests/integration/test_slurm_real.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.doctor.result import Status
from rocmkit.slurm import ready
from rocmkit.slurm.checks import Finding, Outcome, drain_reason
from rocmkit.slurm.config import HookConfig, conf_lines, hook_script
from rocmkit.slurm.hooks import Action, decide, health_check, single_run
from rocmkit.slurm.scontrol import NodeState, parse_node
from rocmkit.slurm.task import not_started, parse_doctor_args, runs_distributed

SHOW = (
    "NodeName=n0 Arch=x86_64 CoresPerSocket=1 State=IDLE+DRAIN ThreadsPerCore=1 "
    "Partitions=debug Reason=rocmkit: env.device_nodes [root@2026-12-04T15:40:01]\n"
)


def _fail(check: str) -> Finding:
    return Finding(check=check, status=Status.FAIL, message="broken")


def _state(state: str, reason: str = "") -> NodeState:
    return NodeState(name="n0", state=state, reason=reason)


def test_parse_node_keeps_the_reason_without_slurms_stamp() -> None:
    node = parse_node(SHOW, "n0")
    assert node.state == "IDLE+DRAIN" and node.reason == "rocmkit: env.device_nodes"
    assert node.drained and node.drained_by_rocmkit


def test_drain_reason_names_the_checks_within_a_limit() -> None:
    assert drain_reason([_fail("env.device_nodes")]) == "rocmkit: env.device_nodes"
    assert drain_reason([_fail("a"), _fail("b"), _fail("a")]) == "rocmkit: a,b"
    many = [_fail(f"env.check_number_{i}") for i in range(20)]
    reason = drain_reason(many, limit=80)
    assert len(reason) <= 80 and reason.startswith("rocmkit: env.check_number_0,") and "more)" in reason


@pytest.mark.parametrize(
    ("state", "findings", "action"),
    [
        (_state("IDLE"), [_fail("env.shm")], Action.DRAIN),
        (_state("IDLE+DRAIN", "rocmkit: env.shm"), [_fail("env.shm")], Action.KEEP),
        (_state("IDLE+DRAIN", "rocmkit: env.shm"), [_fail("torch.import")], Action.DRAIN),  # new reason
        (_state("IDLE+DRAIN", "rocmkit: env.shm"), [], Action.RESUME),
        (_state("MIXED+DRAIN", "admin: new PSU"), [], Action.KEEP),  # never resume an admin's drain
        (_state("IDLE+DRAIN", "admin: new PSU"), [_fail("env.shm")], Action.ADMIN),
        (_state("IDLE"), [], Action.KEEP),
    ],
)
def test_decide(state: NodeState, findings: list[Finding], action: Action) -> None:
    assert decide(state, Outcome(findings=tuple(findings)))[0] is action


def test_a_doctor_that_could_not_run_never_drains() -> None:
    outcome = Outcome(findings=(), unchecked=True)
    assert decide(_state("IDLE"), outcome) == (Action.KEEP, "")
    assert decide(_state("IDLE+DRAIN", "rocmkit: env.shm"), outcome) == (Action.KEEP, "")


class _Control:
    def __init__(self, state: NodeState) -> None:
        self.state = state
        self.calls: list[tuple[str, ...]] = []

    def node(self, name: str) -> NodeState:
        return self.state

    def drain(self, name: str, reason: str) -> None:
        self.calls.append(("drain", name, reason))

    def resume(self, name: str) -> None:
        self.calls.append(("resume", name))


def test_health_check_drains_logs_and_exits_1(tmp_path: Path) -> None:
    from rocmkit.slurm.hooks import Log

    log = tmp_path / "hc.log"
    control = _Control(_state("IDLE"))
    result = health_check("n0", Outcome(findings=(_fail("env.device_nodes"),)), control, Log(str(log), "hc"))
    assert result.exit_code == 1 and control.calls == [("drain", "n0", "rocmkit: env.device_nodes")]
    assert "n0: drained (rocmkit: env.device_nodes)" in log.read_text()
    dry = _Control(_state("IDLE"))
    health_check("n0", Outcome(findings=(_fail("x"),)), dry, Log(None, "hc"), drain=False)
    assert dry.calls == []


def test_config_lines_and_scripts_use_absolute_paths() -> None:
    cfg = HookConfig(
        folder=Path("/etc/slurm"),
        python="/opt/rocmkit/bin/python",
        interval_s=120,
        log="/var/log/rk.log",
        args=("--venv", "/opt/venv"),
        slurm_conf="/opt/slurm/etc/slurm.conf",
    )
    lines = conf_lines(cfg).splitlines()
    assert "HealthCheckProgram=/etc/slurm/rocmkit-healthcheck" in lines
    assert "HealthCheckInterval=120" in lines and "HealthCheckNodeState=ANY,CYCLE" in lines
    assert "Prolog=/etc/slurm/rocmkit-prolog" in conf_lines(cfg, prolog=True).splitlines()
    script = hook_script(cfg, "healthcheck")
    assert script.startswith("#!/bin/sh\n")
    assert "SLURM_CONF=/opt/slurm/etc/slurm.conf\nexport SLURM_CONF\n" in script
    assert script.splitlines()[-1] == (
        "exec /opt/rocmkit/bin/python -m rocmkit slurm healthcheck --log /var/log/rk.log --venv /opt/venv"
    )
    assert "SLURM_CONF" not in hook_script(HookConfig(folder=Path("/etc/slurm")), "prolog")


def test_the_task_knows_when_the_doctor_runs_the_all_reduce() -> None:
    assert runs_distributed(parse_doctor_args(["--level", "3"]))
    assert runs_distributed(parse_doctor_args(["--level=0", "--only", "distributed"]))
    assert not runs_distributed(parse_doctor_args(["--level", "3", "--skip", "distributed.*"]))
    assert not runs_distributed(parse_doctor_args(["--level", "2"]))


def test_not_started_blames_the_node_that_said_it_cannot() -> None:
    verdict = ready.Verdict(
        go=False, not_ready=(ready.Answer(rank=1, node="n1", ready=False, reason="torch.import: boom"),)
    )
    peer = not_started(verdict, "n0", 2, "n0:29502")
    assert peer.status is Status.SKIP and "n1 (rank 1) cannot take part: torch.import: boom" in peer.message
    own = not_started(verdict, "n1", 2, "n0:29502")
    assert own.status is Status.ERROR and own.message.startswith("this node (n1) cannot take part")
    # A node never heard from: nobody knows whose fault it is, so it stays an error.
    missing = not_started(ready.Verdict(go=False, missing=("rank 1 (n1)",)), "n0", 2, "n0:29502")
    assert missing.status is Status.ERROR and "never reported ready: rank 1 (n1)" in missing.message


def test_only_one_health_check_runs_at_a_time(tmp_path: Path) -> None:
    with single_run("n0", tmp_path) as first:
        assert first
        with single_run("n0", tmp_path) as second, single_run("n1", tmp_path) as other:
            assert not second and other
    with single_run("n0", tmp_path) as again:
        assert again  # released when the run ended
    with single_run("n0", tmp_path / "missing") as unlocked:
        assert unlocked  # no lock folder (not root): run anyway


def _report(tmp_path: Path, *, host: str = "n0", finished: str = "2026-12-05T10:00:00Z") -> Path:
    from rocmkit.doctor.result import CheckResult, Report

    report = Report(
        machine={},
        plan=None,
        results=(
            CheckResult(name="triton.matmul", level=2, status=Status.FAIL, message="wrong answers"),
            CheckResult(name="torch.import", level=1, status=Status.WARN, message="slow import"),
            CheckResult(name="env.shm", level=0, status=Status.PASS, message="fine"),
        ),
        versions={},
        started_at=finished,
        finished_at=finished,
        host_id=f"{host}-1234",
        hostname=f"{host}.cluster",
        level=2,
    )
    path = tmp_path / "last.json"
    import json

    path.write_text(json.dumps(report.to_dict()))
    return path


def test_a_recent_full_report_of_this_node_adds_its_failures(tmp_path: Path) -> None:
    from datetime import datetime, timezone

    from rocmkit.slurm.checks import report_findings

    now = datetime(2026, 12, 5, 10, 30, tzinfo=timezone.utc)
    path = _report(tmp_path)
    found, note = report_findings(path, 3600.0, "n0", strict=False, now=now)
    assert note is None and [f.check for f in found] == ["triton.matmul"]
    assert "level 2, 30 min old" in found[0].source
    strict, _ = report_findings(path, 3600.0, "n0", strict=True, now=now)
    assert [f.check for f in strict] == ["triton.matmul", "torch.import"]
    old, note = report_findings(path, 600.0, "n0", strict=False, now=now)
    assert old == [] and note and "old" in note
    other, note = report_findings(path, 3600.0, "n1", strict=False, now=now)
    assert other == [] and note and "n0.cluster's report, not n1's" in note


@pytest.mark.parametrize(
    "text",
    [b"", b'{"schema": "rocmkit.report/1", "results": [', b"[" * 100_000, b'{"schema": "other/1"}', b"\xff\xfe{"],
)
def test_a_missing_or_damaged_full_report_is_a_note_never_a_finding_or_a_crash(
    tmp_path: Path, text: bytes
) -> None:
    from rocmkit.slurm.checks import report_findings

    missing, note = report_findings(tmp_path / "none.json", 3600.0, "n0", strict=False)
    assert missing == [] and note == f"no full report at {tmp_path / 'none.json'} yet"
    path = tmp_path / "last.json"
    path.write_bytes(text)
    found, note = report_findings(path, 3600.0, "n0", strict=False)
    assert found == [] and note and note.startswith(f"cannot read the full report {path}")
