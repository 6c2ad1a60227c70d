"""The install journal: what an install meant to do, and how to undo it, kept inside the venv.

An install that fails or is interrupted (Ctrl-C, SIGTERM, SIGHUP) restores the
environment in-process (:mod:`rocmkit.install.transaction`). A kill -9, an OOM
kill or a power cut leaves no chance for that: the journal is what survives.

Before anything in the environment changes, rocmkit writes
``<venv>/rocmkit-journal.json`` (a non-venv target keeps it in rocmkit's cache,
keyed by its prefix) holding:

- the intent (the requirements, the installer) and the step reached;
- the recorded state from before (every distribution and its fingerprint);
- the bytes of the files rocmkit manages in the venv (the guard), and where the
  backup wheels of what the install may replace are;
- the process group of every pip/uv command started, so that one left running
  after rocmkit was killed is stopped before anything is restored under it.

Every write is atomic, so the journal is always whole. On success it is
deleted (the commit point); after an in-process restore it is deleted too. The
next ``rocmkit install`` or ``rocmkit doctor`` on an environment that still has
one finishes the restore, and says so.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocmkit.errors import DataError, LockHeldError, RocmkitError, ToolError, storage_error
from rocmkit.install.state import Backup, EnvState
from rocmkit.pyenv import PyEnv
from rocmkit.util.atomicio import write_text_atomic
from rocmkit.util.paths import cache_dir

SCHEMA = "rocmkit.journal/1"
JOURNAL_NAME = "rocmkit-journal.json"
# The before-state of a large environment is ~100 KiB; anything far past that is not ours.
MAX_JOURNAL_BYTES = 32 * 1024 * 1024
Echo = Callable[[str], None]


def _key(target: PyEnv) -> str:
    return hashlib.sha256(str(target.prefix.resolve()).encode()).hexdigest()[:16]


def journal_path(target: PyEnv) -> Path:
    if target.is_venv:
        return target.prefix / JOURNAL_NAME
    return cache_dir() / "install" / f"{_key(target)}.journal.json"


@contextlib.contextmanager
def exclusive(target: PyEnv) -> Iterator[None]:
    """One rocmkit install per environment at a time (two would record and restore
    each other's half-finished states). The lock lives in rocmkit's cache, keyed by
    the target's prefix, so a system prefix needs no write access for it."""
    folder = cache_dir() / "install"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = (folder / f"{_key(target)}.lock").open("w")
    except OSError as exc:
        raise storage_error(exc) or exc from exc
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise LockHeldError(
                f"another rocmkit install is changing {target.prefix} right now",
                "wait for it to finish, then run this again",
            ) from exc
        handle.write(f"{os.getpid()} {target.prefix}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/PID/stat), or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from the last ")".
    fields = text[text.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


@dataclass(kw_only=True)
class Journal:
    path: Path
    prefix: str
    installer: str
    intent: tuple[str, ...]
    workdir: Path
    before: EnvState
    files: dict[str, bytes | None]
    wheels: dict[str, Path] = field(default_factory=dict)
    step: str = "recorded"
    pid: int = field(default_factory=os.getpid)
    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    children: list[tuple[int, str | None]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "pid": self.pid,
            "started": self.started,
            "prefix": self.prefix,
            "installer": self.installer,
            "intent": list(self.intent),
            "step": self.step,
            "workdir": str(self.workdir),
            "before": self.before.to_dict(),
            "files": {
                k: (None if v is None else base64.b64encode(v).decode("ascii")) for k, v in self.files.items()
            },
            "wheels": {k: str(v) for k, v in self.wheels.items()},
            "children": [{"pid": pid, "start": start} for pid, start in self.children],
        }

    @classmethod
    def from_dict(cls, path: Path, data: Any) -> Journal:
        try:
            if not isinstance(data, dict) or data.get("schema") != SCHEMA:
                raise ValueError("not a rocmkit journal")
            files: dict[str, bytes | None] = {}
            for name, text in dict(data["files"]).items():
                files[str(name)] = None if text is None else base64.b64decode(str(text), validate=True)
            return cls(
                path=path,
                prefix=str(data["prefix"]),
                installer=str(data["installer"]),
                intent=tuple(str(r) for r in data["intent"]),
                workdir=Path(str(data["workdir"])),
                before=EnvState.from_dict(data["before"]),
                files=files,
                wheels={str(k): Path(str(v)) for k, v in dict(data["wheels"]).items()},
                step=str(data["step"]),
                pid=int(data["pid"]),
                started=str(data["started"]),
                children=[(int(c["pid"]), c.get("start")) for c in data.get("children", [])],
            )
        except (AttributeError, KeyError, TypeError, ValueError, DataError) as exc:
            raise DataError(
                f"{path} is not a journal rocmkit can use ({exc})",
                f"check the environment by hand (pip freeze), then delete {path}",
            ) from exc

    def backup(self) -> Backup:
        return Backup(folder=self.workdir, state=self.before, wheels=self.wheels, file_bytes=self.files)

    def save(self) -> None:
        try:
            write_text_atomic(self.path, json.dumps(self.to_dict()) + "\n")
        except OSError as exc:
            raise storage_error(exc) or exc from exc

    def at(self, step: str) -> None:
        self.step = step
        self.save()

    def child_started(self, pid: int) -> None:
        # Only the last few: a restore after kill -9 needs the one that was running.
        self.children = [*self.children[-3:], (pid, _start_time(pid))]
        with contextlib.suppress(RocmkitError, OSError):
            self.save()

    def close(self) -> None:
        """The commit point: the change is done (or undone), nothing to recover."""
        self.path.unlink(missing_ok=True)


def read(target: PyEnv) -> Journal | None:
    """The journal left in ``target`` by an install that did not finish, if any."""
    from rocmkit.util.safeload import load_json_file

    path = journal_path(target)
    if not path.exists() and not path.is_symlink():
        return None
    return Journal.from_dict(path, load_json_file(path, f"install journal {path}", max_bytes=MAX_JOURNAL_BYTES))


def stop_leftovers(journal: Journal, echo: Echo) -> None:
    """SIGKILL the process group of each pip/uv the dead install left running.

    Every command rocmkit runs leads its own session, so its pid is its group's id.
    A leader still alive with another start time is an unrelated process that
    reuses the pid: left alone. A dead leader whose group still has members is
    the same group (Linux does not reuse a pid while a group carries its id)."""
    for pid, start in journal.children:
        if pid == os.getpid() or pid <= 1:
            continue
        now = _start_time(pid)
        if now is not None and start is not None and now != start:
            continue
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        echo(f"rocmkit: stopped process group {pid} left running by the interrupted install")
        for _ in range(50):  # up to ~5 s for the kernel to reap it
            if _start_time(pid) is None:
                break
            time.sleep(0.1)


def recover(target: PyEnv, restore: Callable[[Journal], Any], echo: Echo) -> bool:
    """Finish the restore an interrupted install left, if it left one; True when it did.

    ``restore(journal)`` puts the environment back and returns a report with
    ``exact`` and ``describe()`` (:func:`rocmkit.install.transaction.restore_state`).
    Call with the environment's lock held."""
    journal = read(target)
    if journal is None:
        return False
    echo(
        f"rocmkit: {journal.path}: an install (pid {journal.pid}, started {journal.started}) was "
        f"interrupted at step '{journal.step}'; restoring {target.prefix} to its state from before it"
    )
    stop_leftovers(journal, echo)
    report = restore(journal)
    echo(f"rocmkit: {report.describe()}")
    if not report.exact:
        raise ToolError(
            f"the interrupted install in {target.prefix} could not be undone exactly: {report.describe()}",
            f"the journal {journal.path} and backups in {journal.workdir} are kept; fix the environment "
            f"by hand (pip freeze), then delete the journal",
        )
    journal.close()
    import shutil

    shutil.rmtree(journal.workdir / "wheels", ignore_errors=True)
    return True
