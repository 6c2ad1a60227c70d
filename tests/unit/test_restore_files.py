"""The venv's file list and what a restore says from it (issue 39, point 2), on a venv-shaped
folder: what an installer rewrites is named, never called exact; what a stopped installer left
in its trees (uv's .lock, a package with no dist-info, pip's ~name stash) is removed; what is
not the installer's is named and left alone; a guard file that was a symlink comes back as the
link. The real installs are in tests/integration/test_install_restore_files.py."""

from __future__ import annotations

import os
from pathlib import Path

from rocmkit.install.state import (
    FileCheck,
    StateDiff,
    compare_files,
    list_files,
    load_listing,
    remove_leftovers,
    restore_links,
    save_listing,
)
from rocmkit.install.transaction import RestoreReport


def _venv(root: Path) -> Path:
    site = root / "lib/python3.11/site-packages"
    (site / "torch").mkdir(parents=True)
    (site / "torch/__init__.py").write_text("V = 1\n")
    info = site / "torch-2.4.1.dist-info"
    info.mkdir()
    (info / "INSTALLER").write_text("uv\n")
    (info / "RECORD").write_text("torch/__init__.py,sha256=x,6\n")
    (root / "bin").mkdir()
    (root / "bin/torchrun").write_text("#!/v/bin/python\n# uv's launcher\n")
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "shared.conf").write_text("[global]\n")
    (root / "pip.conf").symlink_to(root / "shared.conf")
    return site


def test_the_list_round_trips_through_the_private_folder(tmp_path: Path) -> None:
    _venv(tmp_path / "v")
    listing = list_files(tmp_path / "v")
    work = tmp_path / "work"
    work.mkdir(mode=0o700)
    digest = save_listing(work, listing)
    assert load_listing(work, digest) == listing
    assert load_listing(work, "0" * 64) is None  # not the list the journal names


def test_what_an_installer_rewrote_is_named(tmp_path: Path) -> None:
    venv = tmp_path / "v"
    site = _venv(venv)
    before = list_files(venv)
    assert compare_files(venv, before).differ == ()  # the control
    (site / "torch-2.4.1.dist-info/INSTALLER").write_text("pi\n")  # same size, other bytes
    (site / "torch-2.4.1.dist-info/RECORD").write_text("torch/__init__.py,sha256=x,6\nbin/torchrun,,\n")
    (venv / "bin/torchrun").write_text("#!/v/bin/python\n# pip's launcher, longer\n")
    (venv / "pip.conf").unlink()
    (venv / "pip.conf").write_text("[global]\n")  # a guard symlink written back as a file
    said = compare_files(venv, before).differ
    assert said == (
        "bin/torchrun changed",
        "lib/python3.11/site-packages/torch-2.4.1.dist-info/INSTALLER rewritten",
        "lib/python3.11/site-packages/torch-2.4.1.dist-info/RECORD changed",
        "pip.conf is a file, was a link",
    )
    restore_links(before, (str(venv / "pip.conf"),))
    assert os.readlink(venv / "pip.conf") == str(venv / "shared.conf")
    assert "pip.conf" not in " ".join(compare_files(venv, before).differ)


def test_leftovers_of_a_stopped_installer_go_what_is_not_its_stays(tmp_path: Path) -> None:
    venv = tmp_path / "v"
    site = _venv(venv)
    before = list_files(venv)
    (venv / ".lock").write_text("")  # uv's
    (site / "scipy/linalg").mkdir(parents=True)  # unpacked, no dist-info yet
    (site / "scipy/linalg/__init__.py").write_text("")
    (site / "scipy/__pycache__").mkdir()
    (site / "~orch").mkdir()  # pip's stash of what it was replacing
    (site / "torch/new_module.py").write_text("")
    (venv / ".pip.conf.abc123.tmp").write_text("")  # rocmkit's own atomic write, cut short
    (venv / ".rocmkit-journal.json.x1y2z3.tmp").write_text("")  # the journal's, killed mid-write
    (venv / "notes.txt").write_text("the user's\n")  # not in an installer's tree
    removed = remove_leftovers(venv, before, ("pip.conf",))
    assert removed == [
        ".lock",
        ".pip.conf.abc123.tmp",
        ".rocmkit-journal.json.x1y2z3.tmp",
        "lib/python3.11/site-packages/scipy",
        "lib/python3.11/site-packages/torch/new_module.py",
        "lib/python3.11/site-packages/~orch",
    ]
    check = compare_files(venv, before, tuple(removed))
    assert check.differ == ("notes.txt left alone (not there before, not the installer's)",)
    assert (venv / "notes.txt").exists() and not (site / "scipy").exists()


def test_the_report_says_exact_only_when_every_file_is() -> None:
    none = StateDiff()
    exact = RestoreReport(remaining=none, steps=(), files=FileCheck(removed=("a/x",)))
    assert exact.exact and "restored exactly" in exact.describe() and "removed 1 entries" in exact.describe()
    rewritten = RestoreReport(remaining=none, steps=(), files=FileCheck(differ=("bin/x changed",)))
    assert rewritten.restored and not rewritten.exact
    assert "exactly" not in rewritten.describe() and "1 differ (bin/x changed)" in rewritten.describe()
    unchecked = RestoreReport(remaining=none, steps=())
    assert not unchecked.exact and "not compared one by one" in unchecked.describe()
