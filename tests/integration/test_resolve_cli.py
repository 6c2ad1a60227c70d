"""`rocmkit resolve` as users run it: a real process, on a capture, without importing torch."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import CAPTURES, REPO

pytestmark = pytest.mark.integration

PROBE = """
import json, sys
from rocmkit.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert not exc.code, exc.code
heavy = sorted(m for m in ("torch", "triton", "numpy") if m in sys.modules)
print(json.dumps({"heavy": heavy}), file=sys.stderr)
"""


def test_resolve_json_in_a_fresh_process_imports_no_torch() -> None:
    cap = CAPTURES / "rx6800m-gfx1031-gfx90c-fedora-rocm6.3"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "resolve", "--capture", str(cap), "--json", "--python", "3.11"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["backend"].startswith("rocm") and plan["env"]["HIP_VISIBLE_DEVICES"] == "0"
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == {"heavy": []}


def test_resolve_live_on_this_machine_gives_a_plan() -> None:
    # This CI machine has no GPU: the live path must still produce CPU wheels, for real.
    proc = subprocess.run(
        [sys.executable, "-m", "rocmkit", "resolve", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["schema"] == "rocmkit.plan/1" and plan["requirements"]
