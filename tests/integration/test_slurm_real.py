"""rocmkit on a real Slurm (Debian's 22.05): munged, slurmctld and one or two slurmd
on this host (tests/support/slurm.py), each node in its own UTS and mount
namespace, so a fault can be put on one node alone.

- ``scripts/slurm/onboard.sbatch`` as a site submits it, on 1 and 2 nodes, and
  its level-3 all-reduce across the two;
- a node whose torch is broken is named by its peer, through the readiness store,
  without the peer waiting out its timeout, and is the only node on the drain list;
- ``rocmkit slurm healthcheck`` as slurmd's ``HealthCheckProgram`` (written by
  ``rocmkit slurm config --write``, run by slurmd as root with an empty
  environment) drains a failing node with ``rocmkit: CHECK``, resumes it once the
  fault is gone, and leaves a node an admin drained alone;
- ``rocmkit slurm prolog`` as ``Prolog``: a failing node is drained by slurmd.

Skips, saying why, without root or the Slurm binaries (.ci/run installs them).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmkit.doctor.checks.distributed import free_port
from rocmkit.proc.runner import run
from tests.support.engines import skip_or_fail
from tests.support.slurm import SlurmCluster, missing_reason

pytestmark = [pytest.mark.integration]

_why = missing_reason()


@pytest.fixture(autouse=True)
def _slurm_here() -> None:
    # Absent here: a skip; absent in CI, where .ci/run installs it: a failure.
    if _why:
        skip_or_fail(_why)

REPO = Path(__file__).resolve().parents[2]
SBATCH = REPO / "scripts" / "slurm" / "onboard.sbatch"
# Slurm's own checks of a job and of the node's state: seconds, with room for a busy host.
WAIT_S = 90.0


def _rocmkit(tmp: Path) -> Path:
    """The rocmkit command for job steps and hooks: this Python's, by absolute path."""
    exe = tmp / "rocmkit"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} -m rocmkit "$@"\n')
    exe.chmod(0o755)
    return exe


def _torch_init() -> Path:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        pytest.skip("torch is not installed in this Python")
    return Path(spec.origin)


def _broken_torch(tmp: Path) -> Path:
    """A torch/__init__.py that fails to import: the fault one node gets."""
    bad = tmp / "broken_torch_init.py"
    bad.write_text('raise ImportError("injected fault: libtorch_hip.so: cannot open shared object file")\n')
    return bad


@pytest.fixture
def cluster_root(tmp_path: Path) -> Path:
    root = tmp_path / "slurm"
    root.mkdir()
    return root


def _onboard(cluster: SlurmCluster, tmp: Path, level: int, doctor_args: str = "") -> tuple[dict[str, str], Path]:
    reports = tmp / "reports"
    job = cluster.sbatch(
        [
            f"--nodes={len(cluster.names)}",
            f"--chdir={tmp}",
            f"--output={tmp}/onboard-%j.out",
            str(SBATCH),
        ],
        env={
            "ROCMKIT": str(_rocmkit(tmp)),
            "ROCMKIT_LEVEL": str(level),
            "ROCMKIT_DOCTOR_ARGS": doctor_args,
            "ROCMKIT_REPORTS": str(reports),
            "MASTER_PORT": str(free_port()),
        },
    )
    info = cluster.wait_job(job, timeout=240)
    return info, reports


def _job_log(tmp: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in tmp.glob("onboard-*.out"))


@pytest.mark.parametrize("nodes", [1, 2])
def test_onboard_sbatch_level0(cluster_root: Path, tmp_path: Path, nodes: int) -> None:
    with SlurmCluster(cluster_root, nodes=nodes) as cluster:
        info, reports = _onboard(cluster, tmp_path, level=0)
    log = _job_log(tmp_path)
    assert info["JobState"] == "COMPLETED", f"{info}\n{log}"
    assert info["ExitCode"] == "0:0", log
    # One report per node, each from the node it names (its own hostname), in nodes/.
    found = sorted(p.name for p in (reports / "nodes").iterdir())
    assert found == [f"n{i}.json" for i in range(nodes)]
    for i in range(nodes):
        report = json.loads((reports / "nodes" / f"n{i}.json").read_text())
        assert report["hostname"] == f"n{i}" and report["level"] == 0
    # The summaries sit next to the folder they read, never in it.
    summary = json.loads((reports / "fleet.json").read_text())
    assert sorted(n["hostname"] for n in summary["nodes"]) == [f"n{i}" for i in range(nodes)]
    assert summary["skipped"] == [] and "skipped" not in log
    assert summary["healthy"] is True and summary["drain"] == []
    assert (reports / "drain.txt").read_text() == ""
    assert (reports / "fleet.html").read_text().startswith("<!DOCTYPE html>")
    assert "healthy" in (reports / "fleet.txt").read_text()


def test_onboard_runs_the_all_reduce_across_two_slurm_nodes(cluster_root: Path, tmp_path: Path) -> None:
    with SlurmCluster(cluster_root, nodes=2) as cluster:
        info, reports = _onboard(cluster, tmp_path, level=3, doctor_args="--only distributed --backend cpu")
    log = _job_log(tmp_path)
    assert info["JobState"] == "COMPLETED", f"{info}\n{log}"
    for rank in (0, 1):
        results = json.loads((reports / "nodes" / f"n{rank}.json").read_text())["results"]
        (result,) = [r for r in results if r["name"] == "distributed.all_reduce"]
        assert result["status"] == "pass", result["message"]
        # Both nodes in one job, meeting at the allocation's first node by name.
        assert result["details"]["nnodes"] == 2 and result["details"]["node_rank"] == rank
        assert result["details"]["master"].startswith("n0:")
    assert (reports / "drain.txt").read_text() == ""


def test_onboard_names_the_node_that_cannot_take_part(cluster_root: Path, tmp_path: Path) -> None:
    """n1's torch does not import: n0 hears it from the readiness store and names n1,
    instead of waiting out the rendezvous for a peer that never comes."""
    torch_init = _torch_init()
    with (
        SlurmCluster(cluster_root, nodes=2) as cluster,
        cluster.node_mount("n1", _broken_torch(tmp_path), torch_init),
    ):
        info, reports = _onboard(
            cluster, tmp_path, level=3, doctor_args="--only torch.import --only distributed --backend cpu"
        )
    log = _job_log(tmp_path)
    assert info["JobState"] == "FAILED" and info["ExitCode"] == "1:0", f"{info}\n{log}"
    n0 = {r["name"]: r for r in json.loads((reports / "nodes" / "n0.json").read_text())["results"]}
    n1 = {r["name"]: r for r in json.loads((reports / "nodes" / "n1.json").read_text())["results"]}
    assert n0["torch.import"]["status"] == "pass"
    assert n1["torch.import"]["status"] == "fail" and "injected fault" in n1["torch.import"]["message"]
    peer = n0["distributed.all_reduce"]
    assert peer["status"] == "skip" and "n1" in peer["message"], peer
    readiness = peer["details"]["readiness"]
    # The verdict came from n1's own "cannot", not from a timeout with n1 missing.
    assert [a["node"] for a in readiness["not_ready"]] == ["n1"]
    assert readiness["missing"] == [] and readiness["error"] == ""
    assert "injected fault" in readiness["not_ready"][0]["reason"]
    own = n1["distributed.all_reduce"]
    assert own["status"] == "error" and "this node (n1) cannot take part" in own["message"]
    # Only the broken node is to be drained, with the checks it failed.
    drain = (reports / "drain.txt").read_text().splitlines()
    assert len(drain) == 1 and drain[0].startswith("n1\trocmkit: torch.import"), drain
    assert "NOT ready" in log and "n1" in log


def _hooks(
    tmp: Path, cluster: SlurmCluster, *, prolog: bool, hook_args: tuple[str, ...] = ()
) -> tuple[list[str], Path]:
    """``rocmkit slurm config --write``: the slurm.conf lines and hook scripts a site uses."""
    hooks = tmp / "hooks"
    hooks.mkdir()
    log = tmp / "hooks.log"
    argv = [
        sys.executable,
        "-m",
        "rocmkit",
        "slurm",
        "config",
        "--dir",
        str(hooks),
        "--write",
        "--python",
        sys.executable,
        "--log",
        str(log),
        "--slurm-conf",
        str(cluster.conf),
        "--interval",
        # Short for the test, but over one run's length on a busy 2-core machine:
        # slurmd starts the next run on time even while the last one still runs.
        "5",
        "--node-state",
        "ANY",
    ]
    argv = [*argv, "--prolog"] if prolog else argv
    res = run([*argv, "--", *hook_args] if hook_args else argv, timeout=60)
    assert res.ok, res.describe()
    lines = [ln for ln in res.stdout.splitlines() if ln and not ln.startswith("#")]
    return lines, log


def _log_count(log: Path, pattern: str) -> int:
    text = log.read_text(errors="replace") if log.exists() else ""
    return len(re.findall(pattern, text))


def _wait_log(cluster: SlurmCluster, log: Path, pattern: str, at_least: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while _log_count(log, pattern) < at_least:
        if time.monotonic() > deadline:
            text = log.read_text(errors="replace") if log.exists() else "(no log)"
            raise AssertionError(f"{pattern!r} not logged {at_least} times:\n{text}\n{cluster.logs()}")
        time.sleep(0.2)


@pytest.fixture
def hc_cluster(cluster_root: Path, tmp_path: Path) -> Iterator[tuple[SlurmCluster, Path]]:
    cluster = SlurmCluster(cluster_root, nodes=1)
    lines, log = _hooks(tmp_path, cluster, prolog=False)
    assert any(ln.startswith("HealthCheckProgram=/") for ln in lines), lines
    cluster.extra_conf = lines
    try:
        with cluster:
            yield cluster, log
    finally:
        _forget_node_memos()


@pytest.fixture
def forget_memos() -> Iterator[None]:
    _forget_node_memos()
    yield
    _forget_node_memos()


def _forget_node_memos() -> None:
    """The hooks' files in /run (the lock that keeps two runs apart, the count of runs that
    could not check, the prolog's mark) outlive the run; a test's must not reach the next."""
    for name in ("healthcheck-n0.lock", "healthcheck-n0.unchecked", "prolog-n0.failed"):
        Path(f"/run/rocmkit-{name}").unlink(missing_ok=True)


def test_healthcheck_drains_resumes_and_leaves_admin_drains(
    hc_cluster: tuple[SlurmCluster, Path], tmp_path: Path
) -> None:
    cluster, log = hc_cluster
    healthy = r"n0: healthy \("
    _wait_log(cluster, log, healthy, 1)
    # slurmd ran it with no PATH and no HOME: the node was still found and checked.
    assert "DRAIN" not in cluster.node_info("n0")["State"].split("+")
    with cluster.node_mount("n0", _broken_torch(tmp_path), _torch_init()):
        cluster.wait_state(["n0"], "DRAIN", reason="rocmkit: torch.import", timeout=WAIT_S)
    assert "injected fault" in log.read_text()
    cluster.wait_state(["n0"], "IDLE", without="DRAIN", timeout=WAIT_S)
    assert "resumed" in log.read_text()

    # An admin's drain stays, healthy or not.
    res = cluster.scontrol(["update", "NodeName=n0", "State=DRAIN", "Reason=admin: new PSU"])
    assert res.returncode == 0, res.stderr
    seen = _log_count(log, healthy)
    _wait_log(cluster, log, healthy, seen + 2)
    info = cluster.node_info("n0")
    assert "DRAIN" in info["State"].split("+") and info["Reason"] == "admin: new PSU", info
    with cluster.node_mount("n0", _broken_torch(tmp_path), _torch_init()):
        _wait_log(cluster, log, r"already drained by someone else", 1)
    info = cluster.node_info("n0")
    assert info["Reason"] == "admin: new PSU", info


def test_healthcheck_drains_a_node_whose_venv_is_gone_and_resumes_it(cluster_root: Path, tmp_path: Path) -> None:
    cluster = SlurmCluster(cluster_root, nodes=1)
    venv = tmp_path / "torch-venv"
    lines, log = _hooks(tmp_path, cluster, prolog=False, hook_args=("--venv", str(venv)))
    cluster.extra_conf = lines
    try:
        with cluster:
            # The node serves a venv that is not there: a node fault, drained as such.
            cluster.wait_state(["n0"], "DRAIN", reason="rocmkit: venv missing", timeout=WAIT_S)
            assert f"the venv this node serves, {venv}, is gone" in log.read_text()
            venv.symlink_to(sys.prefix)  # the venv is back (this test's own)
            cluster.wait_state(["n0"], "IDLE", without="DRAIN", timeout=WAIT_S)
            assert "healthy again after 'rocmkit: venv missing': resumed" in log.read_text()
    finally:
        _forget_node_memos()


def test_failing_prolog_drains_the_node_and_the_health_check_lifts_it(
    cluster_root: Path, tmp_path: Path, forget_memos: None
) -> None:
    cluster = SlurmCluster(cluster_root, nodes=1)
    lines, log = _hooks(tmp_path, cluster, prolog=True)
    assert any(ln.startswith("Prolog=/") for ln in lines), lines
    cluster.extra_conf = lines
    with cluster:
        # A healthy node: the prolog (PrologFlags=Alloc: at allocation) lets the job run.
        ok = cluster.sbatch([f"--chdir={tmp_path}", f"--output={tmp_path}/ok-%j.out", "--wrap", "true"])
        assert cluster.wait_job(ok, timeout=WAIT_S)["JobState"] == "COMPLETED"
        assert f"job {ok} may start" in log.read_text()
        with cluster.node_mount("n0", _broken_torch(tmp_path), _torch_init()):
            job = cluster.sbatch([f"--chdir={tmp_path}", f"--output={tmp_path}/bad-%j.out", "--wrap", "true"])
            cluster.wait_state(["n0"], "DRAIN", reason="Prolog error", timeout=WAIT_S)
        text = log.read_text()
        assert f"rocmkit: torch.import: refusing job {job}" in text, text
        # Slurm requeues the job rather than running it on the broken node.
        state = cluster.job_info(job)
        assert state.get("JobState") in ("PENDING", "REQUEUED", "CONFIGURING"), state
        out = tmp_path / f"bad-{job}.out"
        assert not out.exists() or "Error running slurm prolog" in out.read_text()
        # The fault is gone: rocmkit's health check lifts the drain its prolog caused (the
        # prolog left its mark in /run), where it would leave any other "Prolog error" alone.
        # One health check runs at a time per node (5c918a9): while slurmd's own holds the lock,
        # this one is skipped and says so; it is run again until it ran.
        skipped = r"the previous health check still runs: this one skipped"
        deadline = time.monotonic() + WAIT_S
        while True:
            before = _log_count(log, skipped)
            hc = run(
                [sys.executable, "-m", "rocmkit", "slurm", "healthcheck", "--node", "n0", "--log", str(log)],
                timeout=120,
                env=cluster.client_env(),
            )
            assert hc.returncode == 0, f"{hc.describe()}\n{log.read_text()}"
            if _log_count(log, skipped) == before or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert "healthy again after 'Prolog error': resumed" in log.read_text()
        info = cluster.node_info("n0")
        assert "DRAIN" not in info["State"].split("+"), info


def test_healthcheck_drains_a_node_with_a_hardware_failure_naming_the_gpu(cluster_root: Path, tmp_path: Path) -> None:
    """A full doctor report whose hw.* checks failed (the degraded MI300X capture: a link at x8, ECC
    errors, a lowered cap, an XGMI link down) drains the node with a reason `sinfo -R` shows whole."""
    from datetime import datetime, timezone

    from rocmkit.detect import detect_machine
    from rocmkit.doctor.checks import hardware
    from rocmkit.doctor.registry import CheckContext
    from rocmkit.doctor.reporters import json as json_reporter
    from rocmkit.doctor.result import Report
    from rocmkit.sources import CaptureSource

    capture = Path(__file__).resolve().parents[1] / "data" / "captures" / "synthetic-mi300x8-health-degraded"
    m = detect_machine(CaptureSource(capture), environ={})
    ctx = CheckContext(machine=m)
    results = tuple(fn(ctx) for fn in (hardware.pcie_link, hardware.ecc, hardware.xgmi, hardware.power_thermal))
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    report = Report(machine=m.to_dict(), plan=None, results=results, versions={}, started_at=now,  # type: ignore[arg-type]
                    finished_at=now, host_id="n0-test", hostname="n0", level=0)
    path = tmp_path / "full-report.json"
    path.write_text(json_reporter.render(report))
    cluster = SlurmCluster(cluster_root, nodes=1)
    lines, log = _hooks(tmp_path, cluster, prolog=False, hook_args=("--report", str(path)))
    cluster.extra_conf = lines
    reason = "rocmkit: hw.pcie_link 26:00.0 (+3 more)"
    assert len(reason) <= 50
    try:
        with cluster:
            cluster.wait_state(["n0"], "DRAIN", reason=reason, timeout=WAIT_S)
            text = log.read_text()
            assert "0000:26:00.0 in slot 2 trained at x8" in text and "0000:46:00.0 has 2 uncorrectable" in text
    finally:
        _forget_node_memos()
