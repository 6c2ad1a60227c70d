"""Which files and folders rocmkit may trust, when it runs as root on a shared node.

rocmkit loads back what it wrote earlier (detection and plan caches, replayed
output, compiled matrices, Triton's and inductor's compiled ``.so`` files, the
install journal and its backup wheels). A file another user could have written
is an instruction from that user, run with rocmkit's privileges. So a file or
folder is trusted only when (the rule OpenSSH applies to ``authorized_keys``):

- it is owned by the user running rocmkit (the effective uid) or by root;
- nobody else can write it: no group or world write bit, except on a folder with
  the sticky bit (``/tmp``: others may add entries there, never rename or remove
  ours, and each entry is checked on its own);
- every folder above it passes the same rule (else another user could rename the
  folder away and put their own in its place);
- a file is opened without following a symlink (``O_NOFOLLOW``) and checked on the
  open descriptor (``fstat``), so the file checked is the file read.

Appends (logs, result rows) never follow a symlink either: a log path in a folder
another user can write must not turn into a write to ``/etc/shadow``.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

# Not typing.TYPE_CHECKING: the output cache's replay (milliseconds) reads through here.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

_WRITABLE = stat.S_IWGRP | stat.S_IWOTH


def trusted_uid(uid: int) -> bool:
    """The user running rocmkit, or root."""
    return uid in (os.geteuid(), 0)


def _who() -> str:
    uid = os.geteuid()
    return "root (uid 0)" if uid == 0 else f"you (uid {uid}) or root"


def stat_problem(st: os.stat_result, *, folder: bool) -> str | None:
    """Why a file or folder with this ``stat`` is not safe to trust; None when it is."""
    if not trusted_uid(st.st_uid):
        return f"owned by uid {st.st_uid}, not by {_who()}"
    if st.st_mode & _WRITABLE and not (folder and st.st_mode & stat.S_ISVTX):
        who = "group and others" if st.st_mode & _WRITABLE == _WRITABLE else (
            "its group" if st.st_mode & stat.S_IWGRP else "others"
        )
        return f"writable by {who} (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def folder_problem(path: Path) -> str | None:
    """Why the folder ``path`` is not safe to load from: it, or a folder above it, fails
    the rule; None when it passes (or does not exist yet and every existing folder above
    it passes: rocmkit will make it, privately)."""
    real = Path(os.path.realpath(path))
    for p in (real, *real.parents):
        try:
            st = os.stat(p)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            return f"{p} cannot be checked ({exc.strerror})"
        if not stat.S_ISDIR(st.st_mode):
            continue  # nothing can be made (or planted) below a file: a write error, not trust
        reason = stat_problem(st, folder=True)
        if reason:
            return f"{p} is {reason}" if p == real else f"{p}, a folder above it, is {reason}"
    return None


def check_folder(path: Path, what: str, fix: str) -> None:
    """:func:`folder_problem` as an :class:`UntrustedError` (exit 13) naming ``what``."""
    from rocmkit.errors import UntrustedError

    reason = folder_problem(path)
    if reason:
        raise UntrustedError(f"{what} {path} is not safe to trust: {reason}", fix)


def check_file_as_root(path: Path, what: str, fix: str) -> None:
    """As root, :class:`UntrustedError` (exit 13) for a file root would act on (a lock, a
    wheelhouse's wheel) that another user could have written: the file (a symlink, another
    user's, writable by others) or a folder above it. Another user acts on their own words."""
    from rocmkit.errors import UntrustedError

    if os.geteuid() != 0:
        return
    reason = folder_problem(Path(path).parent)
    if reason is None and (bad := file_problem(Path(path))):
        reason = f"{path} is {bad}"
    if reason:
        raise UntrustedError(f"{what} {path} is not safe to act on as root: {reason}", fix)


def private_folder(path: Path) -> Path:
    """``path`` made (with its missing parents) mode 0700; one of ours that exists already is
    tightened to 0700. For caches and state that may hold host facts."""
    missing = []
    p = Path(path)
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    for folder in reversed(missing):
        # Made meanwhile by another rocmkit: checked like any folder.
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
    st = os.stat(path)
    if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077:
        os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)
    return Path(path)


def _open_nofollow(path: Path, flags: int, mode: int = 0o600) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0), mode)


def file_problem(path: Path) -> str | None:
    """Why the file ``path`` is not safe to load back (a symlink, not a regular file, another
    user's, writable by others); None when it is safe or absent."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be checked ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "a symlink"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    return stat_problem(st, folder=False)


def read_trusted(path: Path, *, max_bytes: int) -> bytes | None:
    """The bytes of ``path`` when it is a regular file safe to load back, at most
    ``max_bytes``; None when it is absent, unsafe, too big or unreadable (a cache miss)."""
    try:
        fd = _open_nofollow(path, os.O_RDONLY)
    except OSError:
        return None  # absent, or a symlink (ELOOP), or not ours to read
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or stat_problem(st, folder=False) or st.st_size > max_bytes:
            return None
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return None if size > max_bytes else b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def append_fd(path: Path, *, mode: int = 0o644) -> int:
    """A descriptor of ``path`` opened for appending (made with ``mode`` if missing), never
    through a symlink, and only if it is a regular file with no other hard link;
    :class:`UntrustedError` otherwise (OSError for what the disk says)."""
    import errno

    from rocmkit.errors import UntrustedError

    try:
        fd = _open_nofollow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UntrustedError(
                f"{path} is a symlink; rocmkit does not append through one (it could point anywhere)",
                "remove the link and pass a plain file (or a path in a folder only you can write)",
            ) from exc
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
        os.close(fd)
        what = "is not a regular file" if not stat.S_ISREG(st.st_mode) else "has other hard links"
        raise UntrustedError(f"{path} {what}; rocmkit does not append to it", "pass the path of a plain file")
    # Blocking writes from here on (O_NONBLOCK only guarded the open against a FIFO).
    os.set_blocking(fd, True)
    return fd


def open_append(path: Path, *, mode: int = 0o644) -> IO[str]:
    """:func:`append_fd` as a text file (UTF-8)."""
    return os.fdopen(append_fd(path, mode=mode), "a", encoding="utf-8")


# -- rocmkit's cache ------------------------------------------------------------------------

# A detection, plan or output entry is a few KiB; an index page entry well under a MiB.
MAX_CACHE_ENTRY = 16 * 1024 * 1024
CACHE_FIX = (
    "make the folder yours and writable by you alone (chown, chmod 700), or point "
    "ROCMKIT_CACHE_DIR at a folder only you (or root) can write"
)


def load_cached(path: Path, *, max_bytes: int = MAX_CACHE_ENTRY) -> bytes | None:
    """A cache entry rocmkit wrote, or None: absent, or in a folder another user can write
    (that folder, or one above it), or not a regular file of this user's or root's."""
    if folder_problem(path.parent):
        return None
    return read_trusted(path, max_bytes=max_bytes)


def store_cached(path: Path, data: bytes) -> bool:
    """Write a cache entry 0600 in a 0700 folder (it may hold host facts); nothing in a folder
    another user can write. True when written; OSError for what the disk says."""
    if folder_problem(path.parent):
        return False
    from rocmkit.util.atomicio import write_bytes_atomic

    private_folder(path.parent)
    write_bytes_atomic(path, data, mode=0o600)
    return True


COMPILE_CACHES = {"TRITON_CACHE_DIR": "triton", "TORCHINDUCTOR_CACHE_DIR": "inductor"}


@lru_cache(maxsize=8)
def _private_scratch(cache: str) -> str:
    import tempfile

    return tempfile.mkdtemp(prefix="rocmkit-compile-")


def _safe_folder(folder: Path, cache: Path) -> str:
    """``folder`` (made private) when safe to load from, else the same name in a private
    folder made for this run (0700, empty)."""
    if folder_problem(folder) is None:
        with contextlib.suppress(OSError):
            private_folder(folder)
        return str(folder)
    scratch = Path(_private_scratch(str(cache))) / folder.name
    with contextlib.suppress(OSError):
        private_folder(scratch)
    return str(scratch)


def compile_cache_dirs(cache: Path) -> dict[str, str]:
    """Where Triton and inductor keep their compiled kernels (``.so`` files they load and
    run): under ``cache`` when it is safe to load from, else in a private folder made for
    this run (0700, empty), so that nothing another user put there is ever loaded."""
    return {var: _safe_folder(Path(cache) / name, cache) for var, name in COMPILE_CACHES.items()}


def _inductor_headers(env: Mapping[str, str]) -> Path:
    """Where inductor keeps its precompiled C++ headers for a child with ``env``:
    ``<tempfile.gettempdir()>/torchinductor_<user>/precompiled_headers`` whatever
    TORCHINDUCTOR_CACHE_DIR says (torch/_inductor/codecache.py ``_HEADER_DIR``, from
    runtime/cache_dir_utils.py ``default_cache_dir``: "these headers need to be global")."""
    import re
    import tempfile

    tmp = next((env[v] for v in ("TMPDIR", "TEMP", "TMP") if env.get(v)), None) or tempfile.gettempdir()
    # getpass.getuser()'s order: the login variables, then the password database.
    user = next((env[v] for v in ("LOGNAME", "USER", "LNAME", "USERNAME") if env.get(v)), None)
    if user is None:
        import pwd

        try:
            user = pwd.getpwuid(os.getuid()).pw_name
        except KeyError:
            user = f"uid_{os.getuid()}"
    return Path(tmp) / ("torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user)) / "precompiled_headers"


def compile_env(env: dict[str, str], cache: Path) -> dict[str, str]:
    """``env`` for a child that compiles with Triton or inductor: the compile caches under
    ``cache`` unless the user named their own; and inductor's precompiled headers only where
    no other user can have put one. Inductor reuses a header it finds there and has g++
    include it into every CPU kernel it builds, and in a shared /tmp another user can make
    ``torchinductor_root`` first: then the child's TMPDIR is a private folder of ours."""
    for var, folder in compile_cache_dirs(cache).items():
        env.setdefault(var, folder)
    headers = _inductor_headers(env)
    if folder_problem(headers) is None:
        # Ours, or not there yet: made now, privately, so nobody else makes it first.
        with contextlib.suppress(OSError):
            if not headers.parent.exists():
                private_folder(headers.parent)
        if folder_problem(headers) is None:
            return env
    env["TMPDIR"] = _safe_folder(Path(cache) / "tmp", cache)
    return env


# -- an interpreter root is about to start ------------------------------------------------

# A pyvenv.cfg is a few lines; anything larger is not one.
_MAX_PYVENV_CFG = 64 * 1024
# The folders of an installation that hold what ``site`` adds to the path.
_SITE_NAMES = ("site-packages", "dist-packages")


def _pyvenv_cfg(folder: Path) -> dict[str, str] | None:
    """The ``key = value`` lines of ``folder/pyvenv.cfg`` (keys lower-cased); None when absent."""
    path = folder / "pyvenv.cfg"
    try:
        with open(path, "rb") as f:
            text = f.read(_MAX_PYVENV_CFG).decode("utf-8", "replace")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq:
            out[key.strip().lower()] = value.strip()
    return out


def _strict_problem(path: Path, st: os.stat_result) -> str | None:
    """The rule without the sticky exception: inside an interpreter's folders a sticky
    world-writable ``site-packages`` still lets anyone add a ``.pth`` file (run at start-up)."""
    if not trusted_uid(st.st_uid):
        return f"{path} is owned by uid {st.st_uid}, not by {_who()}"
    if st.st_mode & _WRITABLE:
        return f"{path} is {stat_problem(st, folder=False)}"
    return None


def _outside_problem(link: Path) -> str | None:
    """What a symlink leading out of a checked tree points to: the target and its folders."""
    target = Path(os.path.realpath(link))
    try:
        st = os.stat(target)
    except OSError:
        return None  # a dangling link loads nothing
    reason = _strict_problem(target, st)
    if reason:
        return f"{reason} (reached through {link})"
    folder = folder_problem(target if stat.S_ISDIR(st.st_mode) else target.parent)
    return f"{folder} (reached through {link})" if folder else None


def _listing(folder: str) -> tuple[list[tuple[os.DirEntry[str], os.stat_result]], str | None]:
    """What is in ``folder``, each with its ``lstat`` (entries gone meanwhile left out); or
    why it cannot be listed."""
    try:
        with os.scandir(folder) as it:
            found = list(it)
    except OSError as exc:
        return [], f"{folder} cannot be checked ({exc.strerror})"
    out = []
    for entry in found:
        with contextlib.suppress(OSError):
            out.append((entry, entry.stat(follow_symlinks=False)))
    return out, None


def _tree_problem(root: Path, skip: frozenset[str] = frozenset(), pth: list[Path] | None = None) -> str | None:
    """The first entry under ``root`` (itself included) that fails the strict rule; a symlink
    that leads out of ``root`` is followed once. ``.pth`` files found in a ``site-packages``
    are added to ``pth``; folders named in ``skip`` are not entered."""
    real_root = os.path.realpath(root)
    try:
        st = os.stat(real_root)
    except OSError:
        return None
    reason = _strict_problem(root, st)
    if reason:
        return reason
    todo = [real_root]
    while todo:
        folder = todo.pop()
        entries, failed = _listing(folder)
        if failed:
            return failed
        for entry, est in entries:
            if stat.S_ISLNK(est.st_mode):
                real = os.path.realpath(entry.path)
                if real != real_root and not real.startswith(real_root + os.sep):
                    reason = _outside_problem(Path(entry.path))
                    if reason:
                        return reason
                continue
            reason = _strict_problem(Path(entry.path), est)
            if reason:
                return reason
            if stat.S_ISDIR(est.st_mode) and entry.name not in skip:
                todo.append(entry.path)
            elif pth is not None and entry.name.endswith(".pth") and os.path.basename(folder) in _SITE_NAMES:
                pth.append(Path(entry.path))
    return None


def _pth_folders(pth: Path) -> list[Path]:
    """The folders a ``.pth`` file puts on the path (lines that are not comments or imports)."""
    try:
        with open(pth, "rb") as f:
            text = f.read(_MAX_PYVENV_CFG).decode("utf-8", "replace")
    except OSError:
        return []
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith(("import ", "import\t")):
            continue
        folder = pth.parent / line
        if folder.is_dir():
            out.append(folder)
    return out


def _shallow_problem(folder: Path) -> str | None:
    """A folder another ``.pth`` puts on the path (an editable install's source): the folder,
    those above it, and what is directly in it (what ``import NAME`` finds there)."""
    reason = folder_problem(folder)
    if reason:
        return reason
    entries, failed = _listing(str(folder))
    if failed:
        return failed
    for entry, est in entries:
        if not stat.S_ISLNK(est.st_mode):
            reason = _strict_problem(Path(entry.path), est)
            if reason:
                return reason
    return None


# What of a venv Python reads at start-up: its configuration, the folder of the interpreter,
# and the library trees (site-packages, every .pth). Not uv's ``.lock`` (made 0666), nor
# ``share``, ``include`` or ``etc``, which nothing imports.
_VENV_READ = ("pyvenv.cfg", "bin", "lib", "lib64", "Lib", "Scripts")


def _venv_problem(prefix: Path, pth: list[Path]) -> str | None:
    """The venv folder (others must not add or swap what it holds) and what Python reads in it."""
    try:
        reason = _strict_problem(prefix, os.stat(prefix))
    except OSError:
        return None
    if reason:
        return reason
    for name in _VENV_READ:
        path = prefix / name
        if not os.path.lexists(path):
            continue
        real = os.path.realpath(path)
        if os.path.islink(path) and real.startswith(os.path.realpath(prefix) + os.sep):
            continue  # lib64 -> lib: walked once, under its own name
        if name in ("bin", "Scripts") or not os.path.isdir(path):
            # pyvenv.cfg; the interpreter's folder (others must not swap the interpreter), not
            # its console scripts, which no Python start reads.
            reason = _strict_problem(path, os.stat(path))
        else:
            reason = _tree_problem(path, pth=pth)
        if reason:
            return reason
    return None


def _lib_problem(base: Path, skip: frozenset[str], pth: list[Path] | None) -> str | None:
    """The standard library folders under ``base`` (``lib/python3.X``, ``lib/python3``, a
    zipped ``lib/python3X.zip``), walked whole except the folders in ``skip``."""
    for lib in ("lib", "lib64"):
        try:
            found = sorted(os.scandir(base / lib), key=lambda e: e.name)
        except OSError:
            continue
        for entry in found:
            if not entry.name.startswith("python3"):
                continue
            if entry.is_dir():
                reason = _tree_problem(Path(entry.path), skip, pth)
            elif entry.name.endswith(".zip"):
                reason = file_problem(Path(entry.path))
            else:
                reason = None
            if reason:
                return reason
    return None


def interpreter_prefix(executable: Path) -> tuple[Path, dict[str, str] | None]:
    """The environment ``executable`` starts in, without running it: the venv folder (with its
    ``pyvenv.cfg``) when there is one next to it or one folder up, as CPython looks for it;
    else the installation prefix its real path lies in (``prefix/bin/python3``)."""
    exe = Path(os.path.abspath(executable))
    for folder in (exe.parent, exe.parent.parent):
        cfg = _pyvenv_cfg(folder)
        if cfg is not None:
            return folder, cfg
    return Path(os.path.realpath(exe)).parent.parent, None


def interpreter_problem(executable: Path) -> str | None:
    """Why root must not start ``executable``; None when everything it reads at start-up
    passes the rule. Checked without running it: the interpreter file (through its links);
    for a venv, the whole venv (``bin``, ``lib/pythonX.Y/site-packages`` and each ``.pth`` in
    it, ``pyvenv.cfg``) and the folders above it; the base installation ``pyvenv.cfg``'s
    ``home`` names (its standard library, and its site-packages when the venv includes
    them); the folders each ``.pth`` file adds to the path. No sticky exception inside: a
    ``.pth`` file anyone can add runs as root at the next start."""
    exe = Path(os.path.abspath(executable))
    if not os.path.exists(exe):
        return None  # nothing will start; the caller says it is missing
    prefix, cfg = interpreter_prefix(exe)
    # The folder holding the name started (a link anyone there could replace), then the file.
    reason = folder_problem(exe.parent) or (_outside_problem(exe) if os.path.islink(exe) else None)
    if reason:
        return reason
    pth: list[Path] = []
    base_site = True
    if cfg is not None:
        reason = folder_problem(prefix.parent) or _venv_problem(prefix, pth)
        if reason:
            return reason
        base_site = cfg.get("include-system-site-packages", "false").lower() == "true"
        home = cfg.get("home")
        # ``home`` is the base interpreter's folder (``prefix/bin``); without one, CPython
        # falls back on the executable's real path.
        base = Path(os.path.realpath(home)).parent if home else Path(os.path.realpath(exe)).parent.parent
    else:
        base = prefix
        reason = _strict_problem(Path(os.path.realpath(exe)), os.stat(exe))
        if reason:
            return reason
    reason = folder_problem(base)
    if reason:
        return reason
    skip = frozenset() if base_site else frozenset(_SITE_NAMES)
    # Debian's and Ubuntu's /usr/bin/python3 also reads /usr/local/lib/python3.X/dist-packages.
    for root in (base, Path("/usr/local")) if base_site and base == Path("/usr") else (base,):
        reason = _lib_problem(root, skip, pth if base_site else None)
        if reason:
            return reason
    for file in pth:
        for folder in _pth_folders(file):
            reason = _shallow_problem(folder)
            if reason:
                return f"{reason} (put on the path by {file})"
    return None
