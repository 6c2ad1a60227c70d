"""A restore is exact, or says what it is not (issue 39, point 2).

A real pip install of a torch whose wheel unpacks thousands of files is stopped by SIGKILL
(rocmkit and pip's process group, as an OOM kill or a power cut would) while pip unpacks:
the new package's files are in site-packages, its dist-info is not. The distributions alone
look restored once the backup is reinstalled; the venv's file list from before shows the
leftovers, which the recovery removes and names, and only then says "exactly". A guard file
that was a symlink comes back as the same link, and what cannot be put back (a file of the
user's that the install did not write) is named, not called exact."""

from __future__ import annotations

import contextlib
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
    _quiet_user_config,  # noqa: F401  (autouse: the developer's pip config stays out)
    build_index,
    pip_freeze_all,
    setup_61,
    write_plan,
)
from tests.support.pkgindex import PLATFORM_TAG, IndexServer, make_wheel, torch_files

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MANY = 6000  # small files in the new torch: pip takes seconds to unpack them


@pytest.fixture(scope="module")
def index_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index")
    build_index(root)
    many = root / "whl/many"
    for wheel in (root / "whl/rocm6.2").glob("pytorch_triton*"):
        many.mkdir(parents=True, exist_ok=True)
        shutil.copy(wheel, many)
    files = torch_files("2.5.1+rocm6.2", hip="6.2.41133")
    # Sorted before torch/__init__.py and long before the dist-info (make_wheel writes it last).
    files.update({f"torch/_many/m{i:05d}.py": f"X = {i}\n" + "#" * 512 + "\n" for i in range(MANY)})
    make_wheel(
        many, "torch", "2.5.1+rocm6.2", tag=PLATFORM_TAG, requires=["pytorch-triton-rocm==3.1.0"], files=files,
        requires_python=">=3.9",
    )  # fmt: skip
    return root


@pytest.fixture
def server(index_root: Path) -> Iterator[IndexServer]:
    with IndexServer(index_root) as srv:
        yield srv


def _site(venv: Path) -> Path:
    (site,) = venv.glob("lib/python3*/site-packages")
    return site


def _kill_mid_unpack(venv: Path, plan: Path) -> None:
    """Start `rocmkit install --installer pip`; SIGKILL it and pip once pip has unpacked some of
    the new torch's files and not yet its dist-info."""
    site = _site(venv)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rocmkit", "install", "--venv", str(venv), "--plan", str(plan), "--installer", "pip",
         "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            unpacked = site / "torch" / "_many"
            if unpacked.is_dir() and len(os.listdir(unpacked)) > 50:
                break
            time.sleep(0.002)
        else:
            raise AssertionError("pip never unpacked the new torch")
        journal = json.loads((venv / JOURNAL_NAME).read_text())
        groups = [int(c["pid"]) for c in journal["children"]]
        os.killpg(proc.pid, signal.SIGKILL)
        for group in groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)  # pip dies with it: nothing finishes the unpack
        proc.wait(10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if proc.stderr is not None:
            proc.stderr.close()


def _recover(venv: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rocmkit", "doctor", "--venv", str(venv), "--only", "triton.packages"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def test_a_package_half_unpacked_when_pip_was_killed_does_not_survive(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = setup_61(capsys, tmp_path, server)
    site = _site(venv)
    before = pip_freeze_all(venv)
    listing_before = sorted(str(p.relative_to(venv)) for p in venv.rglob("*") if "__pycache__" not in p.parts)
    _kill_mid_unpack(venv, write_plan(tmp_path, server, "rocm6.2", "2.5.1+rocm6.2", "pytorch-triton-rocm==3.1.0",
                                      "whl/many"))  # fmt: skip
    assert (site / "torch" / "_many").is_dir()
    assert not list(site.glob("torch-2.5.1*.dist-info"))  # half unpacked: no distribution says so
    res = _recover(venv)
    err = res.stderr
    assert "was interrupted at step" in err, err
    assert "the environment was restored exactly to its recorded state (every file as it was)" in err, err
    assert "removed" in err and "torch/_many" in err, err
    assert not (site / "torch" / "_many").exists()
    assert pip_freeze_all(venv) == before
    listing_after = sorted(str(p.relative_to(venv)) for p in venv.rglob("*") if "__pycache__" not in p.parts)
    assert listing_after == listing_before
    assert not (venv / JOURNAL_NAME).exists()


def test_what_differs_after_a_restore_is_named_not_called_exact(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = setup_61(capsys, tmp_path, server)
    site = _site(venv)
    # pip.conf is a link to a shared configuration (a guard file the install rewrites).
    shared = tmp_path / "shared-pip.conf"
    shared.write_text((venv / "pip.conf").read_text() + "\n[global]\ntimeout = 30\n")
    kept = shared.read_text()
    (venv / "pip.conf").unlink()
    (venv / "pip.conf").symlink_to(shared)
    (site / "user_notes.py").write_text("A = 1\n")  # the user's own module, in no distribution
    _kill_mid_unpack(venv, write_plan(tmp_path, server, "rocm6.2", "2.5.1+rocm6.2", "pytorch-triton-rocm==3.1.0",
                                      "whl/many"))  # fmt: skip
    # Meanwhile the user edits their module: no backup holds it, so it stays as edited.
    (site / "user_notes.py").write_text("A = 2  # edited\n")
    res = _recover(venv)
    err = res.stderr
    assert (venv / "pip.conf").is_symlink() and os.readlink(venv / "pip.conf") == str(shared)
    assert shared.read_text() == kept
    assert "restored exactly" not in err, err
    assert "not every file as it was: 1 differ (" in err and "user_notes.py changed" in err, err
    assert not (site / "torch" / "_many").exists()  # the leftovers go all the same
