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

A journal is an instruction (put these files back, stop these processes) that
root acts on (``doctor --venv`` from slurmd), kept in a venv others may write.
So :func:`read` refuses (exit 13, nothing written or stopped) any journal that is
a symlink, another user's, writable by others, not bound to this venv (device and
inode), writer (uid) and run (a seal of its digests in the run's private backup
folder), or that asks to restore anything but the venv's guard files; and
:func:`stop_leftovers` stops a process only when its pid, start time and boot all
match the record.
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

from rocmkit.errors import DataError, LockHeldError, RocmkitError, ToolError, UntrustedError, storage_error
from rocmkit.install.state import Backup, EnvState
from rocmkit.pyenv import PyEnv
from rocmkit.util import trust
from rocmkit.util.atomicio import write_bytes_atomic, write_text_atomic
from rocmkit.util.paths import cache_dir
from rocmkit.util.say import Say

SCHEMA = "rocmkit.journal/2"
JOURNAL_NAME = "rocmkit-journal.json"
SEAL_NAME = "journal-seal.json"
SEAL_SCHEMA = "rocmkit.journal-seal/1"
# The before-state of a large environment is ~100 KiB; anything far past that is not ours.
MAX_JOURNAL_BYTES = 32 * 1024 * 1024
# How to clear a journal rocmkit refuses: the environment is checked by hand first.
CLEAR = "check the environment by hand (pip freeze), then delete {path}"


class JournalRefused(UntrustedError):
    """A journal rocmkit will not act on (exit 13): nothing was written or stopped."""


def _key(target: PyEnv) -> str:
    return hashlib.sha256(str(target.prefix.resolve()).encode()).hexdigest()[:16]


def journal_path(target: PyEnv) -> Path:
    if target.is_venv:
        return target.prefix / JOURNAL_NAME
    return cache_dir() / "install" / f"{_key(target)}.journal.json"


def present(path: Path) -> bool:
    """A journal (or anything in its place, a symlink included) is there."""
    return os.path.lexists(path)


def managed_files(target: PyEnv) -> tuple[str, ...]:
    """The only files a journal may restore: the guard files rocmkit writes in a venv
    (none outside a venv), as the install spells them (``str`` of the path)."""
    from rocmkit.install.guard import guard_files

    return tuple(str(p) for p in guard_files(target.prefix).all()) if target.is_venv else ()


def install_folder() -> Path:
    """rocmkit's private folder for install locks, backups and journals of non-venv targets;
    refused (exit 13) when another user could write it."""
    from rocmkit.util.trust import check_folder, private_folder

    folder = cache_dir() / "install"
    check_folder(
        folder,
        "rocmkit's install folder",
        "point ROCMKIT_CACHE_DIR at a folder only you (or root) can write",
    )
    return private_folder(folder)


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        return None


def _venv_id(prefix: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(prefix)
    except OSError:
        return None
    return st.st_dev, st.st_ino


@contextlib.contextmanager
def exclusive(target: PyEnv) -> Iterator[None]:
    """One rocmkit install per environment at a time (two would record and restore
    each other's half-finished states). The lock lives in rocmkit's cache, keyed by
    the target's prefix, so a system prefix needs no write access for it."""
    try:
        folder = install_folder()
        handle = trust.open_append(folder / f"{_key(target)}.lock", mode=0o600)
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
        handle.truncate(0)
        handle.write(f"{os.getpid()} {target.prefix}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """The kernel's start time of ``pid`` (field 22 of /proc/PID/stat) and its process
    group (field 5), or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from the last ")".
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return fields[19], int(fields[2])
    except (IndexError, ValueError):
        return None


def _start_time(pid: int) -> str | None:
    found = _proc_stat(pid)
    return None if found is None else found[0]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(kw_only=True)
class Journal:
    """One install's journal. Bound to its run: the venv's device and inode, the writer's
    uid and the boot it ran in are recorded, and a digest of every version written is
    kept in the run's private backup folder (the seal), so that a journal copied from
    another environment, or edited since, is refused (:func:`read`)."""

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
    uid: int = field(default_factory=os.geteuid)
    boot: str | None = field(default_factory=_boot_id)
    venv_id: tuple[int, int] | None = None
    listing: str | None = None  # sha256 of the venv's file list from before, in the workdir
    _sealed: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.venv_id is None:
            self.venv_id = _venv_id(Path(self.prefix))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "pid": self.pid,
            "uid": self.uid,
            "boot": self.boot,
            "venv": None if self.venv_id is None else {"dev": self.venv_id[0], "ino": self.venv_id[1]},
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
            "listing": self.listing,
        }

    @classmethod
    def from_dict(cls, path: Path, data: Any) -> Journal:
        """The journal ``data`` holds, its fields of the right types; :class:`JournalRefused`
        otherwise. Whether it may be acted on is :func:`read`'s to check."""
        try:
            if not isinstance(data, dict) or not str(data.get("schema", "")).startswith("rocmkit.journal/"):
                raise ValueError("not a rocmkit journal")
            if data["schema"] != SCHEMA:
                raise ValueError(f"written by another rocmkit ({data['schema']}), not bound to its run")
            files: dict[str, bytes | None] = {}
            for name, text in _mapping(data["files"]).items():
                files[name] = None if text is None else base64.b64decode(_text(text), validate=True)
            venv = data["venv"]
            children = []
            for c in data["children"]:
                start = c["start"]
                children.append((_int(c["pid"]), None if start is None else _text(start)))
            return cls(
                path=path,
                prefix=_text(data["prefix"]),
                installer=_text(data["installer"]),
                intent=tuple(_text(r) for r in data["intent"]),
                workdir=Path(_text(data["workdir"])),
                before=EnvState.from_dict(data["before"]),
                files=files,
                wheels={k: Path(_text(v)) for k, v in _mapping(data["wheels"]).items()},
                step=_text(data["step"]),
                pid=_int(data["pid"]),
                started=_text(data["started"]),
                children=children,
                uid=_int(data["uid"]),
                boot=None if data["boot"] is None else _text(data["boot"]),
                venv_id=None if venv is None else (_int(venv["dev"]), _int(venv["ino"])),
                listing=None if data.get("listing") is None else _text(data["listing"]),
            )
        except (AttributeError, KeyError, TypeError, ValueError, DataError) as exc:
            raise JournalRefused(
                f"{path} is not a journal rocmkit can use ({exc})", CLEAR.format(path=path)
            ) from exc

    def backup(self) -> Backup:
        return Backup(
            folder=self.workdir, state=self.before, wheels=self.wheels, file_bytes=self.files, listing=self.listing
        )

    @property
    def seal_path(self) -> Path:
        return self.workdir / SEAL_NAME

    def save(self) -> None:
        """Write the journal (0600, atomically), after its digest went into the seal. The seal
        keeps the previous digest too: a kill between the two writes leaves a journal that is
        still one this run wrote."""
        data = (json.dumps(self.to_dict()) + "\n").encode()
        digest = _digest(data)
        seal = {
            "schema": SEAL_SCHEMA,
            "journal": str(self.path),
            "digests": [d for d in (self._sealed, digest) if d],
        }
        try:
            write_text_atomic(self.seal_path, json.dumps(seal) + "\n", mode=0o600)
            write_bytes_atomic(self.path, data, mode=0o600)
        except OSError as exc:
            raise storage_error(exc) or exc from exc
        self._sealed = digest

    def at(self, step: str) -> None:
        self.step = step
        self.save()

    def child_started(self, pid: int) -> None:
        # Only the last few: a restore after kill -9 needs the one that was running.
        self.children = [*self.children[-3:], (pid, _start_time(pid))]
        with contextlib.suppress(RocmkitError, OSError):
            self.save()

    def close(self) -> None:
        """The commit point: the change is done (or undone), nothing to recover. The seal goes
        too, so that no copy of this journal can be replayed later."""
        self.path.unlink(missing_ok=True)
        self.seal_path.unlink(missing_ok=True)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r:.40} is not text")
    return value


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{value!r:.40} is not an integer")
    return value


def _mapping(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError("not a mapping")
    return {_text(k): v for k, v in value.items()}


def _refuse(path: Path, what: str) -> JournalRefused:
    return JournalRefused(f"the install journal {path} {what}; rocmkit will not act on it", CLEAR.format(path=path))


def _read_file(path: Path) -> bytes:
    """The journal's bytes, opened without following a symlink and checked on the descriptor."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        import errno

        if exc.errno == errno.ELOOP:
            raise _refuse(path, "is a symlink") from exc
        raise _refuse(path, f"cannot be opened ({exc.strerror})") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, "is not a regular file")
        if st.st_uid != os.geteuid():
            whose = f"uid {st.st_uid}"
            raise JournalRefused(
                f"the install journal {path} belongs to {whose}, not to the user running rocmkit "
                f"(uid {os.geteuid()}); rocmkit will not act on it",
                f"run rocmkit as {whose} to finish that install's restore, or "
                + CLEAR.format(path=path),
            )
        problem = trust.stat_problem(st, folder=False)
        if problem:
            raise _refuse(path, f"is {problem}")
        if st.st_size > MAX_JOURNAL_BYTES:
            raise _refuse(path, f"is over {MAX_JOURNAL_BYTES} bytes")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            if sum(map(len, chunks)) > MAX_JOURNAL_BYTES:
                raise _refuse(path, f"is over {MAX_JOURNAL_BYTES} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _inside(path: Path, folder: Path) -> bool:
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return real == root or real.startswith(root.rstrip("/") + "/")


def _same_place(name: str) -> str:
    """``name`` with its folders' symlinks resolved (the file itself is not followed: a guard
    file may be a link, and it is the name that is restored)."""
    folder, base = os.path.split(os.path.normpath(name))
    return os.path.join(os.path.realpath(folder), base)


def _check_bound(j: Journal, target: PyEnv, data: bytes) -> None:
    """Refuse a journal that is not bound to this environment and run, or asks for what no
    install of rocmkit's would."""
    path = j.path
    if j.uid != os.geteuid():
        raise _refuse(path, f"says it was written by uid {j.uid}, not by the user running rocmkit")
    # One venv identity, however it was spelled: a journal written through a symlinked path
    # is the same venv's under its real path (the device and inode below are what bind it).
    if os.path.realpath(j.prefix) != os.path.realpath(target.prefix):
        raise _refuse(path, f"is for {j.prefix}, not for {target.prefix}")
    if j.venv_id != _venv_id(target.prefix):
        raise _refuse(path, f"was written for another environment at {target.prefix} (its device and inode differ)")
    install = cache_dir() / "install"
    if not _inside(j.workdir, install) or os.path.realpath(j.workdir) == os.path.realpath(install):
        raise _refuse(
            path,
            f"keeps its backups in {j.workdir}, outside this rocmkit's install folder {install} "
            "(was ROCMKIT_CACHE_DIR different when it was written?)",
        )
    problem = trust.folder_problem(j.workdir)
    if problem:
        raise _refuse(path, f"keeps its backups in a folder that is not safe: {problem}")
    raw = trust.read_trusted(j.seal_path, max_bytes=1 << 16)
    try:
        seal = json.loads(raw) if raw is not None else None
    except ValueError:
        seal = None
    if not isinstance(seal, dict) or seal.get("schema") != SEAL_SCHEMA:
        raise _refuse(path, f"has no seal rocmkit can read in {j.workdir}")
    digests = seal.get("digests")
    if not isinstance(seal.get("journal"), str) or _same_place(seal["journal"]) != _same_place(str(path)) or not isinstance(digests, list) or _digest(data) not in digests:
        raise _refuse(path, "was changed since the install that wrote it (its digest is not in the seal)")
    # Sealed or not: what no install of rocmkit's asks for is refused on its own.
    from rocmkit.install.wsl_runtime import is_runtime_file

    allowed = {_same_place(f) for f in managed_files(target)}
    for name in j.files:
        # The guard files, and on WSL2 torch's bundled HSA runtime (install/wsl_runtime.py).
        if _same_place(name) not in allowed and not is_runtime_file(target, _same_place(name)):
            raise _refuse(path, f"asks to restore {name}, which is not a file rocmkit manages in {target.prefix}")
        # A venv folder replaced by a symlink would carry the write elsewhere.
        parent = Path(name).parent
        if not _inside(parent, target.prefix):
            raise _refuse(path, f"asks to restore {name}, whose folder leads out of {target.prefix}")
    for name, wheel in j.wheels.items():
        if not _inside(wheel, j.workdir / "wheels") or not wheel.name.endswith(".whl"):
            raise _refuse(path, f"names a backup of {name} outside its backup folder ({wheel})")


def read(target: PyEnv) -> Journal | None:
    """The journal left in ``target`` by an install that did not finish, if any; refused
    (:class:`JournalRefused`, exit 13) unless it is a regular file of this user's, writable
    by nobody else, bound to this environment and unchanged since its run wrote it."""
    from rocmkit.util.safeload import loads_json

    path = journal_path(target)
    if not present(path):
        return None
    data = _read_file(path)
    try:
        text = data.decode("utf-8")
        parsed = loads_json(text, f"install journal {path}", max_bytes=MAX_JOURNAL_BYTES)
    except (UnicodeDecodeError, DataError) as exc:
        raise _refuse(path, "is not valid JSON") from exc
    journal = Journal.from_dict(path, parsed)
    _check_bound(journal, target, data)
    journal._sealed = _digest(data)
    return journal


def stop_leftovers(journal: Journal, echo: Say) -> None:
    """SIGKILL the process group of each pip/uv the dead install left running.

    Every command rocmkit runs leads its own session, so its pid is its group's id.
    A process is stopped only when it is alive, leads its group, and its start time is
    the one recorded, in the same boot: anything else (no recorded start time, a pid
    now used by another process, a leader gone) is left alone and said so."""
    same_boot = journal.boot is not None and journal.boot == _boot_id()
    for pid, start in journal.children:
        if pid == os.getpid() or pid <= 1:
            continue
        now = _proc_stat(pid)
        if now is None:
            continue  # gone
        if start is None or not same_boot or now != (start, pid):
            echo(
                f"rocmkit: left process {pid} alone: it is not provably the installer the "
                "interrupted install started (no matching start time)"
            )
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


def recover(target: PyEnv, restore: Callable[[Journal], Any], echo: Say) -> bool:
    """Finish the restore an interrupted install left, if it left one; True when it did.

    ``restore(journal)`` puts the environment back and returns a report with
    ``restored`` and ``describe()`` (:func:`rocmkit.install.transaction.restore_state`).
    Call with the environment's lock held. A journal rocmkit refuses raises
    :class:`JournalRefused` before anything is stopped or written."""
    journal = read(target)
    if journal is None:
        return False
    echo(
        f"rocmkit: {journal.path}: an install (pid {journal.pid}, started {journal.started}) was "
        f"interrupted at step '{journal.step}'; restoring {target.prefix} to its state from before it"
    )
    stop_leftovers(journal, echo)
    report = restore(journal)
    for step in getattr(report, "steps", ()):
        echo(f"rocmkit:   {step}")
    echo(f"rocmkit: {report.describe()}")
    if not report.restored:
        raise ToolError(
            f"the interrupted install in {target.prefix} could not be undone exactly: {report.describe()}",
            f"the journal {journal.path} and backups in {journal.workdir} are kept; fix the environment "
            f"by hand (pip freeze), then delete the journal",
        )
    journal.close()
    import shutil

    shutil.rmtree(journal.workdir / "wheels", ignore_errors=True)
    return True
