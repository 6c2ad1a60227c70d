"""Root never starts a Python another user could have changed (issue 39, point 1).

A real venv (``python -m venv``) with a ``.pth`` file planted in a ``site-packages`` owned by
``nobody``: the file's ``import`` line would run as root at the interpreter's next start. The
Slurm health check and prolog refuse to run it and drain the node (``rocmkit: venv
untrusted``, with the reason in the log), ``doctor --venv`` and ``doctor --python`` refuse it
(exit 13, one line) unless ``--allow-untrusted-python`` (then a warning), and ``install
--venv`` refuses it, each without the planted line ever running. The same venv owned by root
passes (the control)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocmkit.util.trust import interpreter_problem
from tests.conftest import REPO

pytestmark = pytest.mark.integration

NOBODY = 65534


def _root_only() -> None:
    if os.geteuid() != 0:
        pytest.skip("the rule is root's: only root would run another user's code (and chown needs root)")


def _rocmkit(args: list[str], tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ROCMKIT_", "VIRTUAL_ENV"))}
    base.update(ROCMKIT_CACHE_DIR=str(tmp / "cache"), ROCMKIT_OFFLINE="1", **env)
    return subprocess.run(
        [sys.executable, "-m", "rocmkit", *args],
        capture_output=True,
        text=True,
        env=base,
        cwd=REPO,
        timeout=300,
        check=False,
    )


@pytest.fixture()
def planted(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A real venv whose site-packages holds a .pth that leaves a mark when it runs."""
    _root_only()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (site,) = venv.glob("lib/python3*/site-packages")
    mark = tmp_path / "ran-as-root"
    (site / "zz-planted.pth").write_text(f"import pathlib; pathlib.Path({str(mark)!r}).write_text('x')\n")
    return venv, site, mark


def test_the_control_a_root_venv_with_the_same_pth_runs(planted: tuple[Path, Path, Path]) -> None:
    venv, _, mark = planted
    # What Python never reads may be anyone's: uv makes its .lock 0666; share/ holds data.
    (venv / ".lock").touch()
    (venv / ".lock").chmod(0o666)
    (venv / "share").mkdir()
    os.chown(venv / "share", NOBODY, NOBODY)
    assert interpreter_problem(venv / "bin" / "python") is None
    subprocess.run([str(venv / "bin" / "python"), "-c", "pass"], check=True, timeout=60)
    assert mark.exists()  # the .pth runs at start-up: this is what is at stake


@pytest.mark.parametrize(
    "how", ["site-packages nobody's", "the .pth nobody's", "site-packages 1777", "lib 0775", "pyvenv.cfg 0666"]
)
def test_any_start_up_path_another_user_can_write_is_named(planted: tuple[Path, Path, Path], how: str) -> None:
    venv, site, _ = planted
    if how == "site-packages nobody's":
        os.chown(site, NOBODY, NOBODY)
        named = f"{site} is owned by uid 65534"
    elif how == "the .pth nobody's":
        os.chown(site / "zz-planted.pth", NOBODY, NOBODY)
        named = f"{site / 'zz-planted.pth'} is owned by uid 65534"
    elif how == "site-packages 1777":
        site.chmod(0o1777)  # sticky does not help: anyone may still add a .pth
        named = f"{site} is writable by group and others"
    elif how == "lib 0775":
        (venv / "lib").chmod(0o775)
        named = f"{venv / 'lib'} is writable by its group"
    else:
        (venv / "pyvenv.cfg").chmod(0o666)
        named = f"{venv / 'pyvenv.cfg'} is writable by group and others"
    problem = interpreter_problem(venv / "bin" / "python")
    assert problem is not None and named in problem, problem


def test_a_folder_a_pth_puts_on_the_path_is_checked(planted: tuple[Path, Path, Path], tmp_path: Path) -> None:
    venv, site, _ = planted
    src = tmp_path / "src"
    src.mkdir()
    (src / "sitecustomize.py").write_text("pass\n")
    (site / "editable.pth").write_text(f"{src}\n")
    assert interpreter_problem(venv / "bin" / "python") is None
    os.chown(src / "sitecustomize.py", NOBODY, NOBODY)
    problem = interpreter_problem(venv / "bin" / "python")
    assert problem and "sitecustomize.py is owned by uid 65534" in problem and "editable.pth" in problem


def test_the_base_installation_pyvenv_cfg_names_is_checked(planted: tuple[Path, Path, Path], tmp_path: Path) -> None:
    venv, _, _ = planted
    # A base installation another user owns (its standard library runs first of all).
    base = tmp_path / "base"
    (base / "bin").mkdir(parents=True)
    (base / "lib" / "python3.11" / "encodings").mkdir(parents=True)
    (base / "lib" / "python3.11" / "encodings" / "__init__.py").write_text("")
    cfg = venv / "pyvenv.cfg"
    cfg.write_text(cfg.read_text().replace("home = ", f"home = {base / 'bin'}\n#", 1))
    assert interpreter_problem(venv / "bin" / "python") is None
    os.chown(base / "lib" / "python3.11" / "encodings", NOBODY, NOBODY)
    problem = interpreter_problem(venv / "bin" / "python")
    assert problem and f"{base / 'lib' / 'python3.11' / 'encodings'} is owned by uid 65534" in problem


@pytest.mark.parametrize("command", ["healthcheck", "prolog"])
def test_the_slurm_hooks_refuse_and_drain(planted: tuple[Path, Path, Path], tmp_path: Path, command: str) -> None:
    venv, site, mark = planted
    os.chown(site, NOBODY, NOBODY)
    calls = tmp_path / "scontrol.calls"
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(
        f'#!/bin/sh\necho "$*" >> {calls}\n[ "$1" = show ] && echo "NodeName=n7 Arch=x86_64 State=IDLE"\nexit 0\n'
    )
    scontrol.chmod(0o755)
    log = tmp_path / "hook.log"
    args = ["slurm", command, "--venv", str(venv), "--node", "n7", "--log", str(log)]
    res = _rocmkit([*args, "--scontrol", str(scontrol)] if command == "healthcheck" else args, tmp_path)
    assert res.returncode == 1, res.stderr[-2000:]
    assert "Traceback" not in res.stderr and not mark.exists()
    said = log.read_text()
    assert f"the Python {venv} is not safe to run as root: {site} is owned by uid 65534" in said, said
    if command == "healthcheck":
        assert "State=DRAIN Reason=rocmkit: venv untrusted" in calls.read_text()


@pytest.mark.parametrize("option", ["--venv", "--python"])
def test_doctor_as_root_refuses_unless_told(planted: tuple[Path, Path, Path], tmp_path: Path, option: str) -> None:
    venv, site, mark = planted
    os.chown(site, NOBODY, NOBODY)
    target = str(venv) if option == "--venv" else str(venv / "bin" / "python")
    res = _rocmkit(["doctor", option, target, "--level", "0", "--only", "torch.import"], tmp_path)
    assert res.returncode == 13, res.stderr[-2000:]
    line, fix, *others = res.stderr.strip().splitlines()  # what is wrong, then its fixes
    assert all(f.startswith("fix: ") for f in others)
    assert f"root will not run the Python at {venv / 'bin' / 'python'}: {site} is owned by uid 65534" in line
    assert fix.startswith("fix: ") and "chown -R root:root" in fix and not mark.exists()
    anyway = _rocmkit(
        ["doctor", option, target, "--level", "0", "--only", "torch.import", "--allow-untrusted-python"], tmp_path
    )
    assert anyway.returncode != 13 and "Traceback" not in anyway.stderr, anyway.stderr[-2000:]
    assert f"warning: root will not run the Python at {venv / 'bin' / 'python'}" in anyway.stderr
    assert mark.exists()  # told to, it ran the venv: the warning said whose code that is


def test_install_into_it_as_root_is_refused(planted: tuple[Path, Path, Path], tmp_path: Path) -> None:
    venv, site, mark = planted
    os.chown(site, NOBODY, NOBODY)
    res = _rocmkit(["install", "--venv", str(venv), "--dry-run"], tmp_path, ROCMKIT_GFX="gfx942")
    assert res.returncode == 13, res.stderr[-2000:]
    assert f"{site} is owned by uid 65534" in res.stderr and not mark.exists()
