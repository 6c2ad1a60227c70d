"""Fake tools that misbehave, run through the one runner and through doctor's check children:
hang, print without end, crash, print 100 MB, leave a grandchild (in the group or escaped
from it with setsid) holding the pipes. Memory stays bounded and nothing is left running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rocmkit.doctor.result import Status
from rocmkit.doctor.run import RunOptions, doctor
from rocmkit.machine import Machine
from rocmkit.proc.runner import run

pytestmark = pytest.mark.integration

PY = sys.executable
FLOOD = "import os\nwhile True: os.write(1, b'y' * 65536)"


def gone(pid: int) -> bool:
    """Dead, or a zombie waiting for a parent that is not this test."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def wait_gone(pid: int) -> bool:
    for _ in range(100):
        if gone(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_tool_printing_without_end_is_stopped_with_its_own_status() -> None:
    result = run([PY, "-c", FLOOD], timeout=60, max_output=1 << 20)
    assert result.status == "overflow"
    assert "printed more than 1048576 bytes" in result.describe()
    assert result.stdout.startswith("yyyy") and "bytes left out" in result.stdout
    assert len(result.stdout) < (1 << 20) + 200


def test_a_stream_keeps_its_head_and_its_last_bytes_in_order() -> None:
    from rocmkit.proc.runner import HELD, _Capped

    before = HELD.now
    capped = _Capped(10)  # 5 bytes of head, the last 5 (and up to one chunk more) of tail
    for chunk in (b"abc", b"defg", b"hij", b"klmno", b"pq"):
        capped.add(chunk)
    assert HELD.now > before
    text = capped.text()
    head, _, rest = text.partition("\n[... ")
    assert head == "abcde" and rest.endswith("bytes left out ...]\n" + text.rsplit("\n", 1)[1])
    kept = text.rsplit("\n", 1)[1]
    assert "abcdefghijklmnopq".endswith(kept) and 5 <= len(kept) <= 7
    assert f"[... {17 - 5 - len(kept)} bytes left out ...]" in text
    assert HELD.now == before  # given back


def test_floods_running_at_once_keep_no_more_than_the_shared_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every running command's streams count against one bound (proc.runner.MAX_HELD_BYTES):
    however many tools flood at once, what they keep together stays under it."""
    from concurrent.futures import ThreadPoolExecutor

    from rocmkit.proc import runner

    held = runner._Held(3 << 20)
    peak = [0]
    take = held.take

    def counted(n: int) -> bool:
        ok = take(n)
        peak[0] = max(peak[0], held.now)
        return ok

    monkeypatch.setattr(held, "take", counted)
    monkeypatch.setattr(runner, "HELD", held)
    # Each may keep 64 MiB on its own: only the shared 3 MiB stops them, each when it is full.
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda _: run([PY, "-c", FLOOD], timeout=60, max_output=64 << 20), range(6)))
    assert all(r.status == "overflow" and "kept by all commands at once" in r.describe() for r in results)
    assert 0 < peak[0] <= 3 << 20
    assert held.now == 0  # every command gave back what it kept


def test_a_tool_printing_100_mb_and_exiting_costs_bounded_memory(tmp_path: Path) -> None:
    # Under a 1 GiB address-space limit, the default cap (8 MiB per stream) must hold.
    script = textwrap.dedent(
        f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from rocmkit.proc.runner import run
        r = run([{PY!r}, "-c", "import os\\nfor _ in range(1600): os.write(1, b'z' * 65536)"], timeout=120)
        print(r.status, len(r.stdout))
        """
    )
    out = subprocess.run([PY, "-c", script], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    status, size = out.stdout.split()
    assert status == "overflow" and int(size) < 9 * 1024 * 1024


def test_crash_and_hang_are_statuses() -> None:
    crashed = run([PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"], timeout=30)
    assert crashed.status == "signal" and crashed.returncode == -signal.SIGSEGV
    hung = run([PY, "-c", "import time; time.sleep(600)"], timeout=1)
    assert hung.status == "timeout"


@pytest.mark.parametrize("escape", [False, True], ids=["same-group", "setsid"])
def test_a_grandchild_holding_the_pipes_is_not_a_hang_and_is_killed(tmp_path: Path, escape: bool) -> None:
    marker = tmp_path / "pid"
    script = textwrap.dedent(
        f"""
        import subprocess, sys
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                             start_new_session={escape})
        open({str(marker)!r}, "w").write(str(p.pid))
        print("parent done")
        sys.exit(3)
        """
    )
    result = run([PY, "-c", script], timeout=60)
    assert result.status == "failed" and result.returncode == 3  # its own exit code, not a timeout
    assert "parent done" in result.stdout
    assert wait_gone(int(marker.read_text()))


def test_streaming_run_with_an_escaped_grandchild_ends_and_kills_it(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    script = (
        "import subprocess, sys\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], start_new_session=True)\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
    )
    lines: list[str] = []
    result = run([PY, "-c", script], timeout=60, on_line=lines.append)
    assert result.status == "ok"
    assert wait_gone(int(marker.read_text()))


MOD = "tests.integration.doctor_fake_checks"


def test_doctor_survives_a_check_that_floods_and_one_that_escapes(tmp_path: Path) -> None:
    report = doctor(
        Machine(),
        RunOptions(level=3, only=("fake.flood", "fake.escape_setsid"), modules=(MOD,), backend="cpu"),
        cache_dir=tmp_path / "cache",
    )
    by_name = {r.name: r for r in report.results}
    flood = by_name["fake.flood"]
    assert flood.status is Status.ERROR
    assert "printed more than" in flood.message and "was stopped" in flood.message
    escaped = by_name["fake.escape_setsid"]
    assert escaped.status is Status.PASS, escaped.message  # not misreported as a hang
    assert wait_gone(int(escaped.details["grandchild"]))
    assert os.getpid()  # the doctor process itself is alive and answered


def test_detect_with_tools_that_flood_hang_and_crash_stays_under_1_gib(tmp_path: Path) -> None:
    """`rocmkit detect` on a PATH of misbehaving fake ROCm/NVIDIA tools, run under a 1 GiB
    address-space limit: every tool is stopped or timed out, detect answers, exit 0."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tools = {
        "rocminfo": FLOOD,  # prints without end (several run at once: each capped)
        "amd-smi": "import os\nfor _ in range(1600): os.write(1, b'z' * 65536)",  # 100 MB, then exits
        "rocm-smi": "import time\ntime.sleep(600)",  # hangs
        "nvidia-smi": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)",  # crashes
        "hipconfig": FLOOD,
    }
    for name, body in tools.items():
        path = bin_dir / name
        path.write_text(f"#!{PY}\n{body}\n")
        path.chmod(0o755)
    limit = (
        "import resource, runpy, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "sys.argv = ['rocmkit', 'detect', '--json']\n"
        "runpy.run_module('rocmkit', run_name='__main__')\n"
    )
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "ROCMKIT_PROBE_TIMEOUT": "3"}
    done = subprocess.run([PY, "-c", limit], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    import json

    machine = json.loads(done.stdout)
    assert machine["schema"] == "rocmkit.machine/1"
