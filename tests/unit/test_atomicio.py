from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocmkit.util import atomicio


def test_replaces_content_and_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    target.write_text("old")
    os.chmod(target, 0o640)
    atomicio.write_text_atomic(target, "new")
    assert target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_failure_leaves_the_old_file_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "lock.toml"
    target.write_text("kept")

    def boom(src: str, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(atomicio.os, "replace", boom)  # type: ignore[attr-defined]
    with pytest.raises(OSError):
        atomicio.write_text_atomic(target, "lost")
    assert target.read_text() == "kept"
    assert [p.name for p in tmp_path.iterdir()] == ["lock.toml"]
