"""The red team's list (issue 27, points 7 and 10): each bad input is one line on stderr,
the README's exit code and no traceback; each wrong answer is refused or said as it is.

All of these fail before rocmkit starts a process (the unit guard proves it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rocmkit.bench import runlog
from rocmkit.bench.suite import SuiteOptions, run_suite
from rocmkit.errors import DataError, UsageError
from rocmkit.matrix.upstream import testinfra, therock
from tests.conftest import DATA
from tests.support.cli import rocmkit
from tests.unit.test_bench_suite import FakeChildren

RECORDING = DATA / "upstream"
BUILD_MATRIX = next((RECORDING / "test-infra").glob("2026-06-17_*")) / testinfra.BUILD_MATRIX_PATH
ROCK_MATRIX = next((RECORDING / "therock").glob("*")) / therock.RELEASE_MATRIX_PATH


def _one_line(*args: str, code: int = 4, env: dict[str, str | None] | None = None) -> str:
    res = rocmkit(*args, env=env)
    assert res.code == code, (res.code, res.stderr)
    return res.one_line_error()


# -- point 7: no injection through option values ------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("slurm", "config", "--node-state", "ANY\nPrologFlags=Alloc"),
        ("slurm", "config", "--node-state", "ANY,CYCLE=x"),
        ("slurm", "config", "--dir", "/etc/slurm\nProlog=/tmp/evil"),
        ("slurm", "healthcheck", "--node", "n0\nNodeName=n1 State=IDLE", "--no-drain"),
        ("slurm", "prolog", "--node", "n0=x"),
    ],
)
def test_a_line_break_or_equals_in_a_slurm_value_is_a_usage_error(args: tuple[str, ...]) -> None:
    line = _one_line(*args)
    assert "it must be one Slurm value" in line


def test_a_check_name_never_reaches_scontrol_with_a_line_break(tmp_path: Path) -> None:
    from rocmkit.slurm.scontrol import Scontrol

    tool = tmp_path / "scontrol"
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    control = Scontrol(str(tool))
    # Names from a --report file or a site check: refused before scontrol runs (no process here).
    with pytest.raises(UsageError, match="drain reason"):
        control.drain("n0", "rocmkit: env.x\nNodeName=n1 Reason=y")
    with pytest.raises(UsageError, match="drain reason"):
        control.drain("n0", "rocmkit: a=b")
    with pytest.raises(UsageError, match="node name"):
        control.resume("n0\nn1")


def test_a_check_registered_under_a_name_with_a_line_break_is_refused() -> None:
    from rocmkit.doctor.registry import check

    with pytest.raises(ValueError, match="is not letters"):
        check("site.bad\nNodeName=n1", level=0, description="x")


# -- point 10: tracebacks ------------------------------------------------------------------


def test_matrix_refresh_index_that_is_not_a_url() -> None:
    assert "--index 'notaurl' is not a URL" in _one_line("matrix", "refresh", "--index", "notaurl")


@pytest.mark.parametrize("base", ["https://mirror example/whl", "https://mirror.example/whl\nx", "https://"])
def test_index_base_with_spaces_or_line_breaks(base: str) -> None:
    line = _one_line("resolve", "--offline", "--index-base", base)
    assert "--index-base" in line
    line = _one_line("resolve", "--offline", env={"ROCMKIT_INDEX_BASE": base})
    assert "index-base" in line or "ROCMKIT_INDEX_BASE" in line


def test_a_test_infra_arch_that_is_not_a_number() -> None:
    text = BUILD_MATRIX.read_text()
    assert testinfra.read_build_matrix(text).channels["release"].cuda
    bad = text.replace('"release": ["12.6", "13.0", "13.2"]', '"release": ["12.6", "abc", "13.2"]')
    assert bad != text
    with pytest.raises(DataError, match="'abc', which is not a version"):
        testinfra.read_build_matrix(bad)
    bad_rocm = text.replace('"release": ["7.1", "7.2"]', '"release": ["7.1", "7.x"]')
    with pytest.raises(DataError, match=r"'7\.x'"):
        testinfra.read_build_matrix(bad_rocm)


def test_a_test_infra_arch_that_is_not_a_number_in_the_cli(tmp_path: Path) -> None:
    recording = tmp_path / "upstream"
    shutil.copytree(RECORDING, recording)
    folder = tmp_path / "matrices"
    shutil.copytree(DATA.parent.parent / "matrices", folder)
    # The newest revision (the channels' current lists): a word where a CUDA version goes.
    newest = sorted((recording / "test-infra").glob(f"*/{testinfra.BUILD_MATRIX_PATH}"))[-1]
    text = newest.read_text()
    newest.write_text(text.replace('"release": ["12.6", "13.0", "13.2"]', '"release": ["12.6", "thirteen", "13.2"]'))
    line = _one_line(
        "matrix", "refresh", "--write", "--dry-run", "--from", str(recording), "--dir", str(folder), code=5
    )
    assert "CUDA_ARCHES_DICT['release'] holds 'thirteen', which is not a version" in line


def test_a_therock_configure_file_that_is_not_python(tmp_path: Path) -> None:
    recording = tmp_path / "upstream"
    shutil.copytree(RECORDING, recording)
    folder = tmp_path / "matrices"
    shutil.copytree(DATA.parent.parent / "matrices", folder)
    target = recording / ROCK_MATRIX.relative_to(RECORDING)
    target.write_text(target.read_text() + "\ndef (:\n")
    line = _one_line(
        "matrix", "refresh", "--write", "--dry-run", "--from", str(recording), "--dir", str(folder), code=5
    )
    assert "configure_pytorch_release_matrix.py: not valid Python" in line
    with pytest.raises(DataError, match="not a list of Python versions"):
        therock.release_pythons('RELEASE_PYTHON_VERSIONS = ["3.x"]\n')


def _results(tmp_path: Path) -> Path:
    results = tmp_path / "run.jsonl"
    run_suite(SuiteOptions(cache_dir=tmp_path, results=results), environ={}, runner=FakeChildren())
    return results


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda row: row.update(speedup="fast"), "speedup 'fast' is not a number"),
        (lambda row: row.pop("name"), "has no model name"),
        (lambda row: row.update(repeat=2.5), "repeat 2.5 is not an integer"),
        (lambda row: row.update(eager_spread={"q1": "x"}), "q1 'x' is not a number"),
    ],
)
def test_bench_rows_with_bad_fields(tmp_path: Path, edit: object, says: str) -> None:
    results = _results(tmp_path)
    lines = results.read_text().splitlines()
    record = json.loads(lines[2])
    edit(record["row"])  # type: ignore[operator]
    lines[2] = json.dumps(record)
    results.write_text("\n".join(lines) + "\n")
    line = _one_line("bench", "merge", str(results), "--json", code=5)
    assert says in line


def test_a_rows_header_without_device(tmp_path: Path) -> None:
    results = _results(tmp_path)
    lines = results.read_text().splitlines()
    header = json.loads(lines[0])
    del header["device"]
    lines[0] = json.dumps(header)
    results.write_text("\n".join(lines) + "\n")
    assert "header line has no device" in _one_line("bench", "merge", str(results), "--json", code=5)
    log = runlog.read(results)
    with pytest.raises(DataError, match="no device"):
        runlog.to_suite(log.header, log.rows)


# -- point 10: wrong answers ---------------------------------------------------------------


def test_doctor_timeout_scale_nan() -> None:
    assert "--timeout-scale nan is not a positive number" in _one_line("doctor", "--timeout-scale", "nan")


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("shm_min_bytes=abc", "--set shm_min_bytes='abc' is not a positive integer"),
        ("cache_min_free_bytes=-1", "--set cache_min_free_bytes=-1 is not a positive integer"),
        ("smoke_rel_tolerance=2", "--set smoke_rel_tolerance=2 is not a number between 0 and 1"),
    ],
)
def test_doctor_set_values_of_the_wrong_kind_are_usage_errors(setting: str, says: str) -> None:
    assert says in _one_line("doctor", "--level", "0", "--set", setting)


@pytest.mark.parametrize(
    ("venv", "says"),
    [("/proc/rocmkit-venv", "under /proc, a kernel file system"), ("/sys/x/y", "under /sys")],
)
def test_install_dry_run_venv_where_none_can_be(venv: str, says: str) -> None:
    assert says in _one_line("install", "--dry-run", "--cpu", "--venv", venv)


def test_install_dry_run_venv_that_is_a_file(tmp_path: Path) -> None:
    file = tmp_path / "afile"
    file.write_text("")
    assert "is a file, not a folder" in _one_line("install", "--dry-run", "--cpu", "--venv", str(file))
    assert "is a file, not a folder" in _one_line("install", "--dry-run", "--cpu", "--venv", str(file / "v"))


@pytest.mark.parametrize(
    ("python", "says"),
    [("/nonexistent/python3", "no Python interpreter there"), ("2.0", "neither a path nor a Python 3 version")],
)
def test_install_base_python_that_cannot_be(python: str, says: str, tmp_path: Path) -> None:
    line = _one_line("install", "--dry-run", "--cpu", "--venv", str(tmp_path / "v"), "--python", python)
    assert says in line


@pytest.mark.parametrize(
    ("arch", "says"),
    [("gfx9999", "is not a GPU arch rocmkit knows"), ("sm_999", "is not a compute capability"), ("", "is empty")],
)
def test_build_dry_run_for_an_arch_no_gpu_has(arch: str, says: str) -> None:
    assert says in _one_line("build", "--dry-run", "--arch", arch)


def test_rocmkit_gfx_that_names_no_target() -> None:
    from rocmkit.detect.overrides import parse_overrides

    with pytest.raises(UsageError, match="names no gfx target"):
        parse_overrides({"ROCMKIT_GFX": ",,,"})
    assert parse_overrides({"ROCMKIT_GFX": ""}).gfx == ()


def test_an_overlay_from_an_older_rocmkit_never_shadows_newer_shipped_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    import rocmkit
    from rocmkit.util.paths import OVERLAY_STAMP, overlay_is_newer

    shipped, overlay = tmp_path / "shipped", tmp_path / "overlay"
    for folder in (shipped, overlay):
        folder.mkdir()
        (folder / "torch.toml").write_text("schema = 1\n")
    # The overlay's files are newer on disk (as after a package manager kept old times).
    os.utime(shipped / "torch.toml", (1_000_000, 1_000_000))
    assert not overlay_is_newer(overlay, shipped)  # no stamp: written before stamps, so older
    monkeypatch.setattr(rocmkit, "__version__", "0.3.0")
    (overlay / OVERLAY_STAMP).write_text("0.2.9\n")
    assert not overlay_is_newer(overlay, shipped)  # an older rocmkit's refresh: the upgrade wins
    (overlay / OVERLAY_STAMP).write_text("0.10.0\n")
    assert overlay_is_newer(overlay, shipped)  # a newer rocmkit's: it wins (0.10 > 0.3, not as text)
    (overlay / OVERLAY_STAMP).write_text("0.3.0\n")
    assert overlay_is_newer(overlay, shipped)  # this rocmkit's, after its data was installed
    os.utime(overlay / "torch.toml", (500_000, 500_000))
    assert not overlay_is_newer(overlay, shipped)


def test_an_overlay_another_user_could_write_never_chooses_roots_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The matrices say which index and builds to install: an overlay in a folder others can
    write (a user's XDG_DATA_HOME kept by `sudo -E`, a shared ROCMKIT_DATA_DIR) is not used,
    however new its stamp, and `matrix show` says why. A FIFO for a stamp blocks nothing."""
    import os

    from rocmkit.util import paths
    from rocmkit.util.paths import OVERLAY_STAMP, matrices_dir, matrices_origin, overlay_is_newer

    shipped = paths.shipped_matrices_dir()
    data = tmp_path / "data"
    overlay = data / "matrices"
    overlay.mkdir(parents=True)
    (overlay / "torch.toml").write_text("schema = 1\n")
    (overlay / OVERLAY_STAMP).write_text("999.0.0\n")
    monkeypatch.setenv("ROCMKIT_DATA_DIR", str(data))
    monkeypatch.delenv("ROCMKIT_MATRICES_DIR", raising=False)
    matrices_dir.cache_clear()
    try:
        assert overlay_is_newer(overlay, shipped)  # safe: it wins (a newer rocmkit wrote it)
        os.chmod(data, 0o777)  # anyone may rename the overlay away and put their own in
        assert not overlay_is_newer(overlay, shipped)
        matrices_dir.cache_clear()
        assert matrices_dir() == shipped
        assert "is not used" in matrices_origin() and "writable by" in matrices_origin()
        os.chmod(data, 0o755)
        os.chmod(overlay / "torch.toml", 0o666)
        assert not overlay_is_newer(overlay, shipped)
        os.chmod(overlay / "torch.toml", 0o644)
        (overlay / OVERLAY_STAMP).unlink()
        os.mkfifo(overlay / OVERLAY_STAMP)
        assert not overlay_is_newer(overlay, shipped)  # returns at once: no writer needed
    finally:
        matrices_dir.cache_clear()
