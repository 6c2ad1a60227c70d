"""The one live status line: what rocmkit waits on, and for how long, on a terminal.

A command that waits (the doctor on a check, bench on a model, install on uv) opens a
:class:`Task` on the process's :func:`shared` ticker. While stderr is a terminal that takes
carriage returns (a TTY whose ``TERM`` is not ``dumb``), a thread redraws one line under the
normal output whenever its text changes (at least once a second: the clock in it moves)::

      doctor [20/36] triton.import: importing torch in the doctor's worker (2.1 s)
      model 3/12 resnet: compiling (4.0 s), ETA 1 min 10 s

The phase is the truest name at hand: one a child wrote (:func:`rocmkit.proc.result_file.say_phase`,
read back by :meth:`Task.follow`), else one the parent set (:meth:`Task.set_phase`), else
"running". Elsewhere (a pipe, a CI or Slurm log, ``TERM=dumb``) nothing is drawn: no carriage
returns end up in a log, and commands keep their plain lines (:func:`waiting` prints a heartbeat
line at its interval instead). Every normal stderr line goes through :meth:`Ticker.line`, and
stdout writes through :meth:`Ticker.quiet`, which wipe the status line first and draw it again
after, so a result is never written into its middle. The line uses no escape sequence and no
colour (``\\r`` and spaces only), so ``NO_COLOR`` has nothing to turn off in it; it turns off
the colours of the doctor's lines (:func:`colour_wanted`).

Commands enable the shared ticker (:func:`rocmkit.cli.group.run`); called as a library, tasks
are kept but nothing is drawn.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

# How often the line is looked at (cheap: a phase file of 200 bytes, a /proc file); it is written
# only when its text changed, which the clock in it makes at least once a second.
INTERVAL_S = 0.1
# Off a terminal, a "still running" line when nothing was written for this long: a log is never
# silent for 5 s of wall time (the thread looks every INTERVAL_S, so 4 s leaves it room).
PIPED_BEAT_S = 4.0
# Beyond this a phase or label is cut: the line must fit one terminal row to be redrawn in place.
MAX_TEXT = 200


def duration_text(seconds: float) -> str:
    """A duration as a person reads it: ``2.1 s``, ``42 s``, ``3 min 10 s``, ``1 h 5 min``."""
    seconds = max(0.0, seconds)
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, rest = divmod(round(seconds / 60), 60)
    return f"{hours} h {rest} min" if rest else f"{hours} h"


def clock_text(seconds: float) -> str:
    """The status line's clock: it changes at least once a second however long the wait
    (``2.1 s``, ``42.7 s``, ``3 min 05 s``, ``1 h 02 min 05 s``)."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min {secs:02d} s"


def live_terminal(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``stream`` takes a line redrawn in place: a TTY whose ``TERM`` is not ``dumb``
    (a dumb terminal, Emacs' shell for one, prints every ``\\r`` update as a line)."""
    env = os.environ if environ is None else environ
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a file at all
        return False
    return tty and env.get("TERM", "") != "dumb"


def colour_wanted(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Colour on ``stream``: a live terminal, and no ``NO_COLOR`` set (https://no-color.org)."""
    env = os.environ if environ is None else environ
    return live_terminal(stream, env) and not env.get("NO_COLOR")


def printable(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` made safe for a terminal line: one line, no control characters (a child's
    phase file could hold an escape sequence), at most ``limit`` characters."""
    flat = "".join(c if c.isprintable() else " " for c in text.replace("\n", " "))
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


Reader = Callable[[], "str | None"]
Detail = Callable[[], "str | None"]


class Task:
    """One thing being waited on: its label, since when, and its phase."""

    def __init__(self, ticker: Ticker, label: str, *, phase: str | None, detail: Detail | None) -> None:
        self.ticker = ticker
        self.label = label
        self.detail = detail
        self.started = ticker.clock()
        self.phase_text = phase  # set by the parent; a followed one takes precedence
        self._since = self.started
        self._read: Reader | None = None
        self._followed: str | None = None
        self._followed_since = self.started

    def set_phase(self, text: str | None) -> None:
        """What the wait is now, as the parent knows it (None: back to "running")."""
        if text != self.phase_text:
            self.phase_text = text
            self._since = self.ticker.clock()

    def follow(self, read: Reader | None) -> None:
        """Take the phase from ``read`` (a child's phase file) while it answers; None: stop."""
        self._read = read
        self._followed = None

    def phase(self) -> tuple[str, float]:
        """The phase to show and since when: the followed one, the one set, or "running"."""
        read = self._read
        if read is not None:
            try:
                text = read()
            except Exception:  # a display must never break the run it displays
                text = None
            if text:
                if text != self._followed:
                    self._followed = text
                    self._followed_since = self.ticker.clock()
                return text, self._followed_since
        if self.phase_text:
            return self.phase_text, self._since
        return "running", self.started

    def end(self) -> None:
        self.ticker.end(self)


_current = threading.local()


def current_task() -> Task | None:
    """The innermost task this thread opened with :meth:`Ticker.task` (deep code, a worker
    starting for one, names its phase on it without being handed it)."""
    stack: list[Task] = getattr(_current, "stack", [])
    return stack[-1] if stack else None


@contextmanager
def following(read: Reader) -> Iterator[None]:
    """Within the block, this thread's task takes its phase from ``read``."""
    task = current_task()
    if task is not None:
        task.follow(read)
    try:
        yield
    finally:
        if task is not None:
            task.follow(None)


@contextmanager
def in_phase(text: str) -> Iterator[None]:
    """Within the block, this thread's task is in phase ``text``."""
    task = current_task()
    before = task.phase_text if task is not None else None
    if task is not None:
        task.set_phase(text)
    try:
        yield
    finally:
        if task is not None:
            task.set_phase(before)


class Ticker:
    """A status line on ``stream`` (default: ``sys.stderr`` as it is when written to)."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        interval: float = INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        enabled: bool = True,
        heartbeat: bool = False,
        beat_every: float = PIPED_BEAT_S,
    ) -> None:
        self._stream = stream
        self.environ = environ
        self.interval = interval
        self.clock = clock
        self.enabled = enabled
        # Off a terminal: a "still running" line after beat_every seconds of silence (the CLI
        # turns it on for a command, --quiet leaves it off; a library call prints nothing).
        self.heartbeat = heartbeat
        self.beat_every = beat_every
        self.held = False  # the thread ticks while a command runs, tasks or not (hold())
        self.ticks = 0  # passes of the thread: a test's clock can count them
        self.prefix = ""  # what the command as a whole is at: "doctor [20/36] "
        self.tasks: list[Task] = []
        self._lock = threading.RLock()
        self._shown = ""  # the text on the terminal now ("" when none)
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._last_out = clock()  # when something was last written (the heartbeat's silence)

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr

    @property
    def live(self) -> bool:
        """Whether the line is drawn: enabled, and the stream a live terminal."""
        return self.enabled and live_terminal(self.stream, self.environ)

    @property
    def beating(self) -> bool:
        """Whether "still running" lines are written: enabled, heartbeat on, not a terminal."""
        return self.enabled and self.heartbeat and not live_terminal(self.stream, self.environ)

    def hold(self) -> None:
        """Keep the thread ticking until :meth:`release`, whether or not a task is open: the
        CLI holds it for a whole command (ticks then count the command's time)."""
        with self._lock:
            self.held = True
            self._last_out = self.clock()  # a command's silence counts from its start
            self._start()

    def release(self) -> None:
        with self._lock:
            self.held = False
            self._wake.set()

    def _start(self) -> None:
        if self._thread is None and (self.live or self.beating):
            self._thread = threading.Thread(target=self._loop, name="rocmkit-ticker", daemon=True)
            self._thread.start()

    # -- tasks ----------------------------------------------------------------------------

    def begin(self, label: str, *, phase: str | None = None, detail: Detail | None = None) -> Task:
        """Start waiting on ``label``; :meth:`Task.end` ends it. ``detail`` adds to the clock
        ("310 MB written", "ETA 1 min")."""
        task = Task(self, label, phase=phase, detail=detail)
        with self._lock:
            self.tasks.append(task)
            self._start()
        return task

    def end(self, task: Task) -> None:
        with self._lock:
            if task in self.tasks:
                self.tasks.remove(task)
            if not self.tasks:
                self.erase()
                if not self.held:
                    self._wake.set()
            else:
                self.redraw()

    @contextmanager
    def task(self, label: str, *, phase: str | None = None, detail: Detail | None = None) -> Iterator[Task]:
        """A task for the ``with`` block, this thread's :func:`current_task` meanwhile."""
        task = self.begin(label, phase=phase, detail=detail)
        stack: list[Task] = getattr(_current, "stack", None) or []
        _current.stack = stack
        stack.append(task)
        try:
            yield task
        finally:
            stack.remove(task)
            task.end()

    # -- drawing --------------------------------------------------------------------------

    def render(self, width: int = 1000) -> str:
        """The status text: the oldest task (its label, phase, clock and detail), and how many
        more run beside it; "" when nothing is waited on. Past ``width`` the label and phase
        are cut, never the clock: it is what shows the wait is alive."""
        with self._lock:
            tasks = list(self.tasks)
        if not tasks:
            return ""
        from rocmkit.util.redact import redact_text

        first = tasks[0]
        text, since = first.phase()
        clock = [clock_text(self.clock() - since)]
        extra = _detail(first.detail)
        # This line is written to the terminal directly, not through OUT (which redacts every
        # line it prints), and shows what others said: uv's or pip's last output line, a build
        # log's last line, a child's phase. A URL's token in them is masked here, before any cut
        # (a cut could leave "user:tok..." that no longer looks like a URL to the redactor).
        if extra:
            clock.append(printable(redact_text(extra)))
        more = f" (+{len(tasks) - 1} more)" if len(tasks) > 1 else ""
        head = "  " + printable(redact_text(f"{self.prefix}{first.label}: {text}"), 1000)
        tail = f" ({', '.join(clock)}){more}"
        room = width - len(tail)
        if len(head) > room:
            head = head[: max(0, room - 3)] + "..."
        return (head + tail)[:width]

    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            columns = 0
        # A terminal that reports no size (a bare pty) gets the classic 80.
        return columns if columns >= 20 else 80

    def redraw(self) -> None:
        """Write the line again if its text changed (cut to the terminal's width: a line that
        wraps cannot be redrawn in place)."""
        with self._lock:
            if not self.live:
                return
            text = self.render(self._width() - 1)
            if text == self._shown:
                return
            pad = " " * max(0, len(self._shown) - len(text))
            self._write("\r" + text + pad)
            self._shown = text

    def erase(self) -> None:
        """Wipe the line (nothing is written when none is shown)."""
        with self._lock:
            if self._shown:
                self._write("\r" + " " * len(self._shown) + "\r")
                self._shown = ""

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed terminal: the run goes on without its line
            self.enabled = False

    def _loop(self) -> None:
        while True:
            self._wake.wait(self.interval)
            with self._lock:
                # Under the lock: begin() starts a new thread only once this one has said it ends.
                if not self.tasks and not self.held:
                    self._thread = None
                    return
                self._wake.clear()
                self.tick()

    def tick(self) -> None:
        """One look (the thread's, every ``interval``): redraw the line on a terminal; off one,
        the heartbeat line when nothing was written for ``beat_every``."""
        with self._lock:
            self.ticks += 1
            if self.live:
                self.redraw()
            elif self.beating and self.tasks and self.clock() - self._last_out >= self.beat_every - 1e-9:
                self._write(self.beat_text() + "\n")
                self._last_out = self.clock()

    def beat_text(self) -> str:
        """The heartbeat line: the oldest task, how long it has run, its phase and detail
        (``rocmkit: doctor [3/9] torch.import: still running (12 s, importing torch)``)."""
        with self._lock:
            tasks = list(self.tasks)
        from rocmkit.util.redact import redact_text

        first = tasks[0]
        phase, _since = first.phase()
        parts = [duration_text(self.clock() - first.started)]
        if phase != "running":
            parts.append(printable(phase))
        extra = _detail(first.detail)
        if extra:
            parts.append(printable(extra))
        more = f" (+{len(tasks) - 1} more)" if len(tasks) > 1 else ""
        text = f"rocmkit: {self.prefix}{first.label}: still running ({', '.join(parts)}){more}"
        return printable(redact_text(text), 1000)

    # -- other output ---------------------------------------------------------------------

    def line(self, text: str, *, stream: TextIO | None = None, nl: bool = True) -> None:
        """Write a normal line (to ``stream``, default the ticker's): the status line is wiped
        first and drawn again under it."""
        with self.quiet():
            out = stream if stream is not None else self.stream
            out.write(text + ("\n" if nl else ""))
            out.flush()

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """Hold the status line off while the block writes (stdout data on the same terminal)."""
        with self._lock:
            shown = bool(self._shown)
            self.erase()
            try:
                yield
            finally:
                self._last_out = self.clock()
                # Drawn again at once only if it was up: a task of a few milliseconds (a level-0
                # check) is never drawn, since the thread draws on its next tick.
                if shown:
                    self.redraw()


def _detail(detail: Detail | None) -> str | None:
    if detail is None:
        return None
    try:
        return detail()
    except Exception:  # a display must never break the run it displays
        return None


_shared: Ticker | None = None
_shared_lock = threading.Lock()


def shared() -> Ticker:
    """The process's ticker on stderr; off (tasks kept, nothing drawn) until a command enables it."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Ticker(enabled=False)
        return _shared


# -- waiting on a child process ----------------------------------------------------------

HEARTBEAT_S = 30.0


@contextmanager
def waiting(
    label: str,
    echo: Callable[[str], None],
    *,
    every: float = HEARTBEAT_S,
    phase: str | None = None,
    detail: Detail | None = None,
    ticker: Ticker | None = None,
) -> Iterator[Task]:
    """A long wait on ``label``: on a live terminal the status line; elsewhere a heartbeat
    line through ``echo`` every ``every`` seconds (``rocmkit: uv install: still running (30 s)``),
    so a log shows the step is alive without a carriage return in it."""
    tick = ticker or shared()
    stop = threading.Event()
    with tick.task(label, phase=phase, detail=detail) as task:
        beat: threading.Thread | None = None
        # The ticker's own heartbeat (a command off a terminal) already speaks for this wait.
        if not tick.live and not tick.beating:

            def heartbeat() -> None:
                while not stop.wait(every):
                    extra = _detail(detail)
                    clock = f"{tick.clock() - task.started:.0f} s" + (f", {extra}" if extra else "")
                    echo(f"rocmkit: {label}: still running ({clock})")

            beat = threading.Thread(target=heartbeat, name="rocmkit-heartbeat", daemon=True)
            beat.start()
        try:
            yield task
        finally:
            stop.set()
            if beat is not None:
                beat.join(timeout=1)


def written_bytes(pids: Iterable[int], proc: str = "/proc") -> int | None:
    """Bytes the processes ``pids`` have written so far (``wchar`` of ``/proc/PID/io``: uv
    unpacking wheels into its cache, pip saving them), or None where none can be read. A
    child's own count, so another process writing to the same disk does not inflate it."""
    from rocmkit.util.boundedio import read_bounded

    total: int | None = None
    for pid in pids:
        try:
            text = read_bounded(Path(f"{proc}/{pid}/io"), max_bytes=4096, truncate=True)
        except OSError:
            continue
        for row in text.decode("ascii", "replace").splitlines():
            key, _, value = row.partition(":")
            if key.strip() == "wchar" and value.strip().isdigit():
                total = (total or 0) + int(value)
    return total


def size_text(n: int) -> str:
    """Bytes as ``310 MB`` / ``4.1 GB`` (decimal units, as uv and pip print sizes)."""
    if n >= 10**9:
        return f"{n / 10**9:.1f} GB"
    if n >= 10**6:
        return f"{n / 10**6:.0f} MB"
    return f"{n / 10**3:.0f} kB"
