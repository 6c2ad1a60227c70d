"""`rocmkit doctor --output FILE`: the report written whole, or no file at all (a failed
`> FILE` redirect leaves an empty one)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import DATA
from tests.support.cli import rocmkit

CAPTURE = str(DATA / "captures" / "mi250x-gfx90a-rocm6.2.1")  # level 0 on a capture starts no tool


def test_the_report_goes_to_the_file_not_stdout(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    res = rocmkit("doctor", "--capture", CAPTURE, "--level", "0", "--json", "--output", str(out))
    assert res.code in (0, 1, 2), res.stderr
    assert res.stdout == "" and f"wrote {out}" in res.stderr
    assert json.loads(out.read_text())["schema"] == "rocmkit.report/1"


def test_a_report_that_cannot_be_written_leaves_no_file(tmp_path: Path) -> None:
    out = tmp_path / "no-such-folder" / "report.json"
    res = rocmkit("doctor", "--capture", CAPTURE, "--level", "0", "--json", "--output", str(out))
    assert res.code == 4 and "does not exist" in res.one_line_error()
    assert not out.parent.exists()
