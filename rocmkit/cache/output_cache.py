"""What ``rocmkit detect`` and an offline ``rocmkit resolve`` printed, replayed on a rerun.

Both are interactive, and on a machine whose state did not change they print the same
bytes again: the work is a couple of milliseconds, the rest of a run is importing click,
the probes and the resolver. So :func:`rocmkit.cli.main` asks here first, before any of
that is imported: a command line seen before, with every input the same, is answered by
writing what it printed then.

The key is everything the output is a function of: the detection state key of
:mod:`rocmkit.cache.detect_cache` (boot, drivers, device nodes, mounts, tools on PATH, the
variables detection reads, the matrix folder and its checksum), rocmkit's own source files (name, size, mtime: an edited checkout is another rocmkit), the
interpreter (resolve's default target Python), every ``ROCMKIT_*`` variable, and the
command line itself. An entry expires with the detection it came from
(:data:`rocmkit.cache.detect_cache.MAX_AGE_S`).

Only what is a pure function of that key is stored; the command decides, by calling
:func:`cacheable`: ``detect`` of this machine, and ``resolve`` of this machine with
``--offline`` (without it, resolve asks the index what it serves now, and that answer is
never replayed). A capture replay (``--capture``), ``--fresh`` and ``--help`` never read an
entry; a run that fails stores none.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence

# Not typing.TYPE_CHECKING: a replay should not pay for importing typing.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import TextIO

SCHEMA = "rocmkit.output-cache/1"
COMMANDS = ("detect", "resolve")
# Never cached: a capture is another machine (read it again), help is not an answer, and
# --output writes a file (a replay would not). --fresh is not replayed, but what it prints is
# stored for the next run.
_NEVER = ("--capture", "-h", "--help", "--output")
FRESH = "--fresh"

# Set by the running command through cacheable(): when its inputs were detected, and until
# when what else it read stays fresh (an online resolve: the index answers it used).
_detected_at: float | None = None
_fresh_until: float | None = None


def cacheable(detected_at: float, *, until: float | None = None) -> None:
    """The running command's output is a pure function of the key; its machine was
    detected at ``detected_at`` (epoch seconds). ``until``: the output also rests on answers
    that are fresh until then (epoch seconds), and is not replayed after it."""
    global _detected_at, _fresh_until
    _detected_at = detected_at
    _fresh_until = until


def _source_stamp() -> str:
    """rocmkit's Python files, by name, size and mtime: a changed checkout is another key."""
    out: list[str] = []
    stack = [os.path.dirname(os.path.dirname(os.path.realpath(__file__)))]  # all of rocmkit/
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        stack.append(entry.path)
                elif entry.name.endswith(".py"):
                    st = entry.stat()
                    out.append(f"{entry.path}:{st.st_size}:{st.st_mtime_ns}")
    return "\n".join(sorted(out))


def output_key(argv: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The key of ``argv``'s output, or None where it is never cached."""
    if not argv or argv[0] not in COMMANDS:
        return None
    if any(a in _NEVER or a.startswith(("--capture=", "--output=")) for a in argv):
        return None
    import hashlib

    from rocmkit import __version__
    from rocmkit.cache.detect_cache import state_key

    # The state key already holds the matrix folder and its checksum.
    state = state_key(environ)
    if state is None:
        return None
    parts = [
        SCHEMA,
        __version__,
        state,
        _source_stamp(),
        sys.executable,
        sys.version,
        json.dumps([a for a in argv if a != FRESH]),
        json.dumps(sorted((k, v) for k, v in environ.items() if k.startswith("ROCMKIT_"))),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def _folder() -> Path:
    from rocmkit.util.paths import cache_dir

    return cache_dir() / "output"


class Recording:
    """One command line's lookup, and what it writes, to store when it may be."""

    def __init__(self, argv: Sequence[str], key: str, *, now: Callable[[], float] = time.time) -> None:
        self.argv = list(argv)
        self.key = key
        self.path = _folder() / f"{key}.json"
        self.chunks: list[tuple[bool, str]] = []
        self.now = now

    def replay(self, out: TextIO | None = None, err: TextIO | None = None) -> bool:
        """Write the stored output and return True, or return False (nothing stored, or
        stale, or unreadable: the command then runs)."""
        if FRESH in self.argv:
            return False
        from rocmkit.cache.detect_cache import MAX_AGE_S
        from rocmkit.util.trust import load_cached

        try:
            # Only an entry of this user's (or root's) in a folder nobody else can write: a
            # replay prints what the entry says, as if this machine had said it.
            data = json.loads(load_cached(self.path) or b"{}")
            if data.get("schema") != SCHEMA or not 0 <= self.now() - float(data["detected_at"]) < MAX_AGE_S:
                return False
            until = data.get("fresh_until")
            if until is not None and not self.now() < float(until):
                return False  # the index answers it printed are stale: ask again
            chunks = [(bool(e), str(t)) for e, t in data["chunks"]]
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return False
        stdout = out or sys.stdout
        stderr = err or sys.stderr
        try:
            for to_err, text in chunks:
                stream = stderr if to_err else stdout
                stream.write(text)
                stream.flush()
        except BrokenPipeError:
            # As the command itself: a reader that went away (`| head`) is not an error.
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
            sys.exit(0)
        return True

    def commit(self) -> None:
        """Store what the command wrote, if it said its output may be replayed."""
        detected_at = _detected_at
        if detected_at is None or not self.chunks:
            return
        # click strips colour codes when not writing to a terminal: a replay would not.
        if any("\x1b" in text for _, text in self.chunks):
            return
        from rocmkit.util.redact import redact_text
        from rocmkit.util.trust import store_cached

        payload = {
            "schema": SCHEMA,
            # Said for the reader of the file only; a mirror's token on the command line
            # (--index-base https://user:token@...) never reaches the disk.
            "argv": [redact_text(a) for a in self.argv],
            "detected_at": detected_at,
            "fresh_until": _fresh_until,
            "chunks": self.chunks,
        }
        # A cache that cannot be written is a slower rerun, never a failed command.
        with contextlib.suppress(OSError):
            store_cached(self.path, json.dumps(payload).encode())


def start(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> Recording | None:
    """The recording for this command line, or None where its output is never cached."""
    global _detected_at, _fresh_until
    _detected_at = _fresh_until = None
    try:
        key = output_key(argv, os.environ if environ is None else environ)
    except OSError:
        return None
    return None if key is None else Recording(argv, key)
