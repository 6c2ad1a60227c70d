"""Bad input to every command: one line on stderr, its exit code, no traceback, and no process
started (this folder's guard fails a test that starts one). Run in this process through
Click's CliRunner (tests.support.cli); the end-to-end runs stay in tests/integration."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import CAPTURES, REPO
from tests.support.cli import rocmkit

# --- detect and snapshot -----------------------------------------------------------------------


def test_missing_capture_is_one_line_exit_4(tmp_path: Path) -> None:
    res = rocmkit("detect", "--capture", str(tmp_path / "nope"))
    assert res.code == 4
    assert "does not exist" in res.one_line_error()


def test_unreadable_capture_file_is_one_line_exit_4(tmp_path: Path) -> None:
    cap = tmp_path / "cap"
    (cap / "cmd" / "rocminfo.txt").mkdir(parents=True)  # a folder where a file should be
    res = rocmkit("detect", "--capture", str(cap))
    assert res.code == 4, res.stderr
    assert res.one_line_error().startswith("error: cannot ")


def test_corrupt_env_json_is_one_line_exit_4(tmp_path: Path) -> None:
    cap = tmp_path / "cap"
    (cap / "cmd").mkdir(parents=True)
    (cap / "env.json").write_text("{not json")
    res = rocmkit("detect", "--capture", str(cap))
    assert res.code == 4 and "env.json is not valid JSON" in res.one_line_error()


def test_bad_gfx_override_is_one_line_exit_4() -> None:
    res = rocmkit(
        "detect", "--capture", str(CAPTURES / "mi250x-gfx90a-rocm6.2.1"), env={"ROCMKIT_GFX": "navi31"}
    )
    assert res.code == 4 and "ROCMKIT_GFX" in res.one_line_error()


def test_unknown_option_is_exit_4() -> None:
    res = rocmkit("detect", "--frobnicate")
    # Click's own usage errors read like rocmkit's: what is wrong, then the fix.
    assert res.code == 4 and res.one_line_error() == (
        "error: no such option '--frobnicate'\nfix: rocmkit detect --help   # what it takes"
    )
    res = rocmkit("doctor", "--level", "9")
    assert res.code == 4 and res.one_line_error().startswith("error: invalid value for '--level' / '-l': 9")


def test_corrupt_matrix_is_one_line_exit_5(tmp_path: Path) -> None:
    matrices = tmp_path / "matrices"
    shutil.copytree(REPO / "matrices", matrices)
    (matrices / "gfx.toml").write_text("schema = 1\n[[pci]\nid = ")
    # rocm-smi shows only PCI ids here, so detection needs the PCI table.
    res = rocmkit(
        "detect",
        "--capture",
        str(CAPTURES / "mi300x8-rocm-smi-stas00"),
        env={"ROCMKIT_MATRICES_DIR": str(matrices)},
    )
    assert res.code == 5, res.stderr
    assert "gfx.toml" in res.one_line_error()


def test_snapshot_refuses_a_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("keep me")
    res = rocmkit("snapshot", str(tmp_path))
    assert res.code == 4 and "not empty" in res.one_line_error()
    assert (tmp_path / "x").read_text() == "keep me"


# --- doctor ------------------------------------------------------------------------------------


def test_doctor_unknown_check_names_the_fix() -> None:
    res = rocmkit("doctor", "--only", "no.such.check")
    assert res.code == 4
    line = res.one_line_error()
    assert line.startswith("error: no doctor check matches 'no.such.check'") and "--list" in line


def test_doctor_report_paths_that_cannot_be_written() -> None:
    res = rocmkit("doctor", "--prom", "/nonexistent-dir/x.prom")
    assert res.code == 4 and "does not exist" in res.stderr
    capture = str(CAPTURES / "mi250x-gfx90a-rocm6.2.1")  # a capture: the level-0 run starts no tool
    res = rocmkit(
        "doctor", "--capture", capture, "--level", "0", "--prom", "/proc/rocmkit-cannot-write-here.prom"
    )
    assert res.code == 4 and "Traceback" not in res.stderr
    # After the checks' progress lines, the error line and its fix.
    error, fix = res.stderr.strip().splitlines()[-2:]
    assert error.startswith("error: cannot write /proc/rocmkit-cannot-write-here.prom") and fix.startswith("fix: ")


def test_doctor_missing_capture_is_exit_4() -> None:
    res = rocmkit("doctor", "--capture", "/nonexistent-capture")
    assert res.code == 4 and res.one_line_error()


def test_doctor_folder_that_is_no_venv_is_one_line(tmp_path: Path) -> None:
    res = rocmkit("doctor", "--venv", str(tmp_path))
    assert res.code == 4 and "is not a virtual environment" in res.one_line_error()


# --- build -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--arch", "gfx1031", "--torch", "1.13"], 6, "no build recipe for torch 1.13"),
        (["--arch", "gfx10x", "--dry-run"], 4, "is not a gfx arch name"),
        (["--arch", "gfx1031", "--json", "--script"], 4, "--json and --script"),
        (["--arch", "gfx1031", "--capture", "/tmp", "--dry-run"], 4, "--arch and --capture"),
        (["--arch", "gfx1031", "--python", "/no/such/python", "--dry-run"], 4, "does not exist"),
    ],
)
def test_build_bad_input_is_one_line_with_an_exit_code(args: list[str], code: int, message: str) -> None:
    res = rocmkit("build", *args)
    assert res.code == code, res.stderr
    assert message in res.one_line_error()


# --- fleet -------------------------------------------------------------------------------------


def test_fleet_missing_and_corrupt_reports(tmp_path: Path) -> None:
    res = rocmkit("fleet", "summarize", str(tmp_path / "missing.json"))
    assert res.code == 4 and res.stdout == ""
    assert res.one_line_error() == (
        f"error: {tmp_path / 'missing.json'} does not exist\n"
        "fix: pass report files or folders written by `rocmkit doctor --json`"
    )
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    res = rocmkit("fleet", "summarize", str(bad))
    assert res.code == 5 and "is not valid JSON" in res.one_line_error()
