"""The install journal on its own: written whole, read back exactly, refused when damaged,
planted or edited, and recovery that deletes it only after an exact restore.

A journal is an instruction to put files back and stop processes, and root acts on it
(`rocmkit doctor --venv` from slurmd): every way of planting one is refused with exit 13
before anything is written or stopped. Real processes are in
tests/integration/test_install_journal_tamper.py."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from rocmkit.errors import ToolError
from rocmkit.install import journal
from rocmkit.install.state import Dist, EnvState
from rocmkit.pyenv import PyEnv

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="making a file another user's needs root (chown)")


def target(prefix: Path, *, is_venv: bool = True) -> PyEnv:
    return PyEnv(
        executable=prefix / "bin/python", prefix=prefix, venv=prefix if is_venv else None, version="3.11.7",
        purelib=prefix, platlib=prefix, stdlib=prefix, include=prefix, has_pip=False,
    )  # fmt: skip


def make(prefix: Path) -> journal.Journal:
    (prefix / "bin").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=journal.install_folder()))
    before = EnvState(
        python=str(prefix / "bin/python"),
        dists={"torch": Dist(name="torch", version="2.4.1+rocm6.1", fingerprint="f" * 64, has_record=True)},
        files={str(prefix / "pip.conf"): None},
    )
    return journal.Journal(
        path=journal.journal_path(target(prefix)),
        prefix=str(prefix),
        installer="pip",
        intent=("torch==2.5.1+rocm6.2",),
        workdir=work,
        before=before,
        files={str(prefix / "pip.conf"): None, str(prefix / "bin/activate"): b"# act\n\xff"},
        wheels={"torch": work / "wheels/torch-2.4.1+rocm6.1-py3-none-any.whl"},
    )


def reseal(j: journal.Journal) -> None:
    """What only someone who can write rocmkit's own cache could do: seal an edited journal."""
    digest = hashlib.sha256(j.path.read_bytes()).hexdigest()
    seal = {"schema": journal.SEAL_SCHEMA, "journal": str(j.path), "digests": [digest]}
    j.seal_path.write_text(json.dumps(seal))


def edit(j: journal.Journal, **fields: object) -> None:
    data = json.loads(j.path.read_text())
    data.update(fields)
    j.path.write_text(json.dumps(data))


def refused(prefix: Path, match: str) -> str:
    with pytest.raises(journal.JournalRefused, match=match) as err:
        journal.read(target(prefix))
    assert err.value.exit_code == 13
    line = err.value.one_line()
    assert "\n" not in line and "delete" in line
    return line


def test_written_then_read_back_exactly(tmp_path: Path) -> None:
    j = make(tmp_path)
    j.at("installing")
    assert j.path.stat().st_mode & 0o777 == 0o600
    back = journal.read(target(tmp_path))
    assert back is not None
    assert back.to_dict() == j.to_dict()
    assert back.files[str(tmp_path / "bin/activate")] == b"# act\n\xff"
    assert back.before.dists["torch"].version == "2.4.1+rocm6.1"
    assert back.uid == os.geteuid() and back.venv_id == (tmp_path.stat().st_dev, tmp_path.stat().st_ino)
    j.close()
    assert journal.read(target(tmp_path)) is None
    assert not j.seal_path.exists()  # no copy of it can be replayed later


def test_a_journal_rewritten_keeps_reading_back(tmp_path: Path) -> None:
    # The seal keeps the previous digest too: a kill between seal and journal writes is safe.
    j = make(tmp_path)
    j.save()
    first = j.path.read_bytes()
    j.at("installing")
    j.path.write_bytes(first)  # as if killed after the seal was written, before the journal
    back = journal.read(target(tmp_path))
    assert back is not None and back.step == "recorded"


def test_an_interpreter_target_keeps_its_journal_in_the_cache(tmp_path: Path) -> None:
    path = journal.journal_path(target(tmp_path, is_venv=False))
    assert tmp_path not in path.parents and path.name.endswith(".journal.json")
    assert journal.managed_files(target(tmp_path, is_venv=False)) == ()


@pytest.mark.parametrize(
    "text",
    ["{", "[]", '{"schema": "rocmkit.journal/2"}', '{"schema": "x"}', "[" * 10_000, "\xff", ""],
)
def test_a_damaged_journal_is_refused_in_one_line(tmp_path: Path, text: str) -> None:
    (tmp_path / journal.JOURNAL_NAME).write_text(text, errors="surrogateescape")
    os.chmod(tmp_path / journal.JOURNAL_NAME, 0o600)
    refused(tmp_path, "not valid JSON|not a journal rocmkit can use")


def test_a_journal_of_the_older_unbound_format_is_refused(tmp_path: Path) -> None:
    j = make(tmp_path)
    j.save()
    edit(j, schema="rocmkit.journal/1")
    reseal(j)
    refused(tmp_path, "written by another rocmkit")


def test_a_symlinked_journal_is_refused_even_to_a_good_one(tmp_path: Path) -> None:
    j = make(tmp_path)
    j.save()
    real = tmp_path / "real.json"
    j.path.rename(real)
    j.path.symlink_to(real)
    refused(tmp_path, "is a symlink")
    j.path.unlink()
    j.path.symlink_to(tmp_path / "nowhere")  # dangling: still there, still refused
    refused(tmp_path, "is a symlink")


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_a_journal_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    j = make(tmp_path)
    j.save()
    os.chmod(j.path, mode)
    refused(tmp_path, "writable by")


@needs_root
def test_a_journal_another_user_owns_is_refused(tmp_path: Path) -> None:
    j = make(tmp_path)
    j.save()
    os.chown(j.path, 65534, 65534)
    line = refused(tmp_path, "belongs to uid 65534")
    assert "run rocmkit as uid 65534" in line


def test_an_edited_journal_is_refused_by_its_seal(tmp_path: Path) -> None:
    j = make(tmp_path)
    j.save()
    edit(j, step="installing")
    refused(tmp_path, "was changed since the install that wrote it")
    j.seal_path.unlink()
    refused(tmp_path, "has no seal")


def test_a_journal_naming_a_file_outside_the_guard_is_refused_even_when_sealed(tmp_path: Path) -> None:
    j = make(tmp_path)
    j.save()
    cron = tmp_path / "etc/cron.d/evil"
    edit(j, files={str(cron): "KiAqICogKiAqIHJvb3QgaWQK"})
    reseal(j)
    refused(tmp_path, "not a file rocmkit manages")
    assert not cron.parent.exists()


def test_a_guard_file_whose_folder_leads_out_of_the_venv_is_refused(tmp_path: Path) -> None:
    prefix = tmp_path / "venv"
    j = make(prefix)
    j.save()
    elsewhere = tmp_path / "etc"
    elsewhere.mkdir()
    (prefix / "bin").rmdir()
    (prefix / "bin").symlink_to(elsewhere)  # bin/activate would land in etc/
    refused(prefix, "leads out of")


def test_a_journal_copied_from_another_venv_is_refused(tmp_path: Path) -> None:
    j = make(tmp_path / "a")
    j.save()
    other = tmp_path / "b"
    (tmp_path / "a").rename(other)
    (tmp_path / "a").mkdir()  # same path, another folder (inode)
    (other / journal.JOURNAL_NAME).rename(tmp_path / "a" / journal.JOURNAL_NAME)
    refused(tmp_path / "a", "another environment")


def test_a_journal_keeping_backups_outside_rocmkits_folder_is_refused(tmp_path: Path) -> None:
    j = make(tmp_path)
    j.save()
    edit(j, workdir=str(tmp_path / "evil"))
    reseal(j)
    refused(tmp_path, "outside this rocmkit's install folder")


def test_a_journal_naming_a_backup_outside_its_folder_is_refused(tmp_path: Path) -> None:
    j = make(tmp_path)
    j.save()
    edit(j, wheels={"torch": str(tmp_path / "evil.whl")})
    reseal(j)
    refused(tmp_path, "outside its backup folder")


def test_a_journal_from_another_uid_field_is_refused(tmp_path: Path) -> None:
    j = make(tmp_path)
    j.save()
    edit(j, uid=os.geteuid() + 1)
    reseal(j)
    refused(tmp_path, "written by uid")


@pytest.mark.parametrize(
    "children",
    [[{"pid": "1", "start": None}], [{"pid": 5, "start": 7}], [{"pid": True, "start": None}], {"pid": 5}],
)
def test_children_of_the_wrong_types_are_refused(tmp_path: Path, children: object) -> None:
    j = make(tmp_path)
    j.save()
    edit(j, children=children)
    reseal(j)
    refused(tmp_path, "not a journal rocmkit can use")


@dataclass
class Report:
    restored: bool

    def describe(self) -> str:
        return "restored" if self.restored else "NOT restored"


def test_recover_deletes_the_journal_only_after_an_exact_restore(tmp_path: Path) -> None:
    lines: list[str] = []
    make(tmp_path).save()
    with pytest.raises(ToolError, match="could not be undone exactly"):
        journal.recover(target(tmp_path), lambda j: Report(restored=False), lines.append)
    assert (tmp_path / journal.JOURNAL_NAME).exists()  # kept for the next try
    assert journal.recover(target(tmp_path), lambda j: Report(restored=True), lines.append)
    assert not (tmp_path / journal.JOURNAL_NAME).exists()
    assert any("was interrupted at step 'recorded'" in line for line in lines)
    assert not journal.recover(target(tmp_path), lambda j: Report(restored=True), lines.append)


def test_recover_acts_on_nothing_when_the_journal_is_refused(tmp_path: Path) -> None:
    j = make(tmp_path)
    j.save()
    os.chmod(j.path, 0o666)
    calls: list[object] = []
    with pytest.raises(journal.JournalRefused):
        journal.recover(target(tmp_path), calls.append, calls.append)
    assert calls == [] and j.path.exists()


def test_a_recorded_child_whose_pid_now_belongs_to_another_process_is_left_alone(tmp_path: Path) -> None:
    j = make(tmp_path)
    # This very process (skipped outright), pid 1 with another start time, and one without any.
    j.children = [(os.getpid(), "0"), (1, "not-its-start-time"), (os.getppid(), None)]
    lines: list[str] = []
    journal.stop_leftovers(j, lines.append)
    assert all("left process" in line for line in lines) and len(lines) == 1


def test_journal_is_plain_json_with_every_field(tmp_path: Path) -> None:
    data = make(tmp_path).to_dict()
    assert set(data) >= {"schema", "pid", "step", "before", "files", "wheels", "children", "intent"}
    assert set(data) >= {"uid", "boot", "venv"}
    json.dumps(data)  # plain JSON
