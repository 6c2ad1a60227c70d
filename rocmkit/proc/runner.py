"""The one command runner.

Every external command rocmkit runs goes through :func:`run`: an argument list
(never a shell), a timeout on every call, stdout, stderr and the exit code kept
for reports, a missing binary reported as ``absent`` rather than raised, and a
timeout that escalates from SIGTERM to SIGKILL on the whole process group so a
hung tool (or its children) never hangs rocmkit.

Output is bounded too: each stream keeps at most ``max_output`` bytes (its
head and its tail); a command that prints past that is stopped, like a hung
one, with the status ``overflow``, so a tool that prints without end costs a
few MiB of memory, never all of it; and all the commands running at once keep
``MAX_HELD_BYTES`` together at most, however many there are. A command that exits while a grandchild
still holds its pipes is reported by its own exit code, and the grandchild's
process group is stopped instead of being mistaken for a hang and left behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

DEFAULT_TIMEOUT_S = 10.0
# After SIGTERM, how long a process group gets before SIGKILL.
KILL_GRACE_S = 2.0
# Per stream. The largest real output a parser reads (rocminfo or amd-smi static on 16 GPUs)
# is 1-2 MiB.
MAX_OUTPUT_BYTES = 8 * 1024 * 1024
# All streams of all commands running at once, together: detection runs ~25 tools at once, and
# each new probe adds some, so the per-stream cap alone does not bound the process. Past this a
# command that wants to keep more is stopped (status ``overflow``), as one past its own cap is.
MAX_HELD_BYTES = 96 * 1024 * 1024
# After the command exits, how long its pipes may stay open (a grandchild holding them).
PIPE_GRACE_S = 1.0
# A line longer than this is split when streamed (a tool printing with no newline).
MAX_LINE_BYTES = 64 * 1024

Status = Literal["ok", "failed", "absent", "timeout", "signal", "error", "overflow"]

# ROCm tools are often installed without being on PATH.
EXTRA_BIN_DIRS = ("/opt/rocm/bin",)


@dataclass(frozen=True, kw_only=True)
class CommandResult:
    """What one command did. ``status`` is the summary a report shows."""

    argv: tuple[str, ...]
    status: Status
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    error: str | None = None
    timeout_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def describe(self) -> str:
        """One line for a problem report: what ran and how it ended."""
        cmd = _shown(self.argv)
        if self.status == "ok":
            return f"`{cmd}` succeeded"
        if self.status == "absent":
            return f"`{self.argv[0]}` is not installed"
        if self.status == "timeout":
            return f"`{cmd}` did not finish within {self.timeout_s:g} s and was killed"
        if self.status == "signal":
            return f"`{cmd}` was killed by signal {-(self.returncode or 0)}"
        if self.status == "error":
            return f"`{cmd}` could not be started: {self.error}"
        if self.status == "overflow":
            return f"`{cmd}` printed more than {self.error or 'the output limit'} and was stopped"
        tail = _last_line(self.stderr) or _last_line(self.stdout)
        return f"`{cmd}` exited with code {self.returncode}" + (f": {tail}" if tail else "")

    def to_dict(self) -> dict[str, object]:
        return {
            "argv": list(self.argv),
            "status": self.status,
            "returncode": self.returncode,
            "duration_s": round(self.duration_s, 4),
            "stderr": self.stderr[-4000:],
            "error": self.error,
        }


def _shown(argv: tuple[str, ...] | list[str]) -> str:
    """The command for a message: the program's name, not its path, and a long argument list cut
    short (an error line stays readable; the report's ``argv`` keeps it whole)."""
    words = [os.path.basename(argv[0]), *argv[1:]] if argv else []
    cmd = " ".join(words)
    return cmd if len(cmd) <= 80 else " ".join(words[:4]) + f" ... ({len(words) - 1} arguments)"


def _last_line(text: str) -> str:
    for line in reversed(text.strip().splitlines()):
        if line.strip():
            return line.strip()[:200]
    return ""


def which(program: str, env: Mapping[str, str] | None = None) -> str | None:
    """Find ``program`` on PATH, then in ROCm's bin folders."""
    if os.sep in program:
        return program if os.access(program, os.X_OK) else None
    environ = os.environ if env is None else env
    dirs = [environ.get("PATH", os.defpath)]
    rocm_path = environ.get("ROCM_PATH")
    if rocm_path:
        dirs.append(str(Path(rocm_path) / "bin"))
    dirs.extend(EXTRA_BIN_DIRS)
    return shutil.which(program, path=os.pathsep.join(dirs))


# Called with the pid (= process group id: every child gets its own session) of each
# command as it starts. The install journal records it, so that after rocmkit itself
# is killed (kill -9, where no cleanup runs) the next run can stop a pip or uv that
# was left running, instead of restoring under its feet.
_started_hooks: list[Callable[[int], None]] = []


@contextlib.contextmanager
def on_child_started(hook: Callable[[int], None]) -> Iterator[None]:
    """Call ``hook(pid)`` for every command started inside the ``with`` block."""
    _started_hooks.append(hook)
    try:
        yield
    finally:
        _started_hooks.remove(hook)


def _started(proc: subprocess.Popen[bytes]) -> None:
    for hook in list(_started_hooks):
        hook(proc.pid)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, then SIGKILL it if it does not go."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _pipe_holders(fds: Sequence[int]) -> list[int]:
    """The pids (not ours) holding the other end of the pipes ``fds`` read from.

    A command that exited while something it started still holds its stdout is
    followed by that something, even when it left the command's process group
    (``setsid``, a daemonising tool): a pipe's two ends share one inode, so every
    process with an fd on ``pipe:[INODE]`` is found in /proc, whatever its group.

    Our own children are never holders: the command itself has exited, so a child of ours
    holding the pipe is one another thread of ours just forked (between fork and exec it
    holds copies of every fd we have), and a leftover of the command has another parent."""
    wanted = set()
    for fd in fds:
        with contextlib.suppress(OSError):
            wanted.add(f"pipe:[{os.fstat(fd).st_ino}]")
    me = os.getpid()
    holders: list[int] = []
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isascii() and p.isdigit()]
    except OSError:
        return holders
    for pid in pids:
        if pid == me:
            continue
        try:
            links = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # gone, or not ours to look at
        for name in links:
            try:
                if os.readlink(f"/proc/{pid}/fd/{name}") in wanted and _writes(pid, name):
                    if _parent(pid) != me:
                        holders.append(pid)
                    break
            except OSError:
                continue
    return holders


def _parent(pid: int) -> int | None:
    """``pid``'s parent, from /proc/PID/stat (the field after the parenthesised name)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _writes(pid: int, fd: str) -> bool:
    """Whether ``pid`` holds its fd ``fd`` open for writing (fdinfo's octal ``flags``).

    Only a writer keeps a pipe from reaching end-of-file; a process that merely inherited the
    read end for a moment (a sibling forked by the same parent, before it closes the fds it
    does not own) is not one, and must not be killed for it."""
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & 0o3 != os.O_RDONLY
    except (OSError, ValueError, IndexError):
        pass
    return True  # unknown: count it, as before (the pipe's other end is what we read)


def kill_pipe_holders(fds: Sequence[int]) -> None:
    """SIGKILL what still holds the command's pipes after it exited (see :func:`_pipe_holders`)."""
    for pid in _pipe_holders(fds):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def run(
    argv: Sequence[str],
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    input_text: str | None = None,
    log_path: str | os.PathLike[str] | None = None,
    on_line: Callable[[str], None] | None = None,
    max_output: int = MAX_OUTPUT_BYTES,
) -> CommandResult:
    """Run ``argv`` and return what happened; never raises for the command's sake.

    ``log_path``: stdout and stderr go to that file as they come (for long
    builds and installs); the result then keeps only the log's last 8 KiB in
    ``stdout``. ``on_line``: called with each line of output as it arrives
    (progress display); output is still kept. ``max_output``: bytes kept per
    stream, past which the command is stopped (status ``overflow``).
    """
    args = tuple(str(a) for a in argv)
    if not args:
        return CommandResult(argv=args, status="error", error="empty command")
    exe = which(args[0], env)
    if exe is None:
        return CommandResult(argv=args, status="absent", error=f"{args[0]}: not found")
    start = time.monotonic()
    full_env = None if env is None else dict(env)
    try:
        if log_path is not None or on_line is not None:
            return _run_streaming(args, exe, timeout, full_env, cwd, input_text, log_path, on_line, start)
        proc = subprocess.Popen(  # argument list, never a shell
            [exe, *args[1:]],
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        return CommandResult(argv=args, status="error", error=str(exc), duration_s=time.monotonic() - start)
    try:
        _started(proc)
        return _collect(proc, args, timeout, input_text, start, max_output)
    except KeyboardInterrupt:
        # The child has its own session, so Ctrl-C reaches only us: stop its group as well.
        _kill_group(proc)
        raise
    finally:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


class _Held:
    """The bytes every running command's streams keep, together (see MAX_HELD_BYTES)."""

    def __init__(self, limit: int) -> None:
        import threading

        self.limit = limit
        self.now = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> bool:
        with self._lock:
            if self.now + n > self.limit:
                return False
            self.now += n
            return True

    def give(self, n: int) -> None:
        with self._lock:
            self.now -= n


HELD = _Held(MAX_HELD_BYTES)


class _Capped:
    """One stream's output: the first and the last ``limit / 2`` bytes, and the total seen.

    The tail is a queue of the chunks read, the oldest dropped as new ones come: each chunk is
    stored once and never copied (a bytearray trimmed from the front is copied whole on the next
    append: a flood of 64 KiB chunks against a 4 MiB tail moved gigabytes and reallocated the
    tail on every read). What is kept counts against HELD, and is given back by :meth:`text`."""

    def __init__(self, limit: int) -> None:
        from collections import deque

        self.half = max(1, limit // 2)
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.total = 0
        self.held = 0
        self.starved = False  # HELD had no room: the command is stopped like one past its cap

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            part = chunk[:room]
            if not self._take(len(part)):
                return
            self.head += part
            chunk = chunk[room:]
        if not chunk:
            return
        if len(chunk) > self.half:
            chunk = chunk[-self.half :]
        # Drop the oldest chunks the new one pushes out before taking room for it.
        while self.tail and self.tail_size + len(chunk) - len(self.tail[0]) >= self.half:
            dropped = len(self.tail.popleft())
            self.tail_size -= dropped
            self._give(dropped)
        if not self._take(len(chunk)):
            return
        self.tail.append(chunk)
        self.tail_size += len(chunk)

    def _take(self, n: int) -> bool:
        if not HELD.take(n):
            self.starved = True
            return False
        self.held += n
        return True

    def _give(self, n: int) -> None:
        HELD.give(n)
        self.held -= n

    def full(self, limit: int) -> bool:
        return self.starved or self.total > limit

    def release(self) -> None:
        """Give back what this stream holds (also when its text is never asked for)."""
        self.head = bytearray()
        self.tail.clear()
        self.tail_size = 0
        if self.held:
            self._give(self.held)

    def text(self) -> str:
        # Once, at the end: decoded piece by piece, each buffer dropped as it goes (no extra
        # full-size copies while 20 detection tools finish at once).
        left_out = self.total - len(self.head) - self.tail_size
        head = self.head.decode(errors="replace")
        self.head = bytearray()
        gap = f"\n[... {left_out} bytes left out ...]\n" if left_out > 0 else ""
        tail = b"".join(self.tail)
        self.release()
        return head + gap + tail.decode(errors="replace")


def _collect(
    proc: subprocess.Popen[bytes],
    args: tuple[str, ...],
    timeout: float,
    input_text: str | None,
    start: float,
    max_output: int,
) -> CommandResult:
    """Read both pipes with a bound on time and on bytes; end with the group stopped if needed."""
    if proc.stdin is not None:
        # From a thread: an input larger than the pipe buffer must not block the reads below.
        import threading

        stdin, data = proc.stdin, (input_text or "").encode()

        def feed() -> None:
            with contextlib.suppress(OSError, ValueError):
                stdin.write(data)
            with contextlib.suppress(OSError, ValueError):
                stdin.close()

        threading.Thread(target=feed, daemon=True, name="rocmkit-stdin").start()
    assert proc.stdout is not None and proc.stderr is not None
    streams = {proc.stdout.fileno(): _Capped(max_output), proc.stderr.fileno(): _Capped(max_output)}
    try:
        return _read(proc, args, timeout, start, max_output, streams)
    finally:
        for stream in streams.values():  # what text() did not give back (an interrupt, an error)
            stream.release()


def _read(
    proc: subprocess.Popen[bytes],
    args: tuple[str, ...],
    timeout: float,
    start: float,
    max_output: int,
    streams: dict[int, _Capped],
) -> CommandResult:
    import selectors

    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    sel = selectors.DefaultSelector()
    for fd in streams:
        sel.register(fd, selectors.EVENT_READ)
    ended: str | None = None  # "timeout" | "overflow" | "held"
    exited_at: float | None = None
    try:
        while sel.get_map():
            now = time.monotonic()
            if now - start >= timeout:
                ended = "timeout"
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at >= PIPE_GRACE_S:
                ended = "held"  # the command is gone; something it started holds the pipes
                break
            wait = min(0.25, timeout - (now - start))
            for key, _ in sel.select(timeout=wait):
                fd = int(key.fd)
                chunk = os.read(fd, 65536)
                if not chunk:
                    sel.unregister(fd)
                    continue
                streams[fd].add(chunk)
                if streams[fd].full(max_output):
                    ended = "overflow"
                    break
            if ended:
                break
    finally:
        sel.close()
    if ended is not None:
        _kill_group(proc)
    if ended == "held":
        # The group is gone already if the holder stayed in it; one that left it is found by its pipe.
        kill_pipe_holders((out_fd, err_fd))
    rc: int | None
    if ended in ("timeout", "overflow"):
        rc = proc.returncode
    else:
        try:
            rc = proc.wait(timeout=max(0.1, timeout - (time.monotonic() - start)))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            ended, rc = "timeout", proc.returncode
    out, err = streams[out_fd].text(), streams[err_fd].text()
    duration = time.monotonic() - start
    if ended == "timeout":
        return CommandResult(
            argv=args, status="timeout", returncode=rc, stdout=out, stderr=err,
            duration_s=duration, timeout_s=timeout,
        )  # fmt: skip
    if ended == "overflow":
        starved = any(stream.starved for stream in streams.values())
        return CommandResult(
            argv=args, status="overflow", returncode=rc, stdout=out, stderr=err,
            duration_s=duration, timeout_s=timeout,
            error=f"{MAX_HELD_BYTES} bytes kept by all commands at once" if starved else f"{max_output} bytes",
        )  # fmt: skip
    assert rc is not None
    return _finish(args, rc, out, err, start, timeout)


def _finish(
    args: tuple[str, ...], rc: int, out: str, err: str, start: float, timeout: float
) -> CommandResult:
    status: Status = "ok" if rc == 0 else ("signal" if rc < 0 else "failed")
    return CommandResult(
        argv=args,
        status=status,
        returncode=rc,
        stdout=out,
        stderr=err,
        duration_s=time.monotonic() - start,
        timeout_s=timeout,
    )


def _run_streaming(
    args: tuple[str, ...],
    exe: str,
    timeout: float,
    env: dict[str, str] | None,
    cwd: str | os.PathLike[str] | None,
    input_text: str | None,
    log_path: str | os.PathLike[str] | None,
    on_line: Callable[[str], None] | None,
    start: float,
) -> CommandResult:
    """Stream merged output line by line to a log and/or a callback, with the same timeout rules."""
    import selectors

    from rocmkit.util.trust import open_append

    # Never through a symlink: a build log path in a folder others can write must not
    # turn into a write anywhere else.
    log = open_append(Path(log_path)) if log_path is not None else None
    kept: list[str] = []
    kept_size = 0
    proc: subprocess.Popen[bytes] | None = None
    try:
        proc = subprocess.Popen(  # argument list, never a shell
            [exe, *args[1:]],
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        _started(proc)
        if input_text is not None and proc.stdin is not None:
            proc.stdin.write(input_text.encode())
            proc.stdin.close()
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        buf = b""
        timed_out = False
        while True:
            remaining = timeout - (time.monotonic() - start)
            if remaining <= 0:
                timed_out = True
                break
            if not sel.select(timeout=min(remaining, 0.5)):
                if proc.poll() is not None and not buf:
                    # Process ended and the pipe stays quiet: a grandchild may hold it.
                    # Stop it (its group, or wherever it went) rather than leave it running.
                    _kill_group(proc)
                    kill_pipe_holders((proc.stdout.fileno(),))
                    break
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
            if b"\n" not in chunk and len(buf) > MAX_LINE_BYTES:
                # No newline in sight (a tool printing without end): keep memory bounded.
                buf += b"\n"
            *lines, buf = buf.split(b"\n")
            for raw in lines:
                line = raw.decode(errors="replace")
                if log is not None:
                    log.write(line + "\n")
                    log.flush()
                if on_line is not None:
                    on_line(line)
                kept.append(line)
                kept_size += len(line) + 1
                while kept_size > 8192 and len(kept) > 1:
                    kept_size -= len(kept.pop(0)) + 1
        if buf:
            line = buf.decode(errors="replace")
            kept.append(line)
            if log is not None:
                log.write(line + "\n")
        sel.close()
        if timed_out:
            _kill_group(proc)
            return CommandResult(
                argv=args,
                status="timeout",
                returncode=proc.returncode,
                stdout="\n".join(kept),
                duration_s=time.monotonic() - start,
                timeout_s=timeout,
            )
        try:
            rc = proc.wait(timeout=max(0.1, timeout - (time.monotonic() - start)))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return CommandResult(
                argv=args,
                status="timeout",
                stdout="\n".join(kept),
                duration_s=time.monotonic() - start,
                timeout_s=timeout,
            )
        return _finish(args, rc, "\n".join(kept), "", start, timeout)
    except KeyboardInterrupt:
        # The child has its own session, so Ctrl-C reaches only us: stop its group as well,
        # or an interrupted build keeps compiling in the background.
        if proc is not None:
            _kill_group(proc)
        raise
    except OSError as exc:
        return CommandResult(argv=args, status="error", error=str(exc), duration_s=time.monotonic() - start)
    finally:
        if log is not None:
            log.close()
        if proc is not None and proc.stdout is not None:
            # Closed here, not by the garbage collector (a ResourceWarning, an error in the tests).
            with contextlib.suppress(OSError):
                proc.stdout.close()


@dataclass
class FakeRunner:
    """A runner for tests: maps an argv prefix to a canned result."""

    results: dict[tuple[str, ...], CommandResult] = field(default_factory=dict)
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def __call__(self, argv: Sequence[str], **_: object) -> CommandResult:
        args = tuple(argv)
        self.calls.append(args)
        for prefix, result in self.results.items():
            if args[: len(prefix)] == prefix:
                return result
        return CommandResult(argv=args, status="absent", error=f"{args[0]}: not found")
