"""`rocmkit doctor` end to end, as a user runs it: a real process, real checks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
FAKE = "tests.integration.doctor_fake_checks"


def _doctor(
    *args: str, extra_env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), **(extra_env or {})}
    return subprocess.run(
        [sys.executable, "-m", "rocmkit", "doctor", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=timeout,
        check=False,
    )


# Runs the CLI in this interpreter, then says whether torch or triton got imported: what makes
# level 0 fast is that it never imports them (timing belongs in benchmarks/, not in a test).
_IMPORTS_PROBE = """
import sys
from rocmkit.cli import main
try:
    main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
else:
    code = 0
heavy = sorted(m for m in ("torch", "triton") if m in sys.modules)
sys.stderr.write("HEAVY=" + ",".join(heavy) + "\\n")
sys.exit(code)
"""


def test_level0_imports_no_torch_and_writes_every_format(tmp_path: Path) -> None:
    junit, prom = tmp_path / "doctor.xml", tmp_path / "doctor.prom"
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORTS_PROBE, "doctor", "--level", "0", "--json",
         "--junit", str(junit), "--prom", str(prom)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert proc.returncode in (0, 2), proc.stderr
    assert "HEAVY=\n" in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    assert report["schema"] == "rocmkit.report/1"
    assert report["level"] == 0
    assert report["machine"]["schema"] == "rocmkit.machine/1"
    assert report["exit_code"] == proc.returncode
    names = [r["name"] for r in report["results"]]
    assert "env.hsa_override" in names and "triton.packages" in names
    assert all(r["level"] == 0 for r in report["results"])
    assert "[1/" in proc.stderr  # progress goes to stderr, never into the JSON
    root = ET.parse(junit).getroot()
    assert int(root.get("tests", "0")) == len(names)
    families = {f.name for f in text_string_to_metric_families(prom.read_text())}
    assert {"rocmkit_check_status", "rocmkit_check_duration_seconds", "rocmkit_doctor_verdict"} <= families


def test_crashing_hanging_raising_checks_through_the_cli(tmp_path: Path) -> None:
    proc = _doctor(
        "-v",  # the table of every result, the passing one too
        "--only",
        "fake.segfault",
        "--only",
        "fake.hang",
        "--only",
        "fake.raises",
        "--only",
        "fake.ok",
        "--junit",
        str(tmp_path / "j.xml"),
        extra_env={"ROCMKIT_DOCTOR_MODULES": FAKE},
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = {
        line.split()[1]: line for line in proc.stdout.splitlines() if line[:5].strip() in ("PASS", "ERROR")
    }
    assert lines["fake.segfault"].startswith("ERROR") and "SIGSEGV" in lines["fake.segfault"]
    assert lines["fake.hang"].startswith("ERROR") and "within 3 s" in lines["fake.hang"]
    assert lines["fake.raises"].startswith("ERROR") and "boom in the child" in lines["fake.raises"]
    assert lines["fake.ok"].startswith("PASS")
    assert "ERROR: 3 could not run, 1 passed (level 1; exit code 3)" in proc.stdout
    root = ET.parse(tmp_path / "j.xml").getroot()
    assert root.get("errors") == "3"


@pytest.mark.parametrize(("only", "code"), [("fake.ok", 0), ("fake.many", 2), ("fake.fail", 1)])
def test_exit_codes(only: str, code: int) -> None:
    proc = _doctor("--only", only, extra_env={"ROCMKIT_DOCTOR_MODULES": FAKE})
    assert proc.returncode == code, proc.stdout + proc.stderr


def test_list_and_capture(captures_dir: Path) -> None:
    proc = _doctor("--list")
    assert proc.returncode == 0
    assert "env.device_groups" in proc.stdout and "torch.arch_list" in proc.stdout
    capture = captures_dir / "ryzen2400g-gtx1050ti-centos7-rocm3.8-rock-not-loaded"
    proc = _doctor("--capture", str(capture), "--json")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    by_name = {r["name"]: r for r in report["results"]}
    assert by_name["env.amdgpu_driver"]["status"] == "fail"
    assert by_name["triton.packages"]["status"] == "skip"  # looks at this Python, not the capture
    assert report["machine"]["source"].startswith("capture:")
    assert report["hostname"] == capture.name  # never this host's name


def test_misspelt_set_key_is_warned_about(captures_dir: Path) -> None:
    capture = str(captures_dir / "mi250x-gfx90a-rocm6.2.1")
    proc = _doctor("--capture", capture, "--level", "0", "--set", "shm_min_byte=1")
    assert "warning: no check reads --set shm_min_byte" in proc.stderr
    proc = _doctor(
        "--capture", capture, "--level", "0", "--set", "shm_min_bytes=1", "--set", "models.repeat=3"
    )
    assert "warning" not in proc.stderr, proc.stderr


@pytest.mark.slow
def test_real_torch_and_triton_checks_in_children(tmp_path: Path) -> None:
    """torch and Triton imported for real, each in its own child, on this CPU."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    proc = _doctor(
        "--only",
        "torch.import",
        "--only",
        "torch.build",
        "--only",
        "triton.import",
        "--json",
        extra_env={"ROCMKIT_CACHE_DIR": str(tmp_path / "cache")},
        timeout=300,
    )
    report = json.loads(proc.stdout)
    by_name = {r["name"]: r for r in report["results"]}
    assert by_name["torch.import"]["status"] == "pass", by_name
    assert by_name["torch.build"]["status"] == "pass", by_name
    assert by_name["triton.import"]["status"] == "pass", by_name
    # A fork of the worker reports the worker's own torch import, not the fork's ~0 s.
    took = re.search(r"imports in ([0-9.]+) s", by_name["torch.import"]["message"])
    assert took is not None and float(took.group(1)) >= 0.1, by_name["torch.import"]["message"]
    import torch

    # Versions only an import can tell reach the report through the check's details.
    assert report["versions"]["torch"] == str(torch.__version__)
    assert report["versions"]["hip"] == torch.version.hip
    if report["machine"]["gpus"] == []:
        assert by_name["triton.import"]["backend"] == "cpu-interpreter"
        assert by_name["triton.import"]["details"]["interpreter"] is True
    assert proc.returncode == 0


def test_level_0_starts_no_python_child_and_no_worker(tmp_path: Path) -> None:
    """Level 0 reads the checked Python's facts here: the warm worker (which imports torch)
    and a spawned check are both a Python child, and none starts; the probes may run. The
    doctor's own process imports neither torch nor Triton."""
    code = (
        "import json, subprocess, sys\n"
        "started = []\n"
        "real = subprocess.Popen.__init__\n"
        "def spy(self, args, *a, **k):\n"
        "    started.append([str(x) for x in (args if isinstance(args, (list, tuple)) else [args])])\n"
        "    real(self, args, *a, **k)\n"
        "subprocess.Popen.__init__ = spy\n"
        "from rocmkit.cli import main\n"
        "try:\n"
        "    main(['doctor', '--level', '0', '--json'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "pythons = [a for a in started if a and 'python' in a[0].rsplit('/', 1)[-1]]\n"
        "heavy = sorted(m for m in ('torch', 'triton') if m in sys.modules)\n"
        "print('SEEN', json.dumps({'pythons': pythons, 'heavy': heavy}), file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "ROCMKIT_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    line = next(x for x in proc.stderr.splitlines() if x.startswith("SEEN "))
    assert json.loads(line[5:]) == {"pythons": [], "heavy": []}, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    by_name = {r["name"]: r for r in report["results"]}
    assert by_name["triton.packages"]["status"] in ("pass", "skip", "warn", "fail")
    assert by_name["torch.amdsmi"]["status"] in ("pass", "skip", "warn", "fail")


def test_device_smoke_helper_runs_for_real_on_the_cpu() -> None:
    """torch.device_smoke's measuring code, on the CPU device (the check itself needs a GPU)."""
    torch = pytest.importorskip("torch")
    from rocmkit.doctor.checks.torch_env import smoke_device

    seen = smoke_device(torch, "cpu", nbytes=2**20, n=96)
    assert seen["memory_ok"] is True
    assert seen["bytes"] == 2**20
    assert 0 <= seen["matmul_rel_error"] < 1e-5
