"""The human view: progress on stderr while checks run, then a table and one
verdict line on stdout."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

import click

from rocmkit.doctor.registry import Check
from rocmkit.doctor.result import CheckResult, Report, Status
from rocmkit.util.ticker import Ticker, colour_wanted, shared

_COLOURS = {
    Status.PASS: "green",
    Status.WARN: "yellow",
    Status.FAIL: "red",
    Status.ERROR: "magenta",
    Status.SKIP: "bright_black",
}
# The verdict line counts what happened instead of praising it: "every check passed"
# over 5 passes and 17 skips told a user without torch that PyTorch was fine.
_COUNT_WORDS = {
    Status.FAIL: "failed",
    Status.ERROR: "could not run",
    Status.WARN: "warned",
    Status.PASS: "passed",
    Status.SKIP: "skipped",
}


def _status(s: Status, colour: bool) -> str:
    word = s.value.upper().ljust(5)
    return click.style(word, fg=_COLOURS[s], bold=s in (Status.FAIL, Status.ERROR)) if colour else word


class Progress:
    """One stderr line per result as checks finish (checks can take minutes); on a terminal,
    the status line under them (:mod:`rocmkit.util.ticker`) names the check that runs and what
    it waits on (the worker importing torch, a kernel compiling), redrawn as it goes.

    The counter counts results, not checks: a check that reports several sub-results
    (``attention.sdpa.*``) takes one number each, and the total grows by as many, so the last
    line reads ``[N/N]`` and N is the number of rows in the report."""

    def __init__(
        self,
        total: int,
        stream: TextIO | None = None,
        colour: bool | None = None,
        status: Ticker | None = None,
    ) -> None:
        self.total = total  # results expected: one per selected check until a check reports more
        self.done = 0  # results printed
        self.stream = stream or sys.stderr
        self.colour = colour_wanted(self.stream) if colour is None else colour
        self.status = status or shared()
        self._count()

    def _count(self) -> None:
        self.status.prefix = f"doctor [{self.done}/{self.total}] "

    def start(self, chk: Check) -> None:
        """A check starts: nothing to print (the status line shows it while it runs)."""

    def result(self, chk: Check, results: list[CheckResult]) -> None:
        self.total += max(0, len(results) - 1)
        for r in results:
            self.done += 1
            self.status.line(
                f"[{self.done}/{self.total}] {_status(r.status, self.colour)} {r.name} "
                f"({r.duration_s:.2f} s) {r.message}",
                stream=self.stream,
            )
        self._count()


def _figures(r: CheckResult) -> str:
    parts = []
    for f in r.figures:
        text = f"{f.name}={f.value:.4g} {f.unit}"
        if f.fraction is not None:
            text += f" ({f.fraction:.0%} of reference)"
        if f.sku is not None:
            # Judged against the GPU model's row of matrices/sku.toml: share of peak and the floor.
            judged = [f"{f.pct_of_peak:g}% of {f.sku} peak"] if f.pct_of_peak is not None else []
            if f.floor is not None:
                judged.append(f"floor {f.floor:.4g} {f.unit}")
            if f.floor_fraction is not None:
                judged.append(f"floor {f.floor_fraction:g}x reference")
            if f.reference_floor is not None:
                judged.append(f"reference floor {f.reference_floor:.4g} {f.unit}")
            text += f" [{', '.join(judged)}{': BELOW' if f.below_floor else ''}]"
        parts.append(text)
    return "; ".join(parts)


def render(report: Report, *, colour: bool = False, verbose: bool = False) -> str:
    results: Sequence[CheckResult] = report.results
    width = max((len(r.name) for r in results), default=5)
    lines = [f"{'STATUS':5}  {'CHECK':{width}}  {'TIME':>7}  MESSAGE"]
    for r in results:
        lines.append(f"{_status(r.status, colour)}  {r.name:{width}}  {r.duration_s:6.2f}s  {r.message}")
        figs = _figures(r)
        if figs:
            lines.append(f"{'':5}  {'':{width}}  {'':7}  {figs}")
        if r.remedy and (r.status in (Status.FAIL, Status.WARN, Status.ERROR) or verbose):
            lines.append(f"{'':5}  {'':{width}}  {'':7}  fix: {r.remedy}")
        if verbose or r.status is Status.ERROR:
            for line in r.details.get("stderr_tail", [])[-5:]:
                lines.append(f"{'':5}  {'':{width}}  {'':7}  | {line}")
    lines.append("")
    if report.caches:
        lines.append(cache_line(report.caches))
    lines.append(verdict_line(report, colour=colour))
    hint = next_step(results)
    if hint:
        lines.append(hint)
    return "\n".join(lines) + "\n"


def cache_line(caches: dict[str, dict[str, float]]) -> str:
    """``compile caches: triton 12/14 hits (86 %), inductor 3/3 hits (100 %)``."""
    parts = [
        f"{name} {int(c['hits'])}/{int(c['hits'] + c['misses'])} hits ({100 * c['hit_rate']:.0f} %)"
        for name, c in sorted(caches.items())
    ]
    return "compile caches: " + ", ".join(parts)


def verdict_line(report: Report, *, colour: bool = False) -> str:
    """``PASS: 5 passed, 17 skipped (level 1; exit code 0)``."""
    verdict = Status.PASS if report.verdict is Status.SKIP else report.verdict
    counts = {s: sum(r.status is s for r in report.results) for s in _COUNT_WORDS}
    summary = ", ".join(f"{n} {_COUNT_WORDS[s]}" for s, n in counts.items() if n) or "no checks ran"
    word = verdict.value.upper()
    if colour:
        word = click.style(word, fg=_COLOURS[verdict], bold=True)
    return f"{word}: {summary} (level {report.level}; exit code {report.exit_code})"


def next_step(results: Sequence[CheckResult]) -> str | None:
    """One line on what to do when checks were skipped because torch is not installed
    (level 0, or checks picked by name) and no ``torch.import`` failure already says it."""
    if any(r.name == "torch.import" and r.status is Status.FAIL for r in results):
        return None
    skipped = [r for r in results if r.status is Status.SKIP and r.details.get("missing") == "torch"]
    if not skipped:
        return None
    fix = next((r.remedy for r in skipped if r.remedy), None)
    then = f"install it with {fix}, then " if fix else "install it, then "
    return f"next: {len(skipped)} check(s) skipped because torch is not installed; {then}run `rocmkit doctor --level 1`"
