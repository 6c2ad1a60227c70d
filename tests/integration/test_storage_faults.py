"""A full disk and a read-only file system, for real: a small tmpfs (root only; skipped
otherwise). Each command says so in one line with exit 12 and leaves no partial file or
folder; an install changes nothing."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_install_e2e import (
    _quiet_user_config,  # noqa: F401  (autouse: the developer's pip config stays out)
    build_index,
    pip_freeze_all,
    plan_62,
    setup_61,
)
from tests.support.pkgindex import IndexServer

pytestmark = pytest.mark.integration


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str = "256k") -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path) -> None:
    """Take every free block (a file that grows until ENOSPC)."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)


def remount_ro(folder: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)


def rocmkit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rocmkit", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def report(folder: Path) -> Path:
    from tests.unit.test_fleet_summarize import make_report

    path = folder / "report.json"
    path.write_text(json.dumps(make_report("n1").to_dict()))
    return path


def test_full_disk_fleet_html_and_snapshot(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "mnt") as mnt:
        fill(mnt)
        before = sorted(p.name for p in mnt.iterdir())
        html = rocmkit("fleet", "summarize", str(report(tmp_path)), "--html", str(mnt / "fleet.html"))
        snap = rocmkit("snapshot", str(mnt / "snap"))
        after = sorted(p.name for p in mnt.iterdir())
    for done in (html, snap):
        assert done.returncode == 12, done.stderr
        assert "Traceback" not in done.stderr
        assert "no space left" in done.stderr
    assert after == before  # no empty page, no temporary file, no partial capture folder


def test_read_only_file_system_fleet_html(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "mnt") as mnt:
        remount_ro(mnt)
        html = rocmkit("fleet", "summarize", str(report(tmp_path)), "--html", str(mnt / "fleet.html"))
        assert not (mnt / "fleet.html").exists()
    assert html.returncode == 12 and "read-only" in html.stderr, html.stderr


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_install_with_a_full_or_read_only_cache_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    root = tmp_path / "index"
    build_index(root)
    with IndexServer(root) as srv:
        venv = setup_61(capsys, tmp_path, srv)
        before = pip_freeze_all(venv)
        plan = plan_62(tmp_path, srv)
        with small_tmpfs(tmp_path / "mnt") as mnt:
            if fault == "full":
                fill(mnt)
            else:
                remount_ro(mnt)
            done = rocmkit(
                "install", "--venv", str(venv), "--plan", str(plan), "--installer", "pip",
                env={"ROCMKIT_CACHE_DIR": str(mnt / "cache")},
            )  # fmt: skip
    assert done.returncode == 12, done.stderr
    assert "Traceback" not in done.stderr
    assert ("no space left" if fault == "full" else "read-only") in done.stderr
    assert pip_freeze_all(venv) == before
    assert not (venv / "rocmkit-journal.json").exists()
