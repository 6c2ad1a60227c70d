"""`rocmkit detect` and `rocmkit snapshot` as real processes: hung and crashing tools,
the live CPU-only path, snapshot replay and import hygiene. Bad input that needs no process
is in tests/unit/test_cli_errors.py."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROCMKIT = [sys.executable, "-m", "rocmkit"]


def _run(
    args: list[str], env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ROCMKIT, *args], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )


def _tool(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


HUNG = ("rocminfo", "amd-smi", "rocm_agent_enumerator")


def _meet_then_hang(meet: Path, name: str, then: str) -> str:
    """A hung tool that first waits until every hung tool has started: it reaches
    "met" only when the three run at the same time (one after another, each is killed
    at its timeout before the next starts)."""
    others = " ".join(f"'{meet / h}.started'" for h in HUNG)
    return (
        f"touch '{meet / name}.started'\n"
        f'while true; do ok=1; for f in {others}; do [ -e "$f" ] || ok=0; done; '
        f"[ $ok = 1 ] && break; sleep 0.05; done\n"
        f"touch '{meet / name}.met'\n{then}"
    )


def _env_with_tools(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    meet = tmp_path / "meet"
    meet.mkdir()
    # Hangs, with a child holding the pipe: the runner must kill the whole group.
    _tool(bin_dir, "rocminfo", _meet_then_hang(meet, "rocminfo", "sleep 300 &\nsleep 300"))
    _tool(bin_dir, "amd-smi", _meet_then_hang(meet, "amd-smi", "sleep 300"))
    _tool(bin_dir, "rocm_agent_enumerator", _meet_then_hang(meet, "rocm_agent_enumerator", "sleep 300"))
    _tool(bin_dir, "rocm-smi", 'echo "ERROR: GPU[0] : unable to read" >&2\nexit 1')
    _tool(bin_dir, "hipconfig", "kill -SEGV $$")
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["ROCMKIT_PROBE_TIMEOUT"] = "2"
    return env


def test_hung_failing_and_crashing_tools_are_reported_within_budget(tmp_path: Path) -> None:
    env = _env_with_tools(tmp_path)
    proc = _run(["detect", "--json"], env=env)
    assert proc.returncode == 0, proc.stderr
    # The three hung tools ran at the same time, so a hung tool costs its timeout once, not once per
    # tool (what makes this fast, asserted without a clock: each saw the other two started).
    assert sorted(p.name for p in (tmp_path / "meet").glob("*.met")) == sorted(f"{h}.met" for h in HUNG)
    problems = {p["source"]: p for p in json.loads(proc.stdout)["problems"]}
    assert "did not finish within 2 s" in problems["rocminfo"]["message"]
    assert "did not finish within 2 s" in problems["amd-smi"]["message"]
    assert "exited with code 1: ERROR: GPU[0] : unable to read" in problems["rocm-smi"]["message"]
    assert "killed by signal 11" in problems["hipconfig"]["message"]
    assert all(p["hint"] for p in problems.values())


def _gpu_here() -> bool:
    return Path("/dev/kfd").exists() or shutil.which("nvidia-smi") is not None


@pytest.mark.skipif(_gpu_here(), reason="this test describes the CPU-only path")
def test_live_cpu_only_machine_says_no_gpu() -> None:
    proc = _run(["detect"])
    assert proc.returncode == 0, proc.stderr
    assert "No GPU found" in proc.stdout and "CPU-only PyTorch wheels" in proc.stdout
    data = json.loads(_run(["detect", "--json"]).stdout)
    assert data["gpus"] == [] and data["schema"] == "rocmkit.machine/1"


def test_detect_on_a_fresh_snapshot_prints_what_live_prints(tmp_path: Path) -> None:
    dest = tmp_path / "snap"
    snap = _run(["snapshot", str(dest)])
    assert snap.returncode == 0, snap.stderr
    assert (dest / "env.json").is_file() and (dest / "cmd" / "devices.txt").is_file()
    live = json.loads(_run(["detect", "--json"]).stdout)
    replay = json.loads(_run(["detect", "--json", "--capture", str(dest)]).stdout)
    assert replay.pop("source") == f"capture:{dest}"
    assert live.pop("source") == "live"
    assert replay == live
    live_text = _run(["detect"]).stdout.splitlines()[1:]
    replay_text = _run(["detect", "--capture", str(dest)]).stdout.splitlines()[1:]
    assert replay_text == live_text


def test_detect_does_not_import_torch_or_triton() -> None:
    code = (
        "import sys, contextlib, io\n"
        "from rocmkit.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['detect', '--json'])\n"
        "    main(['detect'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'triton')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_snapshot_that_cannot_write_a_file_is_one_line_exit_4(tmp_path: Path) -> None:
    (tmp_path / "root" / "etc" / "os-release").mkdir(parents=True)  # a folder where a file goes
    proc = _run(["snapshot", "--force", str(tmp_path)])
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.startswith("error: cannot write") and "Traceback" not in proc.stderr
    assert all(line.startswith("fix: ") for line in proc.stderr.strip().splitlines()[1:])


def test_fake_gpu_tools_live_and_snapshot_agree(tmp_path: Path) -> None:
    # Tools on PATH that print a real MI210 node's outputs, run through the real runner.
    cap = Path(__file__).resolve().parents[1] / "data" / "captures" / "mi210x2-gfx90a-rocm6.3.3" / "cmd"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _tool(bin_dir, "rocminfo", f"cat '{cap / 'rocminfo.txt'}'")
    _tool(bin_dir, "rocm-smi", f"cat '{cap / 'rocm-smi.txt'}'")
    _tool(bin_dir, "amd-smi", f"[ \"$1\" = list ] && cat '{cap / 'amd-smi-list.txt'}'; exit 0")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    live = json.loads(_run(["detect", "--json"], env=env).stdout)
    assert [(g["arch"], g["kfd_node"], g["pci_bus_id"]) for g in live["gpus"]] == [
        ("gfx90a", 2, "0000:03:00.0"),
        ("gfx90a", 3, "0000:83:00.0"),
    ]
    assert all(set(g["sources"]) >= {"rocminfo", "amd-smi", "rocm-smi"} for g in live["gpus"])
    dest = tmp_path / "snap"
    assert _run(["snapshot", str(dest)], env=env).returncode == 0
    assert (dest / "cmd" / "rocminfo.txt").read_text() == (cap / "rocminfo.txt").read_text()
    replay = json.loads(_run(["detect", "--json", "--capture", str(dest)], env=env).stdout)
    live.pop("source")
    replay.pop("source")
    assert replay == live
