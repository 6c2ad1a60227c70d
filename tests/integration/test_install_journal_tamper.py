"""A real journal, left by a real `rocmkit install` killed with SIGKILL while pip downloads,
then tampered with the way an attacker who can write the venv would: rocmkit must refuse it
(exit 13, one line, nothing written, the orphaned pip NOT stopped), and when it does act on
a journal, it stops only a process whose pid and start time both match.

The victims are real `setsid` processes: one recorded with no start time, one with a wrong
one. Both must survive the recovery that stops the real pip and restores the venv."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmkit.install.journal import JOURNAL_NAME, SEAL_NAME, SEAL_SCHEMA
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
from tests.integration.test_install_faults import alive, child_groups, ended, start_install, wait_for_step
from tests.support.cli import last_error
from tests.support.pkgindex import IndexServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def index_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index")
    build_index(root)
    return root


@pytest.fixture
def server(index_root: Path) -> Iterator[IndexServer]:
    with IndexServer(index_root) as srv:
        yield srv


def reseal(journal: Path) -> None:
    """Seal an edited journal: what only someone who can already write rocmkit's own cache
    could do. The checks after the seal must hold on their own."""
    data = json.loads(journal.read_text())
    seal = {
        "schema": SEAL_SCHEMA,
        "journal": str(journal),
        "digests": [hashlib.sha256(journal.read_bytes()).hexdigest()],
    }
    (Path(data["workdir"]) / SEAL_NAME).write_text(json.dumps(seal))


def edit(journal: Path, **fields: object) -> None:
    data = json.loads(journal.read_text())
    data.update(fields)
    journal.write_text(json.dumps(data))


def victim() -> subprocess.Popen[bytes]:
    # setsid(1) execs in place (its parent is no group leader): pid == its own group and session.
    return subprocess.Popen(["setsid", "sleep", "600"], stdin=subprocess.DEVNULL)


def start_of(pid: int) -> str:
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rfind(")") + 2 :].split()[19]


def test_a_tampered_journal_is_refused_and_a_real_one_stops_only_what_it_can_prove(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = setup_61(capsys, tmp_path, server)
    before = pip_freeze_all(venv)
    guard_before = (venv / "rocmkit-constraints.txt").read_text()
    server.hold_at(TORCH_251)
    proc = start_install(venv, plan_62(tmp_path, server))
    victims: list[subprocess.Popen[bytes]] = []
    try:
        assert server.held.wait(120)
        data = wait_for_step(venv, "recorded", proc)
        pip_group = child_groups(data)[-1]
        os.killpg(proc.pid, signal.SIGKILL)  # rocmkit only: its pip leads a session of its own
        ended(proc)
        journal = venv / JOURNAL_NAME
        original = journal.read_bytes()
        seal = Path(json.loads(original)["workdir"]) / SEAL_NAME
        original_seal = seal.read_bytes()
        plan = str(plan_61(tmp_path, server))
        guard_now = (venv / "rocmkit-constraints.txt").read_text()
        assert "2.5.1" in guard_now  # rewritten before pip's dry run: a restore is due

        def refused(match: str) -> str:
            code, _, err = rk(capsys, "--venv", str(venv), "--plan", plan, "--installer", "pip")
            assert code == 13, err
            line = [ln for ln in err.splitlines() if ln.startswith("error:")]
            assert len(line) == 1 and match in line[0], err
            assert "Traceback" not in err
            # Nothing written, nothing stopped.
            assert (venv / "rocmkit-constraints.txt").read_text() == guard_now
            assert alive(pip_group)
            return last_error(err)  # the error line and its fix: lines

        def put_back() -> None:
            if journal.is_symlink() or journal.exists():
                journal.unlink()
            journal.write_bytes(original)
            os.chmod(journal, 0o600)
            seal.write_bytes(original_seal)

        # A symlink in the journal's place, even to the genuine journal.
        journal.rename(venv / "elsewhere.json")
        journal.symlink_to(venv / "elsewhere.json")
        assert f"\nfix: check the environment by hand (pip freeze), then delete {journal}" in refused("is a symlink")
        (venv / "elsewhere.json").unlink()
        put_back()

        # Writable by others; then the doctor (slurmd runs it as root) refuses it as well.
        os.chmod(journal, 0o666)
        refused("writable by")
        doctor = subprocess.run(
            [sys.executable, "-m", "rocmkit", "doctor", "--venv", str(venv), "--only", "env.shm"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert doctor.returncode == 13, doctor.stderr
        assert "writable by" in doctor.stderr and "Traceback" not in doctor.stderr
        assert alive(pip_group)
        put_back()

        if os.geteuid() == 0:  # making it another user's needs root
            os.chown(journal, 65534, 65534)
            refused("belongs to uid 65534")
            os.chown(journal, 0, 0)
            put_back()

        # A file to "restore" outside the venv: an /etc/cron.d-like target under tmp_path.
        cron = tmp_path / "etc/cron.d/rocmkit"
        files = json.loads(original)["files"]
        files[str(cron)] = "KiAqICogKiAqIHJvb3QgdG91Y2ggL3RtcC9wd25lZAo="
        edit(journal, files=files)
        refused("was changed since the install that wrote it")
        reseal(journal)
        refused("not a file rocmkit manages")
        assert not cron.parent.exists()
        put_back()

        # Processes: no start time, and a wrong one. The recovery goes ahead (the journal is
        # sealed again), stops the real pip (pid and start time match) and nobody else.
        no_start, wrong_start = victim(), victim()
        victims += [no_start, wrong_start]
        children = json.loads(original)["children"]
        children += [{"pid": no_start.pid, "start": None}, {"pid": wrong_start.pid, "start": "1"}]
        assert start_of(wrong_start.pid) != "1"
        edit(journal, children=children)
        reseal(journal)
        code, _, err = rk(capsys, "--venv", str(venv), "--plan", plan, "--installer", "pip")
        assert code == 0, err
        assert f"stopped process group {pip_group}" in err
        assert f"left process {no_start.pid} alone" in err and f"left process {wrong_start.pid} alone" in err
        assert no_start.poll() is None and wrong_start.poll() is None
        assert not alive(pip_group)
        assert "restored exactly" in err
    finally:
        server.release()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for v in victims:
            v.kill()
            v.wait(10)
    assert not (venv / JOURNAL_NAME).exists()
    assert pip_freeze_all(venv) == before
    assert (venv / "rocmkit-constraints.txt").read_text() == guard_before
