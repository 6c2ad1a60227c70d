"""The one command runner, for real: timeouts, missing tools, failures, signals, streaming."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from rocmkit.proc.runner import run

pytestmark = pytest.mark.integration


def test_ok_keeps_stdout_stderr_and_code() -> None:
    res = run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"])
    assert res.status == "ok"
    assert res.returncode == 0
    assert res.stdout.strip() == "out"
    assert res.stderr.strip() == "err"


def test_missing_binary_is_absent_not_an_error() -> None:
    res = run(["definitely-not-a-tool-rocmkit"])
    assert res.status == "absent"
    assert "not installed" in res.describe()


def test_nonzero_exit_is_failed_with_last_stderr_line() -> None:
    res = run([sys.executable, "-c", "import sys; sys.stderr.write('boom\\n'); sys.exit(3)"])
    assert res.status == "failed"
    assert res.returncode == 3
    assert "boom" in res.describe()


def test_signal_death_is_reported() -> None:
    res = run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"])
    assert res.status == "signal"
    assert "signal 11" in res.describe()


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    # The child starts a grandchild that would outlive a plain kill of the child.
    marker = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time;"
        f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
        f"open({str(marker)!r}, 'w').write(str(p.pid));"
        "time.sleep(60)"
    )
    res = run([sys.executable, "-c", code], timeout=1.5)
    assert res.status == "timeout"
    assert "did not finish within 1.5 s" in res.describe()
    pid = int(marker.read_text())
    time.sleep(0.2)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for an init that does not reap counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    try:
        state = next(line for line in status.read_text().splitlines() if line.startswith("State:"))
    except (OSError, StopIteration):
        return False
    return "Z" not in state.split()[1]


def test_timeout_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path: Path) -> None:
    # The child outlives SIGTERM; had the runner waited for it, it would have written `done`.
    done = tmp_path / "done"
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True);"
        f"time.sleep(60); open({str(done)!r}, 'w').close()"
    )
    res = run([sys.executable, "-c", code], timeout=1.0)
    assert res.status == "timeout" and res.stdout == "ready\n"
    assert not done.exists()


def test_streaming_to_log_and_callback(tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    seen: list[str] = []
    res = run(
        [sys.executable, "-c", "import sys\nfor i in range(3): print(i, flush=True)\nsys.exit(2)"],
        log_path=log,
        on_line=seen.append,
    )
    assert res.status == "failed"
    assert res.returncode == 2
    assert seen == ["0", "1", "2"]
    assert log.read_text().splitlines() == ["0", "1", "2"]


def test_streaming_timeout(tmp_path: Path) -> None:
    res = run(
        [sys.executable, "-c", "import time; print('x', flush=True); time.sleep(30)"],
        timeout=1.0,
        log_path=tmp_path / "l.log",
    )
    assert res.status == "timeout"
    assert "x" in res.stdout
