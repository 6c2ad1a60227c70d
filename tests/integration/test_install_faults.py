"""Faults during a real `rocmkit install` (pip against the 127.0.0.1 index): kill -9 and
SIGTERM at several steps, then the environment is restored to its exact `pip freeze`.

A kill -9 gives rocmkit no chance to clean up: what the next run finds is the install
journal in the venv, and maybe a pip (or a verification child) still running."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmkit.install.journal import JOURNAL_NAME
from tests.integration.test_install_e2e import (
    TORCH_251,
    _quiet_user_config,  # noqa: F401  (autouse: the developer's pip config stays out)
    build_index,
    pip_freeze_all,
    plan_61,
    plan_62,
    rk,
    setup_61,
)
from tests.support.pkgindex import PLATFORM_TAG, IndexServer, make_wheel, torch_files

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def index_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index")
    build_index(root)
    # A torch 2.5.1 whose import takes a minute: rocmkit's verification child is then
    # reliably running when a test kills rocmkit at the "verifying" step.
    slow = root / "whl/slow"
    for wheel in (root / "whl/rocm6.2").glob("pytorch_triton*"):
        slow.mkdir(parents=True, exist_ok=True)
        shutil.copy(wheel, slow)
    files = torch_files("2.5.1+rocm6.2", hip="6.2.41133")
    files["torch/__init__.py"] = "import time\ntime.sleep(60)\n" + files["torch/__init__.py"]
    make_wheel(
        slow,
        "torch",
        "2.5.1+rocm6.2",
        tag=PLATFORM_TAG,
        requires=["pytorch-triton-rocm==3.1.0"],
        files=files,
        requires_python=">=3.9",
    )
    return root


@pytest.fixture
def server(index_root: Path) -> Iterator[IndexServer]:
    with IndexServer(index_root) as srv:
        yield srv


def start_install(venv: Path, plan: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "rocmkit", "install", "--venv", str(venv), "--plan", str(plan)]
    return subprocess.Popen(
        [*argv, "--installer", "pip", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def ended(proc: subprocess.Popen[str]) -> None:
    """Wait for the killed install, and close our end of its stderr (not left to the GC)."""
    proc.wait(10)
    if proc.stderr is not None:
        proc.stderr.close()


def wait_for_step(venv: Path, step: str, proc: subprocess.Popen[str], limit: float = 120) -> dict[str, object]:
    """The journal once it says ``step`` (polled: the install runs in another process)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"install ended early: {proc.stderr.read() if proc.stderr else ''}"
        try:
            data: dict[str, object] = json.loads((venv / JOURNAL_NAME).read_text())
            if data["step"] == step:
                return data
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"the journal never reached {step}")


def alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def child_groups(journal: dict[str, object]) -> list[int]:
    children = journal["children"]
    assert isinstance(children, list)
    return [int(c["pid"]) for c in children]


@pytest.mark.parametrize(
    ("skip", "step"),
    [(0, "recorded"), (1, "installing")],
    ids=["during-the-dry-run", "during-the-install"],
)
def test_kill_9_while_pip_downloads_then_install_restores_and_stops_the_orphan(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str], skip: int, step: str
) -> None:
    # pip's dry run fetches the torch wheel once, the install again: stall the one to kill in.
    venv = setup_61(capsys, tmp_path, server)
    before = pip_freeze_all(venv)
    guard_before = (venv / "rocmkit-constraints.txt").read_text()
    server.hold_at(TORCH_251, skip=skip)
    proc = start_install(venv, plan_62(tmp_path, server))
    try:
        assert server.held.wait(120)
        journal = wait_for_step(venv, step, proc)
        pip_group = child_groups(journal)[-1]
        assert alive(pip_group)
        os.killpg(proc.pid, signal.SIGKILL)  # rocmkit only: its pip leads a session of its own
        ended(proc)
        assert alive(pip_group)  # orphaned: nothing has cleaned up
        # The guard was already rewritten for 2.5.1: the state is not the one from before.
        assert "2.5.1" in (venv / "rocmkit-constraints.txt").read_text()
        code, _, err = rk(capsys, "--venv", str(venv), "--plan", str(plan_61(tmp_path, server)))
    finally:
        server.release()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code == 0, err
    assert f"was interrupted at step '{step}'" in err
    assert f"stopped process group {pip_group}" in err
    assert "restored exactly" in err
    assert not alive(pip_group)
    assert not (venv / JOURNAL_NAME).exists()
    assert pip_freeze_all(venv) == before
    assert (venv / "rocmkit-constraints.txt").read_text() == guard_before


def test_kill_9_while_verifying_then_doctor_restores(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = setup_61(capsys, tmp_path, server)
    before = pip_freeze_all(venv)
    proc = start_install(venv, plan_62(tmp_path, server, "whl/slow"))
    try:
        journal = wait_for_step(venv, "verifying", proc)
        # Give the verification child a moment to start and be journaled.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            journal = json.loads((venv / JOURNAL_NAME).read_text())
            if child_groups(journal) and alive(child_groups(journal)[-1]):
                break
            time.sleep(0.05)
        verify_group = child_groups(journal)[-1]
        os.killpg(proc.pid, signal.SIGKILL)
        ended(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert pip_freeze_all(venv) != before  # torch 2.5.1 is in: the install had finished
    doctor = subprocess.run(
        [sys.executable, "-m", "rocmkit", "doctor", "--venv", str(venv), "--only", "triton.packages"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "was interrupted at step 'verifying'" in doctor.stderr, doctor.stderr
    assert "restored exactly" in doctor.stderr
    assert not alive(verify_group)
    assert not (venv / JOURNAL_NAME).exists()
    assert pip_freeze_all(venv) == before


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_verifying_restores_in_process_and_exits_10(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str], sig: signal.Signals
) -> None:
    venv = setup_61(capsys, tmp_path, server)
    before = pip_freeze_all(venv)
    proc = start_install(venv, plan_62(tmp_path, server, "whl/slow"))
    try:
        wait_for_step(venv, "verifying", proc)
        time.sleep(0.5)
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 10, err
    assert "interrupted; restoring" in err and "restored exactly" in err
    assert "Traceback" not in err
    assert not (venv / JOURNAL_NAME).exists()
    assert pip_freeze_all(venv) == before


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_lock_with_every_hash_wrong_never_exits_0_even_when_installed(
    installer: str, tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = tmp_path / "torch.lock"
    code, _, err = rk(capsys, "--plan", str(plan_62(tmp_path, server)), "--lock", str(lock))
    assert code == 0, err
    venv = tmp_path / "venv"
    code, _, err = rk(capsys, "--venv", str(venv), "--from-lock", str(lock), "--installer", installer)
    assert code == 0, err
    before = pip_freeze_all(venv)
    # The very versions installed, every hash wrong (no plan line: nothing else to trip on).
    wrong = tmp_path / "wrong.lock"
    wrong.write_text(
        "".join(
            "    --hash=sha256:" + "0" * 64 + "\n" if line.lstrip().startswith("--hash=") else line
            for line in lock.read_text().splitlines(True)
            if not line.startswith("# rocmkit-plan")
        )
    )
    code, _, err = rk(capsys, "--venv", str(venv), "--from-lock", str(wrong), "--installer", installer)
    assert code == 7, err
    assert "sha256 does not match the lock" in err
    assert pip_freeze_all(venv) == before


def test_sourcing_activate_with_a_hostile_plan_value_runs_nothing(tmp_path: Path) -> None:
    from rocmkit.install import guard
    from rocmkit.plan import Plan

    marker = tmp_path / "pwned"
    value = f"10.3.0$(touch {marker})`touch {marker}`;touch {marker}"
    plan = Plan.from_dict(
        {
            "schema": "rocmkit.plan/1",
            "backend": "rocm6.2",
            "torch_version": "2.5.1+rocm6.2",
            "requirements": ["torch==2.5.1+rocm6.2"],
            "index_urls": ["https://download.pytorch.org/whl/rocm6.2"],
            "env": {"HSA_OVERRIDE_GFX_VERSION": value},
        }
    )
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/activate").write_text("deactivate () { :; }\n")
    guard.write_guard(tmp_path, plan)
    done = subprocess.run(
        ["bash", "-c", f'source {tmp_path}/bin/activate && printf %s "$HSA_OVERRIDE_GFX_VERSION"'],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == value  # the value, verbatim, as data
    assert not marker.exists()


def test_kill_9_during_the_restore_of_a_failed_install_is_finished_by_the_next_run(
    tmp_path: Path, index_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.integration.test_install_e2e import corrupt_member

    root = tmp_path / "root"
    shutil.copytree(index_root, root)
    # pip installs pytorch-triton-rocm 3.1.0, then fails extracting torch: a restore follows.
    corrupt_member(root / "whl/rocm6.2" / TORCH_251, "torch/version.py")
    with IndexServer(root) as srv:
        venv = setup_61(capsys, tmp_path, srv)
        before = pip_freeze_all(venv)
        proc = start_install(venv, plan_62(tmp_path, srv))
        try:
            wait_for_step(venv, "restoring", proc)
            os.killpg(proc.pid, signal.SIGKILL)  # the restore's own pip is in its own session
            ended(proc)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        assert (venv / JOURNAL_NAME).exists()
        code, _, err = rk(capsys, "--venv", str(venv), "--plan", str(plan_61(tmp_path, srv)))
    assert code == 0, err
    assert "was interrupted at step 'restoring'" in err, err
    assert "restored exactly" in err, err  # the whole text: what the restore did not count as exact
    assert pip_freeze_all(venv) == before
