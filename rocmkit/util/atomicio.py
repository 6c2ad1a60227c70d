"""Atomic file writes: a reader (or an interrupt) never sees half a file.

Every file rocmkit writes for a user or another process (plans, locks,
reports, generated matrices, state files) goes through here: the bytes are
written to a temporary file in the same directory, flushed to disk, then
renamed over the target, which POSIX makes atomic within one filesystem.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_bytes_atomic(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace *path* with *data* in one step; on any failure *path* is unchanged."""

    path = Path(path)
    try:
        _write(path, data, mode)
    except OSError as exc:
        # Name the file the user asked for, not the temporary one (errors.storage_error says it).
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


def _write(path: Path, data: bytes, mode: int | None) -> None:
    import tempfile  # here, not at the top: the hot read-only paths (resolve, detect) never write

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        elif path.exists():
            # Keep the permissions of the file being replaced (mkstemp makes 0600).
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: Path, text: str, *, mode: int | None = None) -> None:
    """Text form of :func:`write_bytes_atomic` (UTF-8)."""
    write_bytes_atomic(path, text.encode("utf-8"), mode=mode)
