"""The generic, resumable step runner.

A :class:`Recipe` is an ordered list of :class:`Step` s (argument lists, never a shell). Running
it executes each step through :func:`rocmkit.proc.runner.run` with one log file per step, and records
progress in a JSON state file in the build folder. A step counts as done only when it exited 0
(or with a code the step declares as success, see ``Step.ok_codes``).
Each step has a key chained from its own definition and every step before it, so a plan that
changes re-runs the first changed step and everything after it, while an unchanged prefix is
kept. After a failure or an interrupt the same command resumes at the first step not done.
The torch recipe and the tests' tiny recipe use exactly this code.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rocmkit.errors import DataError, InterruptedStateError, ToolError, UsageError, rerun
from rocmkit.proc.runner import CommandResult
from rocmkit.util.ticker import waiting

STATE_FILE = "rocmkit-build-state.json"
STATE_SCHEMA = "rocmkit.build-state/1"
PLAN_SCHEMA = "rocmkit.build-plan/1"
LOG_DIR = "logs"
TAIL_LINES = 30


@dataclass(frozen=True, kw_only=True)
class Step:
    """One command of a build, with everything needed to run it again the same way."""

    name: str  # unique within a recipe: "torch-wheel"
    title: str  # one line for people
    argv: tuple[str, ...]
    cwd: str | None = None  # absolute; None = the build folder
    env: dict[str, str] = field(default_factory=dict)  # set on top of the caller's environment
    timeout_s: float = 3600.0
    # Removed before the step (re)runs, so a step that died half-way starts from clean ground
    # (a half-cloned repository would make `git clone` refuse to run again).
    clean: tuple[str, ...] = ()
    why: str = ""  # a comment for the plan and the script
    # Exit codes that count as done. Only 0, except where a tool's non-zero code means
    # "worked, with remarks" (rocmkit doctor: 2 = warnings only).
    ok_codes: tuple[int, ...] = (0,)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["argv"] = list(self.argv)
        data["clean"] = list(self.clean)
        data["ok_codes"] = list(self.ok_codes)
        return data


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """A build plan: the steps plus what a person needs to judge them."""

    title: str  # "torch 2.7.1 for gfx1031 (ROCm)"
    build_dir: str
    wheelhouse: str
    steps: tuple[Step, ...]
    env: dict[str, str] = field(default_factory=dict)  # the build environment, for display
    notes: tuple[str, ...] = ()  # rules used, unconfirmed facts, assumptions
    facts: dict[str, Any] = field(default_factory=dict)  # torch version, archs, sources, ...

    def __post_init__(self) -> None:
        names = [s.name for s in self.steps]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise UsageError(f"recipe {self.title!r} has duplicate step names: {', '.join(dupes)}")

    def step_keys(self) -> list[str]:
        """A key per step, chained: it changes when the step or any step before it changes."""
        keys: list[str] = []
        prev = ""
        for step in self.steps:
            blob = json.dumps(step.to_dict(), sort_keys=True)
            prev = hashlib.sha256((prev + blob).encode()).hexdigest()[:16]
            keys.append(prev)
        return keys

    def fingerprint(self) -> str:
        keys = self.step_keys()
        return keys[-1] if keys else ""

    def log_path(self, index: int) -> Path:
        return Path(self.build_dir) / LOG_DIR / f"{index + 1:02d}-{self.steps[index].name}.log"

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": PLAN_SCHEMA,
            "title": self.title,
            "build_dir": self.build_dir,
            "wheelhouse": self.wheelhouse,
            "env": dict(self.env),
            "notes": list(self.notes),
            "facts": dict(self.facts),
            "fingerprint": self.fingerprint(),
            "steps": [
                {**s.to_dict(), "key": k, "log": str(self.log_path(i))}
                for i, (s, k) in enumerate(zip(self.steps, self.step_keys(), strict=True))
            ],
        }


class Runner(Protocol):
    def __call__(
        self,
        argv: Sequence[str],
        *,
        timeout: float = ...,
        env: Mapping[str, str] | None = ...,
        cwd: str | os.PathLike[str] | None = ...,
        log_path: str | os.PathLike[str] | None = ...,
    ) -> CommandResult: ...


@dataclass(frozen=True, kw_only=True)
class StepRecord:
    name: str
    key: str
    status: str  # "done" | "running" | "failed" | "interrupted"
    duration_s: float = 0.0
    finished_at: float | None = None
    log: str = ""
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What one run did: which steps it skipped (done before) and which it ran."""

    skipped: tuple[str, ...]
    ran: tuple[str, ...]
    duration_s: float


# -- state file -------------------------------------------------------------------------------


def state_path(build_dir: str | Path) -> Path:
    return Path(build_dir) / STATE_FILE


def read_state(build_dir: str | Path) -> dict[str, StepRecord]:
    """Step records by name; an absent state file is an empty state, a corrupt one a DataError."""
    path = state_path(build_dir)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("schema") != STATE_SCHEMA:
            raise ValueError(f"schema {data.get('schema')!r}")
        return {r["name"]: StepRecord(**r) for r in data["steps"]}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataError(
            f"build state {path} is unreadable ({exc})", (rerun("--restart") + "   # build from scratch", f"rm {path}")
        ) from exc


def _write_state(build_dir: Path, recipe: Recipe, records: dict[str, StepRecord]) -> None:
    path = state_path(build_dir)
    order = [s.name for s in recipe.steps]
    data = {
        "schema": STATE_SCHEMA,
        "title": recipe.title,
        "fingerprint": recipe.fingerprint(),
        "steps": [asdict(records[n]) for n in order if n in records],
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)  # atomic: an interrupt never leaves half a state file


def done_steps(recipe: Recipe, records: Mapping[str, StepRecord]) -> int:
    """How many leading steps are done with the current plan (their keys still match)."""
    count = 0
    for step, key in zip(recipe.steps, recipe.step_keys(), strict=True):
        rec = records.get(step.name)
        if rec is None or rec.status != "done" or rec.key != key:
            break
        count += 1
    return count


@contextlib.contextmanager
def _build_lock(build_dir: Path) -> Iterator[None]:
    """One build per folder at a time: two runs would clobber each other's sources and state."""
    import fcntl

    with open(build_dir / ".lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise UsageError(
                f"another rocmkit build is running in {build_dir}", ("wait for it", rerun("--build-dir", "DIR"))
            ) from exc
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _check_clean_paths(recipe: Recipe) -> None:
    """A step may only remove what lies inside the build folder: a plan is data, and a wrong
    path in it must not become `rm -rf` of somebody's home."""
    root = Path(recipe.build_dir).resolve()
    for step in recipe.steps:
        for target in step.clean:
            path = Path(target).resolve()
            if path == root or root not in path.parents:
                raise UsageError(
                    f"step {step.name} would remove {target}, which is not inside the build folder {root}",
                    "fix the recipe: only paths under the build folder can be cleaned",
                )


# -- running ------------------------------------------------------------------------------------


# Off a terminal, a line per minute says a long step is alive when rocmkit runs as a library;
# under the CLI the shared ticker's line after 4 s of silence speaks first (util/ticker.py).
BUILD_HEARTBEAT_S = 60.0
# How much of a log's end is read for its last line: ninja's lines are well under this.
_TAIL_BYTES = 4096
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def last_log_line(log: Path, limit: int = 120) -> str | None:
    """The last non-empty line of a step's log (cut to ``limit``), or None before it has one.
    Read from the end, bounded: the log of a torch build grows to hundreds of MB.

    The status line's thread reads it under the ticker's lock, as root on a build folder
    another account may write: a FIFO in the log's place would block a plain open, and with
    it every line the command prints; a symlink would show the end of a file it points to.
    So it is opened without following a link, without blocking, and read only if regular."""
    try:
        fd = os.open(log, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        size = os.lseek(fd, 0, os.SEEK_END)
        tail = os.pread(fd, _TAIL_BYTES, max(0, size - _TAIL_BYTES))
    except OSError:
        return None
    finally:
        os.close(fd)
    # Colour codes (cmake, ninja) go; ninja and pip redraw lines with carriage returns, so the
    # last piece of a line is what a terminal shows.
    plain = _ANSI.sub("", tail.decode("utf-8", "replace"))
    lines = [part.strip() for line in plain.splitlines() for part in line.split("\r")]
    last = next((line for line in reversed(lines) if line), None)
    if last is None:
        return None
    return last if len(last) <= limit else last[: limit - 3] + "..."


def run_recipe(
    recipe: Recipe,
    *,
    runner: Runner | None = None,
    base_env: Mapping[str, str] | None = None,
    restart: bool = False,
    echo: Callable[[str], None] = lambda _msg: None,
    resume_command: str = "the same command",
) -> Outcome:
    """Run the steps not done yet; raise ToolError on a failing step, InterruptedStateError on Ctrl-C.

    ``base_env`` is the environment the steps start from (default: this process's); each step's
    ``env`` goes on top. ``echo`` receives progress lines (the CLI sends them to stderr).
    """
    if runner is None:
        from rocmkit.proc.runner import run as runner_run

        runner = runner_run
    build_dir = Path(recipe.build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    (build_dir / LOG_DIR).mkdir(exist_ok=True)
    Path(recipe.wheelhouse).mkdir(parents=True, exist_ok=True)
    _check_clean_paths(recipe)
    environ = dict(os.environ if base_env is None else base_env)
    start = time.monotonic()
    with _build_lock(build_dir):
        records = {} if restart else read_state(build_dir)
        first = done_steps(recipe, records)
        stale = [
            s.name for s in recipe.steps[first:] if s.name in records and records[s.name].status == "done"
        ]
        if stale:
            echo(f"the plan changed since the last run: {', '.join(stale)} will run again")
        # Drop records past the kept prefix: they belong to another plan or an unfinished run.
        keep = {s.name for s in recipe.steps[:first]}
        records = {n: r for n, r in records.items() if n in keep}
        skipped = tuple(s.name for s in recipe.steps[:first])
        if skipped:
            echo(f"resuming: {len(skipped)} step(s) already done ({', '.join(skipped)})")
        ran: list[str] = []
        keys = recipe.step_keys()
        total = len(recipe.steps)
        for index in range(first, total):
            step = recipe.steps[index]
            log = recipe.log_path(index)
            for target in step.clean:
                _remove(Path(target))
            if log.exists():
                log.unlink()  # a re-run gets a fresh log; the state says which run it belongs to
            records[step.name] = StepRecord(name=step.name, key=keys[index], status="running", log=str(log))
            _write_state(build_dir, recipe, records)
            echo(f"[{index + 1}/{total}] {step.name}: {step.title} (log: {log})")
            step_env = {**environ, **step.env}
            try:
                # A step's output goes to its log only (a torch build writes hours of it): the
                # status line shows the step, its clock and the log's last line (ninja's
                # "[1234/5678] Building CXX object ..." is the build's own progress).
                with waiting(
                    f"[{index + 1}/{total}] {step.name}",
                    echo,
                    phase=step.title,
                    detail=functools.partial(last_log_line, log),
                    every=BUILD_HEARTBEAT_S,
                ):
                    result = runner(
                        list(step.argv),
                        timeout=step.timeout_s,
                        env=step_env,
                        cwd=step.cwd or str(build_dir),
                        log_path=str(log),
                    )
            except KeyboardInterrupt:
                records[step.name] = StepRecord(
                    name=step.name, key=keys[index], status="interrupted", log=str(log)
                )
                _write_state(build_dir, recipe, records)
                raise InterruptedStateError(
                    f"build interrupted during step {index + 1}/{total} ({step.name}); "
                    f"steps done are kept: {state_path(build_dir)}",
                    f"run {resume_command} to resume at {step.name}",
                ) from None
            succeeded = result.ok or (result.status == "failed" and result.returncode in step.ok_codes)
            if not succeeded:
                records[step.name] = StepRecord(
                    name=step.name,
                    key=keys[index],
                    status="failed",
                    duration_s=round(result.duration_s, 3),
                    finished_at=time.time(),
                    log=str(log),
                    detail=result.describe(),
                )
                _write_state(build_dir, recipe, records)
                if result.status in {"absent", "error"}:
                    # Nothing reached the log: say why here.
                    from rocmkit.util.trust import open_append

                    with open_append(Path(log)) as fh:
                        fh.write(f"rocmkit: {result.describe()}\n")
                tail = log_tail(log)
                if tail:
                    echo(f"--- last lines of {log} ---\n{tail}\n--- end of {log} ---")
                raise ToolError(
                    f"build step {index + 1}/{total} ({step.name}) failed: {result.describe()}; log: {log}",
                    f"fix the cause shown in the log, then run {resume_command} to resume at {step.name}",
                )
            records[step.name] = StepRecord(
                name=step.name,
                key=keys[index],
                status="done",
                duration_s=round(result.duration_s, 3),
                finished_at=time.time(),
                log=str(log),
            )
            _write_state(build_dir, recipe, records)
            ran.append(step.name)
    return Outcome(skipped=skipped, ran=tuple(ran), duration_s=time.monotonic() - start)
