"""Every user-facing error, with its exit code.

Only ``rocmkit.cli.main`` turns these into exit codes and one-line messages;
everything below raises them. A message says what is wrong; ``fix`` says what
to do about it. No traceback is ever shown for these.

Exit codes (documented in README.md):

==== ==========================================================
0    success (doctor: every check passed)
1    doctor: at least one check failed
2    doctor: warnings only / click usage error (unknown option)
3    doctor: a check could not run
4    bad input: a capture, file or argument that cannot be used
5    corrupt or invalid data (a matrix file, a report)
6    nothing fits: no plan satisfies the constraints
7    an external tool or command failed (pip, uv, git, a build step)
8    the environment is unsafe to modify (PEP 668, no venv)
9    network: an index or URL does not answer
10   interrupted (Ctrl-C, SIGTERM, SIGHUP); an install restores the environment
11   another rocmkit install holds this environment's lock
12   cannot write: the disk is full or the file system is read-only
13   untrusted: a file or folder rocmkit would act on (an install journal, a cache
     folder) is not safe: a symlink, another user's, writable by others, or edited
==== ==========================================================
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Stands, in a fix, for the command line that failed: the CLI's printer writes it out
# (`rocmkit install --venv .venv`), so that the fix is a command to copy. See `rerun`.
RERUN = "\x00rerun"
# The longest line an error may print (its message, then each fix): what a terminal shows whole.
MAX_LINE = 160


def rerun(*extra: str) -> str:
    """A fix that is the failed command again, with ``extra`` options (``--fallback-index``)."""
    return " ".join((RERUN, *extra))


def _flat(text: str) -> str:
    # One line whatever the text quotes (a parser's multi-line error, a file's text).
    return re.sub(r"\s*[\r\n]+\s*", " ", text).strip()


# The option families (cli/folds.py): their words add up, so a fix that gives one keeps those the
# command line already has (`--allow insecure-index` + the fix's `--allow redirect=HOST`).
FAMILIES = ("--allow", "--skip", "--report")
# Options a fix's option also replaces: the old spellings it folded (kept one release as hidden
# aliases, cli/backend.py), each with whether it takes a value.
REPLACES = {"--backend": {"--rocm": True, "--cuda": True, "--cpu": False}}


def _again(argv: Sequence[str], extra: str) -> str:
    """The command line ``argv`` with the options of ``extra`` ("--index-base URL") in place of
    the same options already on it, so that a fix never gives an option twice (a family's word
    is added to the words given, unless it is one of them)."""
    import shlex

    words = extra.split()
    given = {(w, argv[i + 1]) for i, w in enumerate(argv[:-1]) if w in FAMILIES}
    if len(words) == 2 and words[0] in FAMILIES:
        return "rocmkit " + shlex.join([*argv, *(() if tuple(words) in given else words)])
    values = {w: words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("-") else None
              for i, w in enumerate(words) if w.startswith("--")}
    for option in list(values):
        values.update({old: "" if takes else None for old, takes in REPLACES.get(option, {}).items()})
    kept: list[str] = []
    skip = False
    for i, word in enumerate(argv):
        if skip:
            skip = False
            continue
        name = word.split("=", 1)[0]
        if name in values:
            # The value it had goes too, when the fix gives one (and it was not --opt=value).
            skip = values[name] is not None and "=" not in word and i + 1 < len(argv)
            continue
        kept.append(word)
    return " ".join(["rocmkit", shlex.join(kept), *words]).replace("  ", " ").rstrip()


def _command(fix: str, argv: Sequence[str] | None = None) -> str:
    """``fix`` as printed: one command in backticks bare, to copy; :func:`rerun` written out
    with ``argv`` (the failed command's arguments), or in words when they are not known."""
    if len(fix) > 2 and fix[0] == fix[-1] == "`" and "`" not in fix[1:-1]:
        fix = fix[1:-1]
    if RERUN in fix:
        head, _, rest = fix.partition(RERUN)
        extra, sep, comment = rest.partition("   #")
        if argv:
            return head + _again(argv, extra.strip()) + (sep + comment if sep else "")
        extra = extra.strip()
        said = f"run it again with {extra}" if extra else "run it again"
        return head + said + (sep + comment if sep else "")
    return fix


class RocmkitError(Exception):
    """Base of every error the user is meant to read.

    ``fix`` is one fix or several, the most likely first; each is printed on its own
    ``fix:`` line, best a command to copy (:func:`rerun` for "the same command, plus ...")."""

    exit_code = 4

    def __init__(self, message: str, fix: str | Sequence[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fixes: tuple[str, ...] = (fix,) if isinstance(fix, str) else tuple(fix or ())
        # The fixes as one phrase, for a one-line report (a doctor check's remedy).
        self.fix = "; or ".join(_command(f) for f in self.fixes) or None

    def lines(self, argv: Sequence[str] | None = None) -> list[str]:
        """What the CLI prints: ``error: ...`` (what is wrong), then one ``fix: ...`` per fix.
        ``argv`` (the command's arguments) fills in :func:`rerun` fixes."""
        out = [f"error: {_flat(self.message)}"]
        out += [f"fix: {_flat(_command(f, argv))}" for f in self.fixes]
        return out

    def one_line(self) -> str:
        """The error and its fixes in one line, for a report or a log line."""
        text = f"error: {self.message} (fix: {self.fix})" if self.fix else f"error: {self.message}"
        return _flat(text)


class UsageError(RocmkitError):
    """A bad argument or a combination of options that cannot work."""

    exit_code = 4


class CaptureError(RocmkitError):
    """A capture folder that does not exist or cannot be read."""

    exit_code = 4


class DataError(RocmkitError):
    """A data file (matrix, report, lock file) that is corrupt or invalid."""

    exit_code = 5


class NoPlanError(RocmkitError):
    """No combination in the matrix satisfies the machine and the constraints."""

    exit_code = 6


class ToolError(RocmkitError):
    """An external command (pip, uv, git, a build step) failed."""

    exit_code = 7


class UnsafeEnvironmentError(RocmkitError):
    """rocmkit refuses to modify this environment without an explicit flag."""

    exit_code = 8


class NetworkError(RocmkitError):
    """A package index or URL does not answer."""

    exit_code = 9


class InterruptedStateError(RocmkitError):
    """A long operation stopped; its state is kept so that it can resume."""

    exit_code = 10


class LockHeldError(RocmkitError):
    """Another rocmkit process holds the lock of the environment to change."""

    exit_code = 11


class StorageError(RocmkitError):
    """A write failed for want of space or of a writable file system."""

    exit_code = 12


class UntrustedError(RocmkitError):
    """A file or folder rocmkit would load or act on is not safe to trust (owner, mode,
    a symlink, a journal edited since its install wrote it): nothing was written or stopped."""

    exit_code = 13


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C would be, so that every cleanup that
    handles an interrupt (restore the venv, stop the child's process group) runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def storage_error(exc: OSError) -> RocmkitError | None:
    """The user-facing form of a failed write (full disk, read-only file system,
    no permission), or None for an OSError that is a bug to show in full."""
    import errno

    where = exc.filename or "a file"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StorageError(f"no space left to write {where}", "free some disk space (or quota) and run again")
    if exc.errno == errno.EROFS:
        return StorageError(
            f"cannot write {where}: the file system is read-only",
            "point rocmkit at a writable folder (ROCMKIT_CACHE_DIR for its cache)",
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return UsageError(f"permission denied: {where}", ("pick another path", "run as a user who may write there"))
    return None
