"""The install journal on its own: written whole, read back exactly, refused when damaged,
and recovery that deletes it only after an exact restore."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from rocmkit.errors import DataError, ToolError
from rocmkit.install import journal
from rocmkit.install.state import Dist, EnvState
from rocmkit.pyenv import PyEnv


def target(prefix: Path, *, is_venv: bool = True) -> PyEnv:
    return PyEnv(
        executable=prefix / "bin/python", prefix=prefix, venv=prefix if is_venv else None, version="3.11.7",
        purelib=prefix, platlib=prefix, stdlib=prefix, include=prefix, has_pip=False,
    )  # fmt: skip


def make(prefix: Path) -> journal.Journal:
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
        workdir=prefix / "work",
        before=before,
        files={str(prefix / "pip.conf"): None, str(prefix / "bin/activate"): b"# act\n\xff"},
        wheels={"torch": prefix / "work/wheels/torch.whl"},
    )


def test_written_then_read_back_exactly(tmp_path: Path) -> None:
    j = make(tmp_path)
    j.at("installing")
    back = journal.read(target(tmp_path))
    assert back is not None
    assert back.to_dict() == j.to_dict()
    assert back.files[str(tmp_path / "bin/activate")] == b"# act\n\xff"
    assert back.before.dists["torch"].version == "2.4.1+rocm6.1"
    j.close()
    assert journal.read(target(tmp_path)) is None


def test_an_interpreter_target_keeps_its_journal_in_the_cache(tmp_path: Path) -> None:
    path = journal.journal_path(target(tmp_path, is_venv=False))
    assert tmp_path not in path.parents and path.name.endswith(".journal.json")


@pytest.mark.parametrize(
    "text", ["{", "[]", '{"schema": "rocmkit.journal/1"}', '{"schema": "x"}', "[" * 10_000]
)
def test_a_damaged_journal_is_one_data_error(tmp_path: Path, text: str) -> None:
    (tmp_path / journal.JOURNAL_NAME).write_text(text)
    with pytest.raises(DataError) as err:
        journal.read(target(tmp_path))
    assert "\n" not in err.value.one_line()


@dataclass
class Report:
    exact: bool

    def describe(self) -> str:
        return "restored" if self.exact else "NOT restored"


def test_recover_deletes_the_journal_only_after_an_exact_restore(tmp_path: Path) -> None:
    lines: list[str] = []
    make(tmp_path).save()
    with pytest.raises(ToolError, match="could not be undone exactly"):
        journal.recover(target(tmp_path), lambda j: Report(exact=False), lines.append)
    assert (tmp_path / journal.JOURNAL_NAME).exists()  # kept for the next try
    assert journal.recover(target(tmp_path), lambda j: Report(exact=True), lines.append)
    assert not (tmp_path / journal.JOURNAL_NAME).exists()
    assert any("was interrupted at step 'recorded'" in line for line in lines)
    assert not journal.recover(target(tmp_path), lambda j: Report(exact=True), lines.append)


def test_a_recorded_child_whose_pid_now_belongs_to_another_process_is_left_alone(tmp_path: Path) -> None:
    j = make(tmp_path)
    # This very process (pid 1's start time differs, and our own pid is skipped outright).
    j.children = [(os.getpid(), "0"), (1, "not-its-start-time")]
    lines: list[str] = []
    journal.stop_leftovers(j, lines.append)
    assert lines == []


def test_journal_is_plain_json_with_every_field(tmp_path: Path) -> None:
    data = make(tmp_path).to_dict()
    assert set(data) >= {"schema", "pid", "step", "before", "files", "wheels", "children", "intent"}
    json.dumps(data)  # plain JSON
