"""The generated hook scripts, run by /bin/sh as slurmd would (no PATH, no HOME), when
rocmkit's own Python is gone: the health check drains the node itself (slurmd ignores a
HealthCheckProgram's exit code), the prolog exits 1 (slurmd drains and requeues)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.proc.runner import run
from rocmkit.slurm.config import HookConfig, scripts

pytestmark = [pytest.mark.integration]


def _fake_scontrol(tmp: Path) -> tuple[Path, Path]:
    calls = tmp / "scontrol.calls"
    exe = tmp / "scontrol"
    exe.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {calls}\n')
    exe.chmod(0o755)
    return exe, calls


@pytest.mark.parametrize("command", ["healthcheck", "prolog"])
def test_a_hook_whose_python_is_gone_fails_loudly(tmp_path: Path, command: str) -> None:
    scontrol, calls = _fake_scontrol(tmp_path)
    log = tmp_path / "hooks.log"
    cfg = HookConfig(
        folder=tmp_path, python=str(tmp_path / "gone" / "bin" / "python"), log=str(log), scontrol=str(scontrol)
    )
    script = tmp_path / command
    script.write_text(scripts(cfg)[f"rocmkit-{command}"])
    res = run(["/bin/sh", str(script)], timeout=30, env={"SLURMD_NODENAME": "n7"})
    assert res.returncode == 1, res.describe()
    assert f"n7: rocmkit's Python {tmp_path}/gone/bin/python is missing" in res.stderr
    assert f"rocmkit-{command}: n7: rocmkit's Python" in log.read_text()
    if command == "healthcheck":
        assert calls.read_text() == "update NodeName=n7 State=DRAIN Reason=rocmkit: python missing\n"
    else:
        assert not calls.exists()  # slurmd drains on the prolog's exit code


def test_the_script_log_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    scontrol, _ = _fake_scontrol(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    log = tmp_path / "hooks.log"
    log.symlink_to(victim)
    cfg = HookConfig(folder=tmp_path, python=str(tmp_path / "nope"), log=str(log), scontrol=str(scontrol))
    script = tmp_path / "hc"
    script.write_text(scripts(cfg)["rocmkit-healthcheck"])
    assert run(["/bin/sh", str(script)], timeout=30, env={"SLURMD_NODENAME": "n7"}).returncode == 1
    assert victim.read_text() == "keep\n"


def test_a_hook_with_its_python_runs_rocmkit(tmp_path: Path) -> None:
    import sys

    cfg = HookConfig(folder=tmp_path, python=sys.executable, log=str(tmp_path / "l"), args=("--help",))
    script = tmp_path / "pro"
    script.write_text(scripts(cfg)["rocmkit-prolog"])
    res = run(["/bin/sh", str(script)], timeout=60, env={"PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert res.returncode == 0 and "Prolog" in res.stdout, res.describe()
