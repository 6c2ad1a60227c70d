"""``rocmkit slurm healthcheck`` and ``rocmkit slurm prolog``: what they decide and log.

The health check (slurm.conf ``HealthCheckProgram``, in the style of LBNL's
Node Health Check) drains this node when a fast check fails, with a reason that
names the check (``rocmkit: env.device_nodes``), and resumes it once the checks
pass again, but only when rocmkit drained it: a node drained for any other
reason (an admin, Slurm itself) is left alone.

The prolog (``Prolog=``/``Epilog=``) runs the same checks per job and only
exits non-zero on a failure: slurmd then drains the node itself ("Prolog
error") and requeues the job, so a job never starts on a broken node.
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

from rocmkit.slurm.checks import Outcome, drain_reason
from rocmkit.slurm.scontrol import NodeState


class Action(str, Enum):
    DRAIN = "drain"  # drain it (or update rocmkit's reason)
    RESUME = "resume"  # rocmkit drained it and it is healthy now
    KEEP = "keep"  # nothing to change
    ADMIN = "admin"  # failing, but drained by someone else: leave their reason


def decide(state: NodeState, outcome: Outcome) -> tuple[Action, str]:
    """What to do with the node, and the drain reason where there is one."""
    if outcome.unchecked:
        return Action.KEEP, ""
    if outcome.findings:
        reason = drain_reason(outcome.findings)
        if state.drained and not state.drained_by_rocmkit:
            return Action.ADMIN, reason
        if state.drained and state.reason == reason:
            return Action.KEEP, reason
        return Action.DRAIN, reason
    if state.drained_by_rocmkit:
        return Action.RESUME, ""
    return Action.KEEP, ""


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
        print(f"{self.tag}: {line}", file=sys.stderr)
        if self.target == "syslog":
            import syslog

            syslog.syslog(syslog.LOG_ERR if error else syslog.LOG_INFO, line)
        elif self.target:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            try:
                with Path(self.target).open("a", encoding="utf-8") as f:
                    f.write(f"{stamp} {self.tag}: {line}\n")
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


def health_check(
    node: str, outcome: Outcome, control: NodeControl, log: Log, *, drain: bool = True
) -> HealthResult:
    """Apply :func:`decide` to the node; exit code 0 healthy, 1 failing, 3 not checked."""
    log_outcome(log, node, outcome)
    state = control.node(node)
    action, reason = decide(state, outcome)
    if action is Action.DRAIN and drain:
        control.drain(node, reason)
        log(f"{node}: drained ({reason}); it was {state.state}", error=True)
    elif action is Action.DRAIN:
        log(f"{node}: would drain ({reason}); --no-drain given", error=True)
    elif action is Action.ADMIN:
        log(f"{node}: failing ({reason}) but already drained by someone else ({state.reason!r}): left as is")
    elif action is Action.RESUME and drain:
        control.resume(node)
        log(f"{node}: healthy again after {state.reason!r}: resumed")
    elif outcome.unchecked:
        log(f"{node}: not checked (rocmkit could not run its checks): node left {state.state}", error=True)
    elif not outcome.findings:
        log(f"{node}: healthy ({outcome.ran} checks)")
    code = 3 if outcome.unchecked else (1 if outcome.findings else 0)
    return HealthResult(action=action, reason=reason, exit_code=code)


def prolog(node: str, outcome: Outcome, log: Log, *, job: str | None) -> int:
    """Exit code for slurmd: non-zero makes Slurm drain the node and requeue the job."""
    log_outcome(log, node, outcome)
    what = f"job {job}" if job else "this job"
    if outcome.findings:
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
