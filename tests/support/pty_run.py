"""Run a real command with its stderr on a pseudo-terminal, timing every chunk it writes.

What a person at a terminal sees: the command's stderr is the slave side of a fresh pty (with
``TERM`` and a window size set), stdout a pipe (the data, kept apart so a test can tell the two). Every read of the master side is stamped with the
seconds since the start, so a test can measure the longest time the screen stayed unchanged.
Output post-processing is off on the pty (no ``\\n`` -> ``\\r\\n``): every ``\\r`` read is the
command's own.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PtyRun:
    code: int
    chunks: tuple[tuple[float, str], ...]  # (seconds since start, text read from the terminal)
    ended_s: float  # when the process exited
    stdout: str

    @property
    def stderr(self) -> str:
        return "".join(text for _, text in self.chunks)

    def longest_gap(self) -> tuple[float, float, str]:
        """The longest time nothing reached the terminal (start to exit): its length, when it
        began, and what the screen last got before it."""
        times = [0.0, *(t for t, _ in self.chunks), self.ended_s]
        best = (0.0, 0.0, "")
        for i in range(1, len(times)):
            gap = times[i] - times[i - 1]
            if gap > best[0]:
                best = (gap, times[i - 1], self.chunks[i - 2][1] if i >= 2 else "")
        return best

    def screen(self) -> list[str]:
        """The rows a terminal shows at the end (colours left out): each ``\r`` goes back to the
        row's start and what follows overwrites it."""
        rows: list[str] = []
        row: list[str] = []
        col = 0
        for ch in re.sub(r"\x1b\[[0-9;]*m", "", self.stderr):
            if ch == "\n":
                rows.append("".join(row).rstrip())
                row, col = [], 0
            elif ch == "\r":
                col = 0
            else:
                row[col : col + 1] = [ch]
                col += 1
        rows.append("".join(row).rstrip())
        return rows

    def status_texts(self) -> list[str]:
        """Each status line drawn (``\\r`` followed by text, up to the next ``\\r`` or newline)."""
        texts = []
        for piece in self.stderr.split("\r")[1:]:
            text = piece.split("\n", 1)[0].strip()
            if text:
                texts.append(text)
        return texts


def run_on_pty(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float,
    columns: int = 160,
    term: str = "xterm-256color",
) -> PtyRun:
    master, slave = os.openpty()
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # no output processing: "\n" stays "\n"
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        env={**env, "TERM": term},
        start_new_session=True,  # its own group: nothing it leaves behind outlives the test
    )
    os.close(slave)
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    chunks: list[tuple[float, str]] = []
    out: list[bytes] = []
    deadline = start + timeout
    open_fds = {master, proc.stdout.fileno()}
    try:
        while open_fds and time.monotonic() < deadline:
            ready, _, _ = select.select(list(open_fds), [], [], 0.05)
            for fd in ready:
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                except OSError:  # EIO: the slave side closed (the process and its children are gone)
                    data = b""
                if not data:
                    open_fds.discard(fd)
                elif fd == master:
                    chunks.append((time.monotonic() - start, data.decode("utf-8", "replace")))
                else:
                    out.append(data)
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
        proc.stdout.close()
    return PtyRun(
        code=code, chunks=tuple(chunks), ended_s=time.monotonic() - start, stdout=b"".join(out).decode()
    )
