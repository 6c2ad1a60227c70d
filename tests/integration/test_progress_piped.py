"""Never silent in a log (issue 38): `rocmkit doctor --level 2` with its output piped, as Slurm
and CI run it, writes a line at least every 5 s of the ticker's clock.

The clock is the test's: the shared ticker's clock counts the ticks of its own thread (0.1 s
each), which runs from the command's start to its end, tasks or not, and every line written to
stderr or stdout is stamped with the tick it came at. So the property is counted, not timed: no
stretch of 50 ticks without a line, on an idle machine or a loaded one. A stretch of the run that
no task covers (nothing says what runs) shows as a gap however fast the machine; the wall-clock
figure is measured in benchmarks/bench_progress.py --piped."""

from __future__ import annotations

import io
import itertools
import re
import sys

import pytest

from rocmkit.cli import group
from rocmkit.util import ticker
from rocmkit.util.ticker import Ticker

pytestmark = pytest.mark.integration


class Log(io.StringIO):
    """A pipe (not a TTY) that stamps every line it gets with the ticker's tick count."""

    def __init__(self, tick: Ticker, stamps: list[tuple[int, str]]) -> None:
        super().__init__()
        self.tick = tick
        self.stamps = stamps
        self.partial = ""

    def write(self, text: str) -> int:
        self.partial += text
        *whole, self.partial = self.partial.split("\n")
        self.stamps.extend((self.tick.ticks, line) for line in whole)
        return super().write(text)


def test_doctor_level_2_piped_writes_a_line_every_5_s_of_its_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    holder: list[Ticker] = []
    tick = Ticker(clock=lambda: holder[0].ticks * ticker.INTERVAL_S if holder else 0.0, enabled=False)
    holder.append(tick)
    stamps: list[tuple[int, str]] = []
    monkeypatch.setattr(ticker, "_shared", tick)
    monkeypatch.setattr(sys, "stderr", Log(tick, stamps))
    monkeypatch.setattr(sys, "stdout", Log(tick, stamps))
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # run() sets its own
    monkeypatch.setattr(group, "_install_signal_handlers", lambda: None)  # pytest's stay
    with pytest.raises(SystemExit) as ended:
        group.run(["doctor", "--level", "2"])
    end = tick.ticks
    text = "\n".join(line for _, line in stamps)
    assert ended.value.code in (0, 1, 2), text[-3000:]
    assert "\r" not in text
    beat = round(ticker.PIPED_BEAT_S / ticker.INTERVAL_S)
    times = [0, *(t for t, _ in stamps), end]
    gaps = [(b - a, i) for i, (a, b) in enumerate(itertools.pairwise(times))]
    longest, at = max(gaps)
    before = stamps[at - 1][1] if at else "(the start)"
    assert longest <= beat + 1, f"{longest} ticks without a line, after {before!r}"
    # The compile checks outlast 4 s: their "still running" lines name them, with a clock.
    beats = [line for _, line in stamps if "still running" in line]
    assert beats, text[-3000:]
    assert all(re.match(r"rocmkit: doctor \[\d+/\d+\] [\w.]+: still running \(\d", b) for b in beats), beats
    # The counter is stable: its total never moves.
    totals = {m.group(1) for _, line in stamps if (m := re.match(r"\[\d+/(\d+)\] ", line))}
    assert len(totals) == 1, totals
