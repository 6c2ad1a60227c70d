"""One TIMM model for real on this CPU, trained under torch.compile in .venv-timm.

A file of its own (it was in test_bench_suites.py): the suite's workers take whole files
(--dist loadfile), and this compile and the HF run were the two longest in one file, so one
worker ran them back to back while the others waited at the end of the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.engines import skip_or_fail

pytestmark = pytest.mark.integration

# The Python whose timm imports: scripts/test.sh makes .venv-timm (torch 2.13.0+cpu, PyPI's
# torchvision 0.28.0 and timm; tests/support/timm_env says why torchvision needs a hand there);
# TIMM_TEST_PYTHON names another (not ROCMKIT_*: the test fixtures clear those).
TIMM_PYTHON_ENV = "TIMM_TEST_PYTHON"
TIMM_VENV = Path(__file__).resolve().parents[2] / ".venv-timm"


def _timm_python() -> tuple[str, str | None]:
    made = TIMM_VENV / "bin" / "python"
    python = os.environ.get(TIMM_PYTHON_ENV) or (str(made) if made.exists() else sys.executable)
    proc = subprocess.run(
        [python, "-c", "import timm"], capture_output=True, text=True, timeout=300, check=False
    )
    if proc.returncode == 0:
        return python, None
    last = (proc.stderr.strip().splitlines() or ["?"])[-1]
    return python, (
        f"timm does not import in {python} ({last[:160]}); scripts/test.sh makes .venv-timm where it "
        f"does, or set {TIMM_PYTHON_ENV} to a Python that has it"
    )


@pytest.mark.slow
def test_one_timm_model_for_real() -> None:
    python, why = _timm_python()
    if why:
        skip_or_fail(why)
    # rocmkit runs here; the model runs in the TIMM Python (`bench models --python`, as the
    # doctor and install take it), which needs torch and timm but not rocmkit's dependencies.
    proc = subprocess.run(
        [sys.executable, "-m", "rocmkit", "bench", "models", "--suite", "timm", "--device", "cpu", "--models",
         "mobilenetv2_100", "--repeat", "3", "--threads", "1", "--mode", "train", "--json", "--python", python],
        capture_output=True, text=True, timeout=1500, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (m,) = json.loads(proc.stdout)["models"]
    assert m["status"] == "pass" and m["impl"].startswith("timm ") and m["accuracy"]["ok"]
    assert m["batch_size"] == 2 and m["accuracy"]["tolerance"] == 1e-2  # training
    if python != sys.executable:
        assert f"measuring the Python at {python}" in proc.stderr
