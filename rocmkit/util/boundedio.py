"""The one reader for files rocmkit did not write: live sysfs/proc files, capture files, user files.

A capture folder comes from someone else, and even a live ``/sys`` path can be
a surprise. Every read through :func:`read_bounded`:

- opens regular files only: a FIFO would block forever and ``/dev/zero`` never
  ends, so anything else is refused from ``stat`` alone, before ``open``
  (opening some devices has side effects), and checked again with ``fstat``
  after it (the path may have been swapped in between);
- opens with ``O_NONBLOCK``, so that even a FIFO swapped in after the check
  cannot block the open;
- stays inside ``root`` when one is given: a symlink in a capture that points
  out of the capture folder (``/etc/shadow``, ``/dev/zero``) is refused;
- reads at most ``max_bytes``: past that it either stops (``truncate``, for
  live files whose head is all that matters) or refuses the file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

Kind = Literal["missing", "not-regular", "escapes", "too-big", "io"]
CHUNK = 65536


class BoundedReadError(OSError):
    """Why a file could not be read; ``kind`` says which rule refused it."""

    def __init__(self, kind: Kind, message: str, fix: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.fix = fix

    def __str__(self) -> str:
        return str(self.args[0])


def _describe(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def inside(path: Path, root: Path) -> Path:
    """``path`` with every symlink resolved, provided it stays under ``root``."""
    real = Path(os.path.realpath(path))
    real_root = Path(os.path.realpath(root))
    if real != real_root and real_root not in real.parents:
        raise BoundedReadError(
            "escapes",
            f"{path} leads out of {root} (to {real})",
            "a capture holds plain files only; replace the link with a copy of the file",
        )
    return real


def read_bounded(path: Path, *, max_bytes: int, root: Path | None = None, truncate: bool = False) -> bytes:
    """The bytes of the regular file ``path`` (see the module doc for the rules)."""
    target = inside(path, root) if root is not None else Path(path)
    try:
        st = os.stat(target)
    except FileNotFoundError as exc:
        raise BoundedReadError("missing", f"{path} does not exist", "check the path") from exc
    except OSError as exc:
        raise BoundedReadError("io", f"cannot read {path}: {exc.strerror}", "check its permissions") from exc
    if not stat.S_ISREG(st.st_mode):
        raise BoundedReadError(
            "not-regular", f"{path} is {_describe(st.st_mode)}", "pass a regular file in its place"
        )
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(target, flags)
    except OSError as exc:
        raise BoundedReadError("io", f"cannot read {path}: {exc.strerror}", "check its permissions") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BoundedReadError(
                "not-regular", f"{path} is {_describe(st.st_mode)}", "pass a regular file in its place"
            )
        chunks: list[bytes] = []
        size = 0
        # Chunked: /proc/sys files fail with ENOMEM on one big read, and sysfs
        # reports 4096 for every size, so st_size cannot be trusted.
        while size <= max_bytes:
            try:
                chunk = os.read(fd, min(CHUNK, max_bytes + 1 - size))
            except OSError as exc:
                raise BoundedReadError("io", f"cannot read {path}: {exc.strerror}", "check the file") from exc
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            if truncate:
                return data[:max_bytes]
            raise BoundedReadError(
                "too-big",
                f"{path} is over rocmkit's limit of {max_bytes} bytes",
                "pass the file rocmkit wrote, not another one",
            )
        return data
    finally:
        os.close(fd)
