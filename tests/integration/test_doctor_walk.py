"""What a doctor run loads of install: journal recovery (install/recover.py) and nothing of the flow.

A process of its own, so ``sys.modules`` holds only what that one call imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_recovery_without_a_journal_loads_nothing_of_the_flow(tmp_path: Path) -> None:
    # What runs, not just what is named: with no journal the check is one lstat, and neither the
    # flow nor an installer (uv, pip) nor the restore is imported.
    code = (
        "import sys; from pathlib import Path; from rocmkit.install.recover import recover_for_python\n"
        f"assert recover_for_python(Path({str(tmp_path / 'bin' / 'python')!r}), print) is False\n"
        "print(sorted(m for m in sys.modules if m.startswith('rocmkit.install')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["['rocmkit.install',", "'rocmkit.install.journal',", "'rocmkit.install.recover',",
        "'rocmkit.install.state']"]
