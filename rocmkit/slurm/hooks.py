"""``rocmkit slurm healthcheck`` and ``rocmkit slurm prolog``: what they decide and log.

The health check (slurm.conf ``HealthCheckProgram``, in the style of LBNL's
Node Health Check) drains this node when a fast check fails, with a reason that
names the check (``rocmkit: env.device_nodes``), and resumes it once the checks
pass again, but only when rocmkit drained it: a node drained for any other
reason (an admin, Slurm itself) is left alone.

The prolog (``Prolog=``/``Epilog=``) runs the same checks per job and only
exits non-zero on a failure: slurmd then drains the node itself ("Prolog
error") and requeues the job, held, so a job never starts on a broken node.
The prolog leaves a mark in ``/run`` when it fails, so the health check can
resume a node drained with Slurm's "Prolog error" once rocmkit's checks pass.

A node whose configured venv or Python is gone is a node fault and is drained
(``rocmkit: venv missing``). When rocmkit itself cannot run its checks, the node is
left as it is the first time, loudly; a second such run in a row drains it
(``rocmkit: cannot check``), since a node nobody can check is not known good.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Protocol

from rocmkit.doctor.result import Status
from rocmkit.slurm.checks import Finding, Outcome, drain_reason
from rocmkit.slurm.scontrol import NodeState

# Slurm's own reason for a node whose Prolog exited non-zero.
PROLOG_ERROR = "Prolog error"
# Runs in a row that could not check the node before it is drained for that.
UNCHECKED_DRAIN_AFTER = 2
# A prolog mark older than this does not make a "Prolog error" drain rocmkit's.
PROLOG_MARK_MAX_AGE_S = 24 * 3600.0
MEMO_MAX_BYTES = 64


class Action(str, Enum):
    DRAIN = "drain"  # drain it (or update rocmkit's reason)
    RESUME = "resume"  # rocmkit drained it and it is healthy now
    KEEP = "keep"  # nothing to change
    ADMIN = "admin"  # failing, but drained by someone else: leave their reason


def decide(state: NodeState, outcome: Outcome, *, prolog_ours: bool = False) -> tuple[Action, str]:
    """What to do with the node, and the drain reason where there is one. ``prolog_ours``:
    rocmkit's prolog failed here lately, so a "Prolog error" drain is rocmkit's to lift."""
    if outcome.unchecked:
        return Action.KEEP, ""
    ours = state.drained_by_rocmkit or (
        prolog_ours and state.drained and state.reason.startswith(PROLOG_ERROR)
    )
    if outcome.findings:
        reason = drain_reason(outcome.findings)
        if state.drained and not ours:
            return Action.ADMIN, reason
        if state.drained and state.reason == reason:
            return Action.KEEP, reason
        return Action.DRAIN, reason
    if ours:
        return Action.RESUME, ""
    return Action.KEEP, ""


class NodeMemo:
    """What one hook run leaves for the next on this node: how many runs in a row could not
    check it, and whether rocmkit's prolog failed here. Kept in root's ``/run`` (a tmpfs, so
    a reboot forgets it), each a small file read only when it is a regular file (never
    through a symlink) owned by this user and writable by no one else: a file planted by
    another user cannot resume a node or hold one drained."""

    def __init__(self, node: str, folder: Path = Path("/run")) -> None:
        self.folder = folder
        self.unchecked_path = folder / f"rocmkit-healthcheck-{node}.unchecked"
        self.prolog_path = folder / f"rocmkit-prolog-{node}.failed"

    def _read(self, path: Path) -> tuple[str, float] | None:
        import stat

        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
                return None
            return os.read(fd, MEMO_MAX_BYTES).decode("ascii", "replace"), st.st_mtime
        finally:
            os.close(fd)

    def _write(self, path: Path, text: str) -> bool:
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, text.encode("ascii"))
            finally:
                os.close(fd)
            os.replace(tmp, path)  # replaces a planted file or symlink, never writes through it
            return True
        except OSError:
            tmp.unlink(missing_ok=True)
            return False

    def bump_unchecked(self) -> int:
        """One more run that could not check the node; the count so far (0: not recorded)."""
        got = self._read(self.unchecked_path)
        count = (int(got[0]) if got and got[0].strip().isdigit() else 0) + 1
        return count if self._write(self.unchecked_path, str(count)) else 0

    def clear_unchecked(self) -> None:
        self.unchecked_path.unlink(missing_ok=True)

    def mark_prolog_failure(self, job: str | None) -> None:
        self._write(self.prolog_path, (job or "-")[:32])

    def prolog_failed(self, now: float | None = None) -> bool:
        got = self._read(self.prolog_path)
        return got is not None and (now or time.time()) - got[1] < PROLOG_MARK_MAX_AGE_S

    def clear_prolog(self) -> None:
        self.prolog_path.unlink(missing_ok=True)


class NodeControl(Protocol):
    def node(self, name: str) -> NodeState: ...
    def drain(self, name: str, reason: str) -> None: ...
    def resume(self, name: str) -> None: ...


class Log:
    """One line per event: to a file (appended), to syslog, or to stderr only."""

    def __init__(self, target: str | None, tag: str) -> None:
        self.tag = tag
        self.target = target
        if target == "syslog":
            import syslog

            syslog.openlog(tag, syslog.LOG_PID, syslog.LOG_DAEMON)

    def __call__(self, line: str, *, error: bool = False) -> None:
        from rocmkit.util.redact import redact_text

        # A finding's message may quote a mirror URL: the log and syslog get it masked too.
        line = redact_text(line)
        print(f"{self.tag}: {line}", file=sys.stderr)
        if self.target == "syslog":
            import syslog

            syslog.syslog(syslog.LOG_ERR if error else syslog.LOG_INFO, line)
        elif self.target:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            from rocmkit.errors import UntrustedError
            from rocmkit.util.trust import open_append

            try:
                # Never through a symlink: slurmd runs this as root, and /var/log/slurm may
                # be writable by the slurm user.
                with open_append(Path(self.target)) as f:
                    f.write(f"{stamp} {self.tag}: {line}\n")
            except UntrustedError as exc:
                print(f"{self.tag}: refusing to write the log: {exc.message}", file=sys.stderr)
            except OSError as exc:
                print(f"{self.tag}: cannot write the log {self.target}: {exc}", file=sys.stderr)


@contextmanager
def single_run(node: str, folder: Path = Path("/run")) -> Iterator[bool]:
    """True while this is the node's only health check; False when one still runs.

    slurmd starts the next run on time even when the last one has not finished (a
    slow import, a hung GPU within the budget), and two runs could then undo each
    other (one resuming the node after the other read its state). ``/run`` is
    root's; where it cannot be written the run goes ahead unlocked."""
    try:
        fd = os.open(folder / f"rocmkit-healthcheck-{node}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        yield True
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing releases the lock


def node_name(given: str | None, env: dict[str, str]) -> str:
    """--node, else slurmd's SLURMD_NODENAME (prolog), else the short hostname."""
    return given or env.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def log_outcome(log: Log, node: str, outcome: Outcome) -> None:
    for note in outcome.notes:
        log(f"{node}: note: {note}")
    for f in outcome.findings:
        fix = f" (fix: {f.remedy})" if f.remedy else ""
        log(f"{node}: [{f.status.value}] {f.check} ({f.source}): {f.message}{fix}", error=True)


@dataclass(frozen=True, kw_only=True)
class HealthResult:
    action: Action
    reason: str
    exit_code: int


def _unchecked(node: str, outcome: Outcome, memo: NodeMemo | None, log: Log) -> Outcome:
    """The second run in a row that could not check the node turns into a finding."""
    if not outcome.unchecked:
        if memo is not None:
            memo.clear_unchecked()
        return outcome
    count = memo.bump_unchecked() if memo is not None else 0
    if count >= UNCHECKED_DRAIN_AFTER:
        why = "; ".join(outcome.notes) or "no report"
        return Outcome(
            findings=(
                Finding(
                    check="cannot check",
                    status=Status.ERROR,
                    message=f"rocmkit could not run its checks {count} times in a row ({why})",
                    remedy="run `rocmkit slurm healthcheck --no-drain` by hand on the node and read its log",
                ),
            ),
            notes=outcome.notes,
        )
    log(
        f"{node}: NOT CHECKED: rocmkit could not run its checks"
        + (f" (run {count} in a row; the next such run drains the node)" if count else " (no /run to count in)"),
        error=True,
    )
    return outcome


def health_check(
    node: str,
    outcome: Outcome,
    control: NodeControl,
    log: Log,
    *,
    drain: bool = True,
    memo: NodeMemo | None = None,
) -> HealthResult:
    """Apply :func:`decide` to the node; exit code 0 healthy, 1 failing, 3 not checked."""
    outcome = _unchecked(node, outcome, memo, log)
    log_outcome(log, node, outcome)
    state = control.node(node)
    prolog_ours = memo is not None and memo.prolog_failed()
    action, reason = decide(state, outcome, prolog_ours=prolog_ours)
    if action is Action.DRAIN and drain:
        control.drain(node, reason)
        log(f"{node}: drained ({reason}); it was {state.state}", error=True)
    elif action is Action.DRAIN:
        log(f"{node}: would drain ({reason}); --no-drain given", error=True)
    elif action is Action.ADMIN:
        log(f"{node}: failing ({reason}) but already drained by someone else ({state.reason!r}): left as is")
    elif action is Action.RESUME and drain:
        control.resume(node)
        if memo is not None:
            memo.clear_prolog()
        log(f"{node}: healthy again after {state.reason!r}: resumed")
    elif outcome.unchecked:
        log(f"{node}: not checked (rocmkit could not run its checks): node left {state.state}", error=True)
    elif not outcome.findings:
        log(f"{node}: healthy ({outcome.ran} checks)")
    code = 3 if outcome.unchecked else (1 if outcome.findings else 0)
    return HealthResult(action=action, reason=reason, exit_code=code)


def prolog(node: str, outcome: Outcome, log: Log, *, job: str | None, memo: NodeMemo | None = None) -> int:
    """Exit code for slurmd: non-zero makes Slurm drain the node ("Prolog error") and requeue
    the job held; the mark left in ``memo`` lets the health check lift that drain later."""
    log_outcome(log, node, outcome)
    what = f"job {job}" if job else "this job"
    if outcome.findings:
        if memo is not None:
            memo.mark_prolog_failure(job)
        log(
            f"{node}: {drain_reason(outcome.findings)}: refusing {what} (Slurm drains the node and requeues it)",
            error=True,
        )
        return 1
    if outcome.unchecked:
        log(f"{node}: not checked (rocmkit could not run its checks): {what} may start", error=True)
        return 0
    log(f"{node}: healthy ({outcome.ran} checks): {what} may start")
    return 0
