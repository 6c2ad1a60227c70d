"""`rocmkit doctor --format npd`: node-problem-detector's custom-plugin protocol, on real captures."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.doctor.reporters import npd
from rocmkit.doctor.result import CheckResult, Report, Status
from tests.support.cli import rocmkit

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"


def _report(*results: CheckResult) -> Report:
    return Report(machine={}, plan=None, results=results, versions={}, started_at="", finished_at="",
                  host_id="n1-x", hostname="n1", level=1)


def _r(name: str, status: Status, message: str = "m") -> CheckResult:
    return CheckResult(name=name, level=0, status=status, message=message)


def test_codes_follow_npd_ok_nonok_unknown() -> None:
    assert npd.status(_report(_r("a", Status.PASS), _r("b", Status.SKIP)))[0] == npd.OK
    assert npd.status(_report(_r("a", Status.FAIL), _r("b", Status.ERROR)))[0] == npd.NON_OK
    assert npd.status(_report(_r("a", Status.PASS), _r("b", Status.ERROR)))[0] == npd.UNKNOWN
    code, line = npd.status(_report(_r("a", Status.WARN, "slow")))
    assert code == npd.OK and "1 warning(s): a" in line
    assert npd.status(_report(_r("a", Status.WARN)), strict=True)[0] == npd.NON_OK


def test_the_status_line_is_one_line_of_at_most_80_characters() -> None:
    long = "x" * 300 + "\nsecond line"
    code, line = npd.status(_report(_r("env.device_nodes", Status.FAIL, long), _r("env.shm", Status.FAIL)))
    assert code == npd.NON_OK
    assert len(line) <= 80 and "\n" not in line and line.endswith("...")
    assert line.startswith("env.device_nodes (+1): ")


@pytest.mark.parametrize(
    ("capture", "code", "start"),
    [
        ("rx9070xt-igpu-popos-rocm7.2.1-kfd-permission-denied", 1, "env.device_nodes: "),
        ("mi210x2-gfx90a-rocm6.3.3", 0, "rocmkit level 0: "),
    ],
)
def test_the_cli_on_real_captures(capture: str, code: int, start: str, tmp_path: Path) -> None:
    res = rocmkit("doctor", "--level", "0", "--format", "npd", "--capture", str(CAPTURES / capture),
                  env={"ROCMKIT_CACHE_DIR": str(tmp_path)})
    assert res.code == code, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 1 and len(lines[0]) <= 80 and lines[0].startswith(start)


def test_rocmkit_unable_to_judge_is_unknown_not_a_traceback(tmp_path: Path) -> None:
    res = rocmkit("doctor", "--level", "0", "--format", "npd", "--capture", str(tmp_path / "missing"),
                  env={"ROCMKIT_CACHE_DIR": str(tmp_path)})
    assert res.code == npd.UNKNOWN
    assert res.stdout.startswith("rocmkit could not run: ") and len(res.stdout.strip()) <= 80
    assert "Traceback" not in res.stderr


def test_strict_turns_warnings_into_a_failure_exit(tmp_path: Path) -> None:
    # This capture's iGPU is visible next to the discrete GPU: a warning, so exit 2; --strict makes it 1.
    capture = str(CAPTURES / "rx9070xt-igpu-popos-rocm7.2.1-kfd-permission-denied")
    plain = rocmkit("doctor", "--level", "0", "--only", "env.igpu", "--capture", capture,
                    env={"ROCMKIT_CACHE_DIR": str(tmp_path)})
    strict = rocmkit("doctor", "--level", "0", "--only", "env.igpu", "--strict", "--capture", capture,
                     env={"ROCMKIT_CACHE_DIR": str(tmp_path)})
    assert (plain.code, strict.code) == (2, 1), plain.stdout
