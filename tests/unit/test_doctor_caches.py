"""env.caches on real folders: a tmpfs, a per-job folder, one owned by another user, one others can write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocmkit.doctor.checks.caches import caches, fs_type
from rocmkit.doctor.registry import CheckContext
from rocmkit.doctor.result import CheckResult, Status
from rocmkit.machine import Machine

VARS = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "MIOPEN_CUSTOM_CACHE_DIR", "MIOPEN_USER_DB_PATH")


def _private(path: Path) -> str:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    return str(path)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A job environment whose four caches are private folders a job would keep."""
    for var in (*VARS, "TRITON_HOME", "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "JOB_ID", "FLUX_JOB_ID"):
        monkeypatch.delenv(var, raising=False)
    tmp_path.chmod(0o700)
    for var in VARS:
        monkeypatch.setenv(var, _private(tmp_path / var.lower()))
    monkeypatch.setenv("HOME", _private(tmp_path / "home"))
    return tmp_path


def _run(**options: object) -> CheckResult:
    r = caches(CheckContext(machine=Machine(), cache_dir=Path("."), options=dict(options)))
    assert isinstance(r, CheckResult)
    return r


def test_private_configured_caches_pass_with_sizes_and_free_space(home: Path) -> None:
    (home / "triton_cache_dir" / "k.so").write_bytes(b"x" * 4096)
    r = _run()
    assert r.status is Status.PASS, r.message
    by = {f["name"]: f for f in r.details["caches"]}
    assert by["triton"]["size_bytes"] == 4096 and by["triton"]["configured"]
    assert {f.name for f in r.figures} >= {"triton.size", "triton.free", "inductor.free"}


def test_the_default_inductor_cache_on_a_tmpfs_warns(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shm = Path("/dev/shm")
    if fs_type(shm, Path("/proc/self/mounts").read_text())[0] != "tmpfs":
        pytest.skip("/dev/shm is not a tmpfs here")
    job_tmp = shm / f"rocmkit-test-{os.getpid()}"
    job_tmp.mkdir(mode=0o700)
    try:
        monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
        monkeypatch.setenv("TMPDIR", str(job_tmp))
        r = _run()
    finally:
        job_tmp.rmdir()
    assert r.status is Status.WARN
    assert "inductor cache" in r.message and "is on tmpfs (/dev/shm)" in r.message
    assert r.remedy is not None and "export TORCHINDUCTOR_CACHE_DIR=" in r.remedy and "--warm-caches" in r.remedy


def test_a_per_job_folder_warns(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "90210")
    monkeypatch.delenv("TRITON_CACHE_DIR")
    monkeypatch.setenv("TRITON_HOME", _private(home / "scratch-90210"))
    r = _run()
    assert r.status is Status.WARN and "in a per-job folder (job 90210)" in r.message


def test_a_configured_volatile_folder_is_a_note_not_a_warning(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "90210")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", _private(home / "job-90210-inductor"))
    r = _run()
    assert r.status is Status.PASS, r.message
    (ind,) = [f for f in r.details["caches"] if f["name"] == "inductor"]
    assert "as configured" in ind["note"]


def test_a_cache_others_can_write_fails(home: Path) -> None:
    shared = home / "triton_cache_dir"
    shared.chmod(0o777)
    r = _run()
    assert r.status is Status.FAIL
    assert f"triton cache {shared}" in r.message and "writable by group and others (mode 0777)" in r.message


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_cache_owned_by_another_user_fails(home: Path) -> None:
    theirs = home / "miopen_user_db_path"
    os.chown(theirs, 65534, 65534)
    theirs.chmod(0o755)
    r = _run()
    assert r.status is Status.FAIL
    assert f"miopen user db cache {theirs}" in r.message and "owned by uid 65534" in r.message


def test_too_little_free_space_warns(home: Path) -> None:
    r = _run(cache_min_free_bytes=1 << 62)
    assert r.status is Status.WARN and "GiB free" in r.message


def test_mount_points_with_escaped_spaces() -> None:
    mounts = "/dev/vda / ext4 rw 0 0\ntmpfs /mnt/my\\040cache tmpfs rw 0 0\n"
    assert fs_type(Path("/mnt/my cache/triton"), mounts) == ("tmpfs", "/mnt/my cache")
    assert fs_type(Path("/mnt/other"), mounts) == ("ext4", "/")


def test_an_nvidia_node_is_not_asked_about_miopen(home: Path) -> None:
    from rocmkit.machine import Gpu

    nvidia = Machine(gpus=(Gpu(vendor="nvidia", index=0, name="NVIDIA H100 80GB HBM3"),))
    r = caches(CheckContext(machine=nvidia, backend="cuda", cache_dir=Path(".")))
    assert isinstance(r, CheckResult)
    assert [f["name"] for f in r.details["caches"]] == ["triton", "inductor"]


def test_the_default_inductor_cache_in_a_disk_backed_temp_folder_passes_with_a_note(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stock node: inductor's default cache under a temp folder on disk. Jobs reuse it until a
    # reboot, so it is said, not warned about (a warning here would fail every stock onboarding).
    disk_tmp = home / "tmp"
    disk_tmp.mkdir(mode=0o700)
    if fs_type(disk_tmp, Path("/proc/self/mounts").read_text())[0] in ("tmpfs", "ramfs"):
        pytest.skip("the test folder is on a tmpfs here")
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    monkeypatch.setenv("TMPDIR", str(disk_tmp))
    monkeypatch.setattr("tempfile.tempdir", None)
    r = _run()
    by = {f["name"]: f for f in r.details["caches"]}
    if not by["inductor"]["path"].startswith(str(disk_tmp)):
        pytest.skip("inductor's default cache is not under TMPDIR in this torch-less process")
    assert r.status is Status.PASS, r.message
    assert "inductor: in the temp folder" in r.message and "on disk: kept across jobs" in r.message
