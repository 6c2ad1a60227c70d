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

    The counter counts checks, and its total is the number of checks selected, fixed at the
    start: it never jumps (``[36/39]`` then ``[37/41]`` read as a moving goal). A check that
    reports several sub-results (``attention.sdpa.*``) prints one line each under its number."""

    def __init__(
        self,
        total: int,
        stream: TextIO | None = None,
        colour: bool | None = None,
        status: Ticker | None = None,
        quiet: bool = False,
    ) -> None:
        self.total = total  # checks selected
        self.done = 0  # checks whose results are in
        self.stream = stream or sys.stderr
        self.colour = colour_wanted(self.stream) if colour is None else colour
        self.status = status or shared()
        self.quiet = quiet  # --quiet: no progress lines (the report on stdout only)
        self._count()

    def _count(self) -> None:
        self.status.prefix = f"doctor [{self.done}/{self.total}] "

    def start(self, chk: Check) -> None:
        """A check starts: nothing to print (the status line shows it while it runs)."""

    def result(self, chk: Check, results: list[CheckResult]) -> None:
        self.done += 1
        self.total = max(self.total, self.done)  # a check the count did not foresee: never [5/4]
        for r in results:
            if self.quiet:
                continue
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


# The rows the summary keeps (without -v): what needs a look. Passes and skips were on the
# progress lines already, and are in full in -v's table and the JSON/JUnit reports.
_SUMMARY = (Status.FAIL, Status.ERROR, Status.WARN)


def render(report: Report, *, colour: bool = False, verbose: bool = False) -> str:
    """The table of every result with ``verbose``; else the summary: the results that failed,
    could not run or warned (none: no table), then the counts and the verdict."""
    results: Sequence[CheckResult] = report.results
    shown = list(results) if verbose else [r for r in results if r.status in _SUMMARY]
    width = max((len(r.name) for r in shown), default=5)
    lines = [f"{'STATUS':5}  {'CHECK':{width}}  {'TIME':>7}  MESSAGE"] if shown else []
    for r in shown:
        lines.append(f"{_status(r.status, colour)}  {r.name:{width}}  {r.duration_s:6.2f}s  {r.message}")
        figs = _figures(r)
        if figs:
            lines.append(f"{'':5}  {'':{width}}  {'':7}  {figs}")
        if r.remedy and (r.status in (Status.FAIL, Status.WARN, Status.ERROR) or verbose):
            lines.append(f"{'':5}  {'':{width}}  {'':7}  fix: {r.remedy}")
        if verbose or r.status is Status.ERROR:
            for line in r.details.get("stderr_tail", [])[-5:]:
                lines.append(f"{'':5}  {'':{width}}  {'':7}  | {line}")
    if shown:
        lines.append("")
    if report.caches:
        lines.append(cache_line(report.caches))
    if len(shown) < len(results):
        lines.append(f"{len(results) - len(shown)} more passed or skipped: `rocmkit doctor -v` shows every result, "
                     "as do --format json and --report junit=FILE")
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
