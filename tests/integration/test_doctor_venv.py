"""`rocmkit doctor --venv V`: checks run with V's interpreter, and needs and versions come from V."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
FAKE = "tests.integration.doctor_fake_checks"


def _venv(path: Path, borrow_site_packages: bool = False) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    if borrow_site_packages:
        # A distinct environment (its own prefix) that can still import this one's torch.
        (site,) = (path / "lib").glob("python3*/site-packages")
        (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return path


def _doctor(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update({"PYTHONPATH": str(REPO), "ROCMKIT_CACHE_DIR": str(cache), "ROCMKIT_DOCTOR_MODULES": FAKE})
    return subprocess.run(
        [sys.executable, "-m", "rocmkit", "doctor", *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_a_bare_venv_skips_torch_checks_and_runs_children_there(tmp_path: Path) -> None:
    venv = _venv(tmp_path / "bare")
    proc = _doctor(
        "--venv",
        str(venv),
        "--only",
        "fake.ok",
        "--only",
        "torch.import",
        "--only",
        "triton.packages",
        cache=tmp_path / "c",
    )
    report = json.loads(proc.stdout)
    by = {r["name"]: r for r in report["results"]}
    assert os.path.realpath(by["fake.ok"]["details"]["prefix"]) == os.path.realpath(venv)
    assert by["torch.import"]["status"] == "skip"
    assert (
        by["torch.import"]["message"] == f"needs torch, which is not installed in {venv / 'bin' / 'python'}"
    )
    # Read from the venv's metadata in a child there, not from rocmkit's own environment.
    assert by["triton.packages"]["status"] == "skip"
    assert report["versions"]["torch"] is None
    assert report["versions"]["python_executable"] == str(venv / "bin" / "python")
    assert "checking the Python at" in proc.stderr
    assert proc.returncode == 0


@pytest.mark.slow
def test_torch_is_imported_in_the_checked_venv(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    venv = _venv(tmp_path / "borrowing", borrow_site_packages=True)
    proc = _doctor("--venv", str(venv), "--only", "torch.import", "--only", "fake.ok", cache=tmp_path / "c")
    report = json.loads(proc.stdout)
    by = {r["name"]: r for r in report["results"]}
    assert by["torch.import"]["status"] == "pass", by["torch.import"]
    assert os.path.realpath(by["fake.ok"]["details"]["prefix"]) == os.path.realpath(venv)
    assert report["versions"]["torch"] is not None


def test_bad_venv_is_one_line(tmp_path: Path) -> None:
    proc = _doctor("--venv", str(tmp_path), cache=tmp_path / "c")
    assert proc.returncode == 4
    assert proc.stderr.startswith("error: ") and "is not a virtual environment" in proc.stderr
    proc = _doctor("--python", str(tmp_path / "nope"), cache=tmp_path / "c")
    assert proc.returncode == 4 and "cannot run the Python to check" in proc.stderr
