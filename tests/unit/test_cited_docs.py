"""Every document the code and the data cite ships with a clone: docs/, never ../shared."""

from __future__ import annotations

import re
from pathlib import Path

import rocmkit

REPO = Path(rocmkit.__file__).resolve().parents[1]
# rocmkit's own docs/NAME.md, not a path inside an upstream URL (".../blob/REV/docs/x.md").
_CITED = re.compile(r"(?<![/\w.-])docs/([\w.-]+\.md)")


def _texts() -> list[tuple[Path, str]]:
    files = [*(REPO / "rocmkit").rglob("*.py"), *(REPO / "matrices").glob("*")]
    return [(p, p.read_text(encoding="utf-8")) for p in files if p.is_file()]


def test_no_paths_outside_the_repository() -> None:
    bad = [str(p.relative_to(REPO)) for p, text in _texts() if "../shared" in text or "shared/docs" in text]
    assert bad == []


def test_every_cited_doc_exists() -> None:
    cited = {name for _, text in _texts() for name in _CITED.findall(text)}
    assert {"failure-modes.md", "observed-pins.md", "captures.md"} <= cited
    missing = sorted(name for name in cited if not (REPO / "docs" / name).is_file())
    assert missing == []


def test_failure_modes_are_numbered_as_cited() -> None:
    text = (REPO / "docs" / "failure-modes.md").read_text(encoding="utf-8")
    rows = [int(m) for m in re.findall(r"^\| (\d+) \|", text, flags=re.M)]
    assert rows == list(range(1, len(rows) + 1)) and len(rows) >= 28
