"""The status line (rocmkit/util/ticker.py): what it says, that normal lines never land in its
middle, that it stays off a pipe and a dumb terminal, and the child's side of its phases."""

from __future__ import annotations

import io
import os
import re
import threading
import time
from pathlib import Path

import pytest

from rocmkit.proc.result_file import PHASE_ENV, say_phase
from rocmkit.proc.results import read_phase
from rocmkit.util import ticker
from rocmkit.util.ticker import Ticker, clock_text, colour_wanted, duration_text, live_terminal, printable


class Terminal(io.StringIO):
    """A stream that says it is a TTY (it has no size: the ticker takes 80 columns)."""

    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


TTY_ENV = {"TERM": "xterm-256color"}


def screen(text: str) -> list[str]:
    """What a terminal shows for ``text``: each ``\\r`` returns to the line's start and overwrites."""
    rows: list[str] = []
    line: list[str] = []
    col = 0
    for ch in text:
        if ch == "\n":
            rows.append("".join(line).rstrip())
            line, col = [], 0
        elif ch == "\r":
            col = 0
        else:
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
    rows.append("".join(line).rstrip())
    return rows


def test_durations_read_as_a_person_reads_them() -> None:
    assert duration_text(2.14) == "2.1 s"
    assert duration_text(42.4) == "42 s"
    assert duration_text(190) == "3 min 10 s"
    assert duration_text(180) == "3 min"
    assert duration_text(3900) == "1 h 5 min"
    assert duration_text(-1) == "0.0 s"
    # The status line's clock moves every second, however long the wait.
    assert clock_text(42.74) == "42.7 s" and clock_text(185) == "3 min 05 s"
    assert clock_text(3725.5) == "1 h 02 min 05 s" and clock_text(3726.4) == "1 h 02 min 06 s"


def test_the_line_names_the_task_its_phase_the_clock_and_what_runs_beside_it() -> None:
    clock = Clock()
    tick = Ticker(Terminal(), environ=TTY_ENV, clock=clock, enabled=False)
    tick.prefix = "doctor [20/36] "
    first = tick.begin("triton.import")
    assert tick.render() == "  doctor [20/36] triton.import: running (0.0 s)"
    first.set_phase("importing torch in the doctor's worker")
    clock.now += 2.1
    tick.begin("torch.import")
    assert (
        tick.render()
        == "  doctor [20/36] triton.import: importing torch in the doctor's worker (2.1 s) (+1 more)"
    )
    # The clock is the phase's: a new phase starts at zero.
    first.set_phase("running")
    clock.now += 0.5
    assert "running (0.5 s)" in tick.render()


def test_a_childs_phase_wins_and_is_made_safe_for_a_terminal(tmp_path: Path) -> None:
    clock = Clock()
    tick = Ticker(Terminal(), environ=TTY_ENV, clock=clock, enabled=False)
    task = tick.begin("jax.jit", phase="starting a fresh Python for the check")
    phase = tmp_path / "phase.txt"
    task.follow(lambda: read_phase(phase))
    assert "starting a fresh Python for the check (0.0 s)" in tick.render()  # nothing said yet
    phase.write_text("compiling mlp\x1b[2J with\njax.jit\x07")
    clock.now += 1.0
    line = tick.render()
    assert line == "  jax.jit: compiling mlp [2J with jax.jit (0.0 s)"
    assert "\x1b" not in line and "\x07" not in line
    clock.now += 3.0
    assert line.replace("0.0 s", "3.0 s") == tick.render()  # the clock runs from when it was first read
    task.follow(None)
    assert "starting a fresh Python for the check" in tick.render()


def test_a_token_in_what_others_said_never_reaches_the_terminal(tmp_path: Path) -> None:
    # The line is written straight to the terminal (not through OUT, which redacts): uv's last
    # output line, a build log's last line and a child's phase may carry an index URL.
    term = Terminal()
    clock = Clock()
    tick = Ticker(term, environ=TTY_ENV, clock=clock, interval=3600)
    token = "s3cr3t-t0ken"
    said = f"Downloading https://alice:{token}@mirror.example/whl/torch-2.5.whl"
    task = tick.begin("uv install", detail=lambda: f"GET https://{token}@m.example/?token={token}")
    task.set_phase(said)
    tick.redraw()
    assert "alice:***@mirror.example" in tick.render()
    # Masked before it is cut: no width leaves a piece of the token on the line.
    assert not [w for w in range(20, 200) if "s3c" in tick.render(w)]
    phase = tmp_path / "phase.txt"
    phase.write_text(f"fetching https://bob:{token}@mirror.example/whl")
    task.follow(lambda: read_phase(phase))
    clock.now += 1.0
    tick.redraw()
    assert "bob:***@mirror.example" in tick.render() and "***@m.example/?token=***" in tick.render()
    tick.end(task)
    assert "s3c" not in term.getvalue()


def test_a_long_line_is_cut_but_never_its_clock() -> None:
    clock = Clock()
    tick = Ticker(Terminal(), environ=TTY_ENV, clock=clock, enabled=False)
    tick.begin("install", phase="x" * 300, detail=lambda: "310 MB written")
    line = tick.render(60)
    assert len(line) == 60 and line.endswith("... (0.0 s, 310 MB written)")


def test_normal_lines_wipe_the_status_line_first_and_it_comes_back_under_them() -> None:
    term = Terminal()
    clock = Clock()
    tick = Ticker(term, environ=TTY_ENV, clock=clock, interval=3600)
    with tick.task("model 1/2 resnet", phase="compiling"):
        tick.redraw()
        clock.now += 1.0
        tick.line("distilgpt2: pass 1.82x (36 s)")
        shown = screen(term.getvalue())
        assert shown == ["distilgpt2: pass 1.82x (36 s)", "  model 1/2 resnet: compiling (1.0 s)"]
        assert "\x1b" not in term.getvalue()  # \r and spaces only: no escape sequence, no colour
    # The task ended: the line is wiped, nothing of it stays on the screen.
    assert screen(term.getvalue()) == ["distilgpt2: pass 1.82x (36 s)", ""]


def test_the_thread_redraws_while_the_wait_goes_on_and_stops_after() -> None:
    term = Terminal()
    tick = Ticker(term, environ=TTY_ENV, interval=0.02)
    with tick.task("uv install", phase="Downloading torch (182.9MiB)"):
        time.sleep(0.4)
    drawn = re.findall(r"\r  uv install: Downloading torch \(182\.9MiB\) \((\d+\.\d) s\)", term.getvalue())
    assert len(set(drawn)) >= 3, term.getvalue()  # the clock moved, and each move was drawn
    size = len(term.getvalue())
    time.sleep(0.1)
    assert len(term.getvalue()) == size and tick._thread is None  # nothing after the end
    # A new task after the thread ended gets a new one.
    with tick.task("again"):
        time.sleep(0.1)
    assert "again: running" in term.getvalue()


def test_nothing_is_drawn_on_a_pipe_a_dumb_terminal_or_when_off() -> None:
    for stream, env, enabled in (
        (io.StringIO(), TTY_ENV, True),  # a pipe, a log file
        (Terminal(), {"TERM": "dumb"}, True),
        (Terminal(), TTY_ENV, False),  # a library call: the CLI turns it on
    ):
        tick = Ticker(stream, environ=env, interval=0.01, enabled=enabled)
        assert not tick.live
        with tick.task("doctor", phase="detecting this machine"):
            time.sleep(0.05)
            tick.redraw()
            tick.line("[1/2] PASS  env.shm (0.00 s) ok")
        assert stream.getvalue() == "[1/2] PASS  env.shm (0.00 s) ok\n"


def test_terminal_and_colour_rules() -> None:
    assert live_terminal(Terminal(), TTY_ENV) and not live_terminal(io.StringIO(), TTY_ENV)
    assert not live_terminal(Terminal(), {"TERM": "dumb"})
    assert colour_wanted(Terminal(), TTY_ENV)
    assert not colour_wanted(Terminal(), {**TTY_ENV, "NO_COLOR": "1"})  # https://no-color.org
    assert colour_wanted(Terminal(), {**TTY_ENV, "NO_COLOR": ""})  # set but empty: no effect
    assert printable("a\tb\n\x1b[31mc") == "a b [31mc"


def test_waiting_beats_in_a_log_and_stays_quiet_on_a_terminal() -> None:
    lines: list[str] = []
    log = Ticker(io.StringIO(), environ=TTY_ENV)
    with ticker.waiting("uv install", lines.append, every=0.05, ticker=log, detail=lambda: "3 MB written"):
        time.sleep(0.18)
    assert len(lines) >= 2 and lines[0].startswith("rocmkit: uv install: still running (")
    assert lines[0].endswith(", 3 MB written)")
    term = Terminal()
    lines.clear()
    with ticker.waiting(
        "uv install", lines.append, every=0.05, ticker=Ticker(term, environ=TTY_ENV, interval=0.02)
    ):
        time.sleep(0.15)
    assert lines == [] and "\r  uv install: running (" in term.getvalue()


def test_the_thread_task_and_its_phase_for_deep_code() -> None:
    tick = Ticker(Terminal(), environ=TTY_ENV, enabled=False)
    assert ticker.current_task() is None
    with tick.task("outer") as outer:
        with tick.task("inner") as inner:
            assert ticker.current_task() is inner
            with ticker.in_phase("importing torch"):
                assert inner.phase()[0] == "importing torch"
            assert inner.phase()[0] == "running"
        assert ticker.current_task() is outer
        seen: list[object] = []
        other = threading.Thread(target=lambda: seen.append(ticker.current_task()))
        other.start()
        other.join()
        assert seen == [None]  # another thread's task is its own
    assert ticker.current_task() is None and tick.tasks == []


def test_a_child_says_its_phase_and_the_parent_reads_it_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "phase.txt"
    monkeypatch.delenv(PHASE_ENV, raising=False)
    say_phase("nobody listens")  # no file named: nothing happens
    assert not target.exists()
    monkeypatch.setenv(PHASE_ENV, str(target))
    say_phase("compiling resnet")
    assert read_phase(target) == "compiling resnet"
    say_phase("x" * 10_000)
    assert read_phase(target) == "x" * 200  # what a child says is capped, and so is the read
    assert read_phase(tmp_path / "none.txt") is None
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert read_phase(fifo) is None  # refused, never a blocked status line
    monkeypatch.setenv(PHASE_ENV, str(tmp_path / "no-such-folder" / "phase.txt"))
    say_phase("compiling")  # a write that fails changes nothing


def test_bytes_written_are_the_childs_own_count() -> None:
    before = ticker.written_bytes([os.getpid()])
    assert before is not None
    with open(os.devnull, "w") as sink:
        sink.write("x" * 100_000)
        sink.flush()
    after = ticker.written_bytes([os.getpid()])
    assert after is not None and after >= before + 100_000
    assert ticker.written_bytes([2**22 + 12345]) is None  # gone (or never there): nothing to say
    assert ticker.size_text(741_000_000) == "741 MB" and ticker.size_text(4_100_000_000) == "4.1 GB"


def test_on_a_terminal_every_tick_the_clock_moved_redraws_the_line() -> None:
    """The terminal's half of "never silent", on a clock the test moves: the thread's tick
    (every INTERVAL_S) redraws the line whenever its clock text changed, so no stretch of ten
    ticks (1 s of that clock) goes without a write, however long the wait."""
    clock = Clock()
    term = Terminal()
    tick = Ticker(term, environ=TTY_ENV, clock=clock)
    with tick.task("torch.import", phase="importing torch"):
        writes = []
        for n in range(1, 601):  # a minute of the controlled clock, at 0.1 s a tick
            clock.now = 100.0 + n / 10
            before = len(term.getvalue())
            tick.tick()
            writes.append(len(term.getvalue()) > before)
        silent = max(len(s) for s in "".join("x" if w else "." for w in writes).split("x"))
        assert silent <= 10, writes
        assert sum(writes) >= 590  # the clock shows tenths below a minute, whole seconds after
        assert tick.ticks == 600


def test_off_a_terminal_a_command_writes_a_still_running_line_after_4_s_of_silence() -> None:
    """The log's half, on a controlled clock: with the heartbeat on (the CLI's), a wait that
    lasts gets a plain line (no carriage return) whenever nothing was written for
    PIPED_BEAT_S; a normal line restarts the count; no task, no line; off (--quiet, a library
    call), nothing."""
    clock = Clock()
    log = io.StringIO()
    tick = Ticker(log, environ=TTY_ENV, clock=clock, heartbeat=True)
    tick.prefix = "doctor [3/9] "
    stamps: list[int] = []

    def run_ticks(n: int) -> None:
        for _ in range(n):
            clock.now = 100.0 + (tick.ticks + 1) / 10  # exact tenths: INTERVAL_S a tick
            before = log.getvalue().count("\n")
            tick.tick()
            stamps.extend([tick.ticks] * (log.getvalue().count("\n") - before))

    with tick.task("compile.correctness", phase="compiling the transformer", detail=lambda: "2 graphs"):
        run_ticks(200)  # 20 s of the controlled clock
        tick.line("[3/9] PASS  torch.import (1.20 s) ok")
        stamps.append(tick.ticks)
        run_ticks(35)  # 3.5 s after a line: nothing yet
        run_ticks(100)
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert lines[0] == (
        "rocmkit: doctor [3/9] compile.correctness: still running (4.0 s, compiling the transformer, 2 graphs)"
    )
    gaps = [b - a for a, b in zip([0, *stamps], [*stamps, tick.ticks], strict=True)]
    assert max(gaps) <= round(ticker.PIPED_BEAT_S / ticker.INTERVAL_S), gaps
    assert len(stamps) == 5 + 1 + 3  # 20 s: five beats; the line; 13.5 s after it: three
    size = len(log.getvalue())
    run_ticks(100)  # no task open: nothing to say
    tick.heartbeat = False
    with tick.task("compile.correctness"):
        run_ticks(100)
    assert len(log.getvalue()) == size
