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


def _doctor(*args: str, cache: Path, as_json: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update({"PYTHONPATH": str(REPO), "ROCMKIT_CACHE_DIR": str(cache), "ROCMKIT_DOCTOR_MODULES": FAKE})
    return subprocess.run(
        [sys.executable, "-m", "rocmkit", "doctor", *args, *(["--json"] if as_json else [])],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_a_bare_venv_fails_torch_import_and_runs_children_there(tmp_path: Path) -> None:
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
    # Level 1 without torch is a finding, with the command that installs it into this venv.
    assert by["torch.import"]["status"] == "fail"
    assert by["torch.import"]["message"].startswith(f"torch is not installed in {venv / 'bin' / 'python'}")
    assert f"rocmkit install --venv {venv}" in by["torch.import"]["remedy"]
    # Read from the venv's metadata in a child there, not from rocmkit's own environment.
    assert by["triton.packages"]["status"] == "skip"
    assert report["versions"]["torch"] is None
    assert report["versions"]["python_executable"] == str(venv / "bin" / "python")
    assert "checking the Python at" in proc.stderr
    assert proc.returncode == 1


def test_a_bare_venv_at_level_0_is_no_failure_and_ends_with_a_next_step(tmp_path: Path) -> None:
    venv = _venv(tmp_path / "bare")
    python = str(venv / "bin" / "python")
    proc = _doctor("--python", python, "--level", "0", "--skip", "fake", cache=tmp_path / "c", as_json=False)
    # The environment checks may warn on some hosts (a small /dev/shm); nothing may fail.
    assert proc.returncode in (0, 2), proc.stdout
    verdict, hint = proc.stdout.rstrip().splitlines()[-2:]
    assert verdict.endswith(f"skipped (level 0; exit code {proc.returncode})"), verdict
    assert "every check" not in proc.stdout
    assert hint.startswith("next: ") and f"rocmkit install --venv {venv}" in hint


def test_torch_without_triton_warns_with_the_pin_read_from_the_venv(tmp_path: Path) -> None:
    venv = _venv(tmp_path / "no-triton")
    # Metadata is all the probe reads: a stand-in torch that pins a Triton, and no Triton.
    (site,) = (venv / "lib").glob("python3*/site-packages")
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text("")
    meta = site / "torch-2.5.1+rocm6.2.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1+rocm6.2\nRequires-Dist: filelock\n"
        'Requires-Dist: pytorch-triton-rocm==3.1.0; platform_system == "Linux"\n'
    )
    proc = _doctor("--venv", str(venv), "--only", "triton.import", cache=tmp_path / "c")
    (r,) = json.loads(proc.stdout)["results"]
    assert r["status"] == "warn", r
    assert f"{venv / 'bin' / 'python'} -m pip install 'pytorch-triton-rocm==3.1.0'" in r["remedy"]
    assert proc.returncode == 2


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


def test_a_python_that_cannot_run_is_one_line(tmp_path: Path) -> None:
    # (A folder that is no venv needs no process: tests/unit/test_cli_errors.py.)
    proc = _doctor("--python", str(tmp_path / "nope"), cache=tmp_path / "c")
    assert proc.returncode == 4 and "cannot run the Python to check" in proc.stderr
