"""The matrices overlay (issue 39, point 3): every data file it serves passes the trust rule,
it never mixes copies from different refreshes, and a refresh that changes nothing says so and
switches nothing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rocmkit import __version__
from rocmkit.matrix.write import Refresh, write_refresh
from rocmkit.util.paths import OVERLAY_STAMP, overlay_is_newer, overlay_problem, shipped_matrices_dir

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="making a file another user's needs root (chown)")


def _overlay(tmp_path: Path) -> tuple[Path, Path]:
    shipped = tmp_path / "shipped"
    shutil.copytree(shipped_matrices_dir(), shipped, ignore=shutil.ignore_patterns("bench"))
    overlay = tmp_path / "data" / "matrices"
    shutil.copytree(shipped, overlay)
    (overlay / OVERLAY_STAMP).write_text("999.0\n")  # a newer rocmkit's refresh: it would win
    return shipped, overlay


@pytest.mark.parametrize(
    "how", [pytest.param("nobody's", marks=needs_root), "group-writable", "a symlink", "in a subfolder"]
)
@pytest.mark.parametrize("name", ["channels.toml", "companions.toml", "gfx.toml", OVERLAY_STAMP])
def test_every_file_the_overlay_serves_passes_the_rule(tmp_path: Path, name: str, how: str) -> None:
    shipped, overlay = _overlay(tmp_path)
    assert overlay_problem(overlay) is None and overlay_is_newer(overlay, shipped)  # the control
    path = overlay / name
    if how == "nobody's":
        os.chown(path, NOBODY, NOBODY)
        said = "owned by uid 65534"
    elif how == "group-writable":
        path.chmod(0o664)
        said = "writable by its group"
    elif how == "a symlink":
        real = tmp_path / "elsewhere.toml"
        real.write_bytes(path.read_bytes())
        path.unlink()
        path.symlink_to(real)
        said = "a symlink"
    else:
        (overlay / "sub").mkdir()
        path = overlay / "sub" / name
        path.write_text("x")
        path.chmod(0o666)
        said = "writable by group and others"
    problem = overlay_problem(overlay)
    assert problem is not None and str(path) in problem and said in problem, problem
    assert not overlay_is_newer(overlay, shipped)  # the shipped data is used instead


def _refresh(torch_text: str) -> Refresh:
    return Refresh(texts={"torch.toml": torch_text}, old={}, outcome=None)  # type: ignore[arg-type]


def test_an_overlay_is_written_whole_never_mixed_with_an_older_refresh(tmp_path: Path) -> None:
    shipped, overlay = _overlay(tmp_path)
    # An older refresh left its own copy of gfx.toml, and a file the data no longer has.
    (overlay / "gfx.toml").write_text((overlay / "gfx.toml").read_text() + "\n# from an older refresh\n")
    (overlay / "retired.toml").write_text("schema = 1\n")
    torch_text = (shipped / "torch.toml").read_text() + "\n# refreshed\n"
    written = write_refresh(overlay, _refresh(torch_text), source_dir=shipped)
    assert str(overlay / "torch.toml") in written and str(overlay / "gfx.toml") in written
    assert (overlay / "gfx.toml").read_text() == (shipped / "gfx.toml").read_text()
    assert (overlay / "torch.toml").read_text() == torch_text
    assert not (overlay / "retired.toml").exists()
    assert (overlay / OVERLAY_STAMP).read_text().strip() == __version__
    assert overlay_problem(overlay) is None
    assert sorted(p.name for p in overlay.iterdir()) == sorted([*(p.name for p in shipped.iterdir()), OVERLAY_STAMP])
    assert not [p for p in overlay.parent.iterdir() if p.name.startswith(".")]  # no scratch left


def test_a_refresh_that_changes_nothing_writes_and_switches_nothing(tmp_path: Path) -> None:
    shipped, overlay = _overlay(tmp_path)
    torch_text = (shipped / "torch.toml").read_text() + "\n# refreshed\n"
    assert write_refresh(overlay, _refresh(torch_text), source_dir=shipped)
    inode, mtime = os.stat(overlay).st_ino, os.stat(overlay / "torch.toml").st_mtime_ns
    assert write_refresh(overlay, _refresh(torch_text), source_dir=shipped) == []
    assert (os.stat(overlay).st_ino, os.stat(overlay / "torch.toml").st_mtime_ns) == (inode, mtime)
