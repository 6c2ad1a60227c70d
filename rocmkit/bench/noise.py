"""Is a benchmark row too noisy to judge? The host's load while it ran, and its repeats' spread.

``rocmkit bench compare`` used to call 0.80x -> 0.02x "same, within the noise" on a loaded
machine: the interquartile ranges overlapped because the loaded run's spread covered almost
everything. A row is now *not judged* when its run cannot support a verdict, and the reason is
said:

- **CPU steal** above ``MAX_STEAL`` of the CPU time while the model ran (a VM whose host gave
  its cores to others: ``/proc/stat``'s steal column);
- **load average** above ``MAX_LOAD_PER_CPU`` runnable tasks per CPU (the 1-minute average from
  ``/proc/loadavg``, the worse of before and after the model): the benchmark's own threads make
  about one per CPU, so half as many again means others were competing for the cores;
- **spread of the repeats**: the paired eager/compiled ratios' interquartile range wider than
  ``MAX_RATIO_IQR`` of their median.

The thresholds are rocmkit's own choice (a run loaded that much was seen to move speedups by
tens of percent on the project's 2-core VM); they are not from an upstream source.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rocmkit.bench.results import ModelResult

MAX_STEAL = 0.10
MAX_LOAD_PER_CPU = 1.5
MAX_RATIO_IQR = 0.5


@dataclass(frozen=True, kw_only=True)
class HostSample:
    loadavg: float | None  # 1-minute load average
    cpus: int
    total: int | None  # jiffies, all CPUs, all states (/proc/stat "cpu" line)
    steal: int | None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="ascii", errors="replace")
    except OSError:
        return None


def sample(read: Callable[[str], str | None] = _read) -> HostSample:
    """The host's load now (Linux /proc; None where it cannot be read)."""
    load: float | None = None
    text = read("/proc/loadavg")
    if text:
        try:
            load = float(text.split()[0])
        except (ValueError, IndexError):
            load = None
    total = steal = None
    stat = read("/proc/stat")
    for line in (stat or "").splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            try:
                values = [int(v) for v in parts[1:]]
            except ValueError:
                break
            # user nice system idle iowait irq softirq steal guest guest_nice; guest time is
            # already counted in user, so the total stops at steal.
            total = sum(values[:8])
            steal = values[7] if len(values) > 7 else 0
            break
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return HostSample(loadavg=load, cpus=max(1, cpus), total=total, steal=steal)


def host_load(before: HostSample, after: HostSample) -> dict[str, float]:
    """What a row records of the host while its model ran."""
    out: dict[str, float] = {"cpus": float(after.cpus)}
    loads = [x for x in (before.loadavg, after.loadavg) if x is not None]
    if loads:
        out["loadavg"] = max(loads)
    if None not in (before.total, after.total, before.steal, after.steal):
        assert before.total is not None and after.total is not None
        assert before.steal is not None and after.steal is not None
        span = after.total - before.total
        if span > 0:
            out["steal"] = max(0.0, (after.steal - before.steal) / span)
    return out


def too_noisy(m: ModelResult) -> list[str]:
    """Why this row's timings cannot be judged; empty when they can."""
    why: list[str] = []
    load = m.host_load or {}
    steal = load.get("steal")
    if steal is not None and steal > MAX_STEAL:
        why.append(f"CPU steal {steal:.0%} while it ran")
    avg, cpus = load.get("loadavg"), load.get("cpus")
    if avg is not None and cpus and avg > MAX_LOAD_PER_CPU * cpus:
        why.append(f"load average {avg:.1f} on {cpus:.0f} CPU(s)")
    if m.speedup and m.speedup_q1 is not None and m.speedup_q3 is not None:
        spread = (m.speedup_q3 - m.speedup_q1) / m.speedup
        if spread > MAX_RATIO_IQR:
            why.append(
                f"repeats spread {m.speedup_q1:.2f}-{m.speedup_q3:.2f}x around {m.speedup:.2f}x "
                f"(IQR {spread:.0%} of the median)"
            )
    return why
