"""Untrusted folders are not trusted (issue 27, point 4): a cache folder another user owns, or
can write (group/world-writable without the sticky bit, here or in a folder above), is never
loaded from (detection and plan entries, replayed output, compiled matrices, index pages,
Triton and inductor compile caches); caches are written 0600 in 0700 folders; appends never
follow a symlink; `slurm config --write` refuses a folder another user can write.

"Another user" is uid 65534 (nobody): the tests run as root here, and chown needs root."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path

import pytest

from rocmkit.cache import detect_cache, output_cache
from rocmkit.doctor.checks import env
from rocmkit.doctor.registry import CheckContext
from rocmkit.doctor.result import Status
from rocmkit.errors import UntrustedError
from rocmkit.machine import Host, Machine
from rocmkit.util import trust
from tests.support.cli import rocmkit

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="making a folder another user's needs root (chown)")
needs_boot_id = pytest.mark.skipif(
    not Path("/proc/sys/kernel/random/boot_id").exists(), reason="no boot id on this system"
)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_folder(tmp_path: Path) -> Path:
    """A folder anyone can write (mode 0777, no sticky bit)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o777)
    return folder


def test_the_folder_rule(tmp_path: Path, open_folder: Path) -> None:
    assert trust.folder_problem(tmp_path) is None
    assert trust.folder_problem(tmp_path / "not" / "yet") is None  # made later, privately
    assert "writable by group and others (mode 0777)" in (trust.folder_problem(open_folder) or "")
    os.chmod(open_folder, 0o1777)  # sticky, like /tmp: others cannot rename or remove ours
    assert trust.folder_problem(open_folder) is None
    os.chmod(open_folder, 0o775)
    assert "writable by its group" in (trust.folder_problem(open_folder) or "")
    os.chmod(open_folder, 0o777)
    inner = open_folder / "cache"
    inner.mkdir(mode=0o700)
    assert "a folder above it" in (trust.folder_problem(inner) or "")  # it could be swapped away


@needs_root
def test_a_folder_another_user_owns_is_not_trusted(tmp_path: Path) -> None:
    folder = tmp_path / "theirs"
    folder.mkdir(mode=0o755)
    os.chown(folder, 65534, 65534)
    assert "owned by uid 65534" in (trust.folder_problem(folder) or "")
    # A symlink of ours to their folder: the folder it leads to counts.
    link = tmp_path / "link"
    link.symlink_to(folder)
    assert "owned by uid 65534" in (trust.folder_problem(link) or "")


def test_a_file_is_read_back_only_when_it_is_a_plain_file_nobody_else_can_write(tmp_path: Path) -> None:
    good = tmp_path / "entry.json"
    good.write_text("{}")
    os.chmod(good, 0o600)
    assert trust.read_trusted(good, max_bytes=10) == b"{}"
    assert trust.read_trusted(good, max_bytes=1) is None  # over the cap
    link = tmp_path / "link.json"
    link.symlink_to(good)
    assert trust.read_trusted(link, max_bytes=10) is None
    os.chmod(good, 0o666)
    assert trust.read_trusted(good, max_bytes=10) is None
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert trust.read_trusted(fifo, max_bytes=10) is None  # and the open did not block
    assert trust.read_trusted(tmp_path / "absent", max_bytes=10) is None
    if os.geteuid() == 0:
        os.chmod(good, 0o600)
        os.chown(good, 65534, 65534)
        assert trust.read_trusted(good, max_bytes=10) is None


def test_cache_entries_are_private_and_never_come_from_an_open_folder(tmp_path: Path, open_folder: Path) -> None:
    entry = tmp_path / "cache" / "detect" / "k.json"
    assert trust.store_cached(entry, b"{}")
    assert (mode(entry), mode(entry.parent), mode(entry.parent.parent)) == (0o600, 0o700, 0o700)
    assert trust.load_cached(entry) == b"{}"
    planted = open_folder / "detect" / "k.json"
    planted.parent.mkdir()
    planted.write_text("{}")
    os.chmod(planted, 0o600)
    assert trust.load_cached(planted) is None  # a plain file of ours, but the folder above is open
    assert not trust.store_cached(open_folder / "detect" / "new.json", b"{}")
    assert not (open_folder / "detect" / "new.json").exists()


def test_an_existing_cache_folder_of_ours_is_made_private(tmp_path: Path) -> None:
    folder = tmp_path / "output"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)  # as an older rocmkit left it
    trust.store_cached(folder / "k.json", b"{}")
    assert mode(folder) == 0o700


@needs_boot_id
def test_detection_and_plan_entries_in_an_open_cache_folder_are_never_read(open_folder: Path) -> None:
    calls: list[int] = []

    def detect() -> Machine:
        calls.append(1)
        return Machine(host=Host(hostname="real"))

    environ = {"PATH": "/usr/bin"}
    key = detect_cache.state_key(environ)
    planted = open_folder / "detect" / f"{key}.json"
    planted.parent.mkdir()
    os.chmod(planted.parent, 0o700)
    import time

    fake = Machine(host=Host(hostname="planted")).to_dict()
    text = json.dumps({"schema": detect_cache.SCHEMA, "stored_at": time.time(), "machine": fake})
    planted.write_text(text)
    os.chmod(planted, 0o600)
    machine, hit = detect_cache.cached_machine(open_folder, environ=environ, detect=detect)
    assert (machine.host.hostname, hit, len(calls)) == ("real", False, 1)
    assert planted.read_text() == text  # nothing written there either
    assert [p.name for p in planted.parent.iterdir()] == [planted.name]
    # The plan beside it: made again, never read, never stored there.
    from rocmkit.plan import Backend, Plan

    made: list[Plan] = []

    def make(m: Machine) -> Plan:
        made.append(Plan(backend=Backend.parse("cpu")))
        return made[-1]

    real = Machine(host=Host(hostname="real"))
    detect_cache.cached_plan(open_folder, real, make, environ=environ)
    detect_cache.cached_plan(open_folder, real, make, environ=environ)
    assert len(made) == 2 and [p.name for p in planted.parent.iterdir()] == [planted.name]
    # The same entry in a folder that is ours alone is read (the rule, not the entry, refused it).
    os.chmod(open_folder, 0o700)
    machine, hit = detect_cache.cached_machine(open_folder, environ=environ, detect=detect)
    assert (machine.host.hostname, hit) == ("planted", True)


def test_replayed_output_never_comes_from_an_open_folder(
    tmp_path: Path, open_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output_cache, "_detected_at", None)
    monkeypatch.setenv("ROCMKIT_CACHE_DIR", str(open_folder))
    entry = open_folder / "output" / f"{'k' * 32}.json"
    entry.parent.mkdir(mode=0o700)
    planted = {"schema": output_cache.SCHEMA, "argv": ["detect"], "detected_at": 999.0}
    entry.write_text(json.dumps({**planted, "chunks": [[False, "planted\n"]]}))
    os.chmod(entry, 0o600)
    rec = output_cache.Recording(["detect"], "k" * 32, now=lambda: 1000.0)
    out = io.StringIO()
    assert not rec.replay(out, io.StringIO()) and out.getvalue() == ""
    os.chmod(open_folder, 0o700)
    assert rec.replay(out, io.StringIO()) and out.getvalue() == "planted\n"


def test_compile_caches_never_live_in_an_open_folder(tmp_path: Path, open_folder: Path) -> None:
    ours = trust.compile_cache_dirs(tmp_path / "cache")
    assert ours == {
        "TRITON_CACHE_DIR": str(tmp_path / "cache/triton"),
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache/inductor"),
    }
    assert mode(tmp_path / "cache/triton") == 0o700
    theirs = trust.compile_cache_dirs(open_folder)
    for folder in theirs.values():
        assert open_folder not in Path(folder).parents
        assert trust.folder_problem(Path(folder)) is None and mode(Path(folder).parent) == 0o700
    # A planted triton/ folder inside an otherwise private cache is not used either.
    cache = tmp_path / "c2"
    (cache / "triton").mkdir(parents=True)
    os.chmod(cache / "triton", 0o777)
    mixed = trust.compile_cache_dirs(cache)
    assert cache not in Path(mixed["TRITON_CACHE_DIR"]).parents
    assert mixed["TORCHINDUCTOR_CACHE_DIR"] == str(cache / "inductor")


def test_a_compiling_child_never_includes_a_header_another_user_could_have_put_there(tmp_path: Path) -> None:
    """Inductor keeps its precompiled headers under <gettempdir()>/torchinductor_<user> whatever
    TORCHINDUCTOR_CACHE_DIR says, reuses one it finds, and includes it into every CPU kernel it
    builds. Where that folder is open to others, the child's TMPDIR is a private folder of
    rocmkit's; where it is ours (or not there yet: made now, 0700), the child keeps the user's
    TMPDIR, so the headers stay shared across runs. The user's compile cache locations win."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    user = {"TMPDIR": str(shared), "USER": "alice", "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "mine")}
    env = trust.compile_env(dict(user), tmp_path / "cache")
    assert env["TMPDIR"] == str(shared) and mode(shared / "torchinductor_alice") == 0o700
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "mine")
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "cache/triton")
    # Planted: another user's folder, or one anybody can write, where the headers would go.
    os.chmod(shared / "torchinductor_alice", 0o777)
    env = trust.compile_env(dict(user), tmp_path / "cache")
    assert env["TMPDIR"] == str(tmp_path / "cache/tmp") and mode(tmp_path / "cache/tmp") == 0o700
    # The doctor's and bench's children are made through it.
    from rocmkit.bench.suite import child_env as bench_env

    assert bench_env(user, tmp_path / "cache", "cpu")["TMPDIR"] == str(tmp_path / "cache/tmp")


def test_the_doctor_check_fails_on_an_open_cache_folder_with_the_fix(open_folder: Path) -> None:
    res = env.cache_dir(CheckContext(machine=Machine(), cache_dir=open_folder))
    assert res.status == Status.FAIL
    assert "not safe to load compiled kernels from" in res.message and "mode 0777" in res.message
    assert res.remedy and "ROCMKIT_CACHE_DIR" in res.remedy and "chmod 700" in res.remedy


def test_appends_never_follow_a_symlink_or_a_hard_link(tmp_path: Path) -> None:
    target = tmp_path / "shadow"
    target.write_text("root:x\n")
    link = tmp_path / "log"
    link.symlink_to(target)
    with pytest.raises(UntrustedError, match="is a symlink") as err:
        trust.open_append(link)
    assert err.value.exit_code == 13
    os.link(target, tmp_path / "hard")
    with pytest.raises(UntrustedError, match="other hard links"):
        trust.open_append(tmp_path / "hard")
    assert target.read_text() == "root:x\n"
    with trust.open_append(tmp_path / "plain.log") as f:
        f.write("a\n")
    assert (tmp_path / "plain.log").read_text() == "a\n"


def test_the_slurm_log_and_bench_rows_refuse_a_symlink(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rocmkit.bench import runlog
    from rocmkit.slurm.hooks import Log

    target = tmp_path / "cron"
    target.write_text("")
    link = tmp_path / "rocmkit.log"
    link.symlink_to(target)
    Log(str(link), "rocmkit-healthcheck")("node n1 drained")
    assert "refusing to write the log" in capsys.readouterr().err
    with pytest.raises(UntrustedError):
        runlog._append(link, {"row": {}})
    assert target.read_text() == ""


@pytest.mark.parametrize("dir_mode", [0o777, 0o775])
def test_slurm_config_refuses_root_hooks_in_a_folder_others_can_write(tmp_path: Path, dir_mode: int) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    os.chmod(hooks, dir_mode)
    res = rocmkit("slurm", "config", "--dir", str(hooks), "--write")
    assert res.code == 13
    line = res.one_line_error()
    assert "slurmd runs as root" in line and "--force" in line
    assert list(hooks.iterdir()) == []
    res = rocmkit("slurm", "config", "--dir", str(hooks), "--write", "--force")
    assert res.code == 0, res.stderr
    assert "--force: writing root-run hooks" in res.stderr
    assert (hooks / "rocmkit-healthcheck").exists()
    os.chmod(hooks, 0o755)
    res = rocmkit("slurm", "config", "--dir", str(hooks), "--write")
    assert res.code == 0 and "--force" not in res.stderr


def test_install_refuses_an_install_folder_others_can_write(open_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Its backups are reinstalled and its journals acted on: never from a folder others can write.
    from rocmkit.install import journal

    monkeypatch.setenv("ROCMKIT_CACHE_DIR", str(open_folder))
    with pytest.raises(UntrustedError, match=r"rocmkit's install folder .* is not safe") as err:
        journal.install_folder()
    assert err.value.exit_code == 13 and "ROCMKIT_CACHE_DIR" in (err.value.fix or "")
    assert not (open_folder / "install").exists()
    monkeypatch.setenv("ROCMKIT_CACHE_DIR", str(open_folder / ".." / "private"))
    assert mode(journal.install_folder()) == 0o700


def test_a_snapshot_folder_rocmkit_makes_is_private(tmp_path: Path, captures_dir: Path) -> None:
    # A capture holds host facts (dmesg lines, PCI ids, the hostname).
    from rocmkit.sources import CaptureSource, snapshot

    source = CaptureSource(next(p for p in sorted(captures_dir.iterdir()) if (p / "cmd").is_dir()))
    written = snapshot(source, tmp_path / "new" / "node1")
    assert written and mode(tmp_path / "new" / "node1") == 0o700
