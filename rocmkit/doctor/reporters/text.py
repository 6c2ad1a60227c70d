"""The human view: progress on stderr while checks run, then a table and one
verdict line on stdout."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

import click

from rocmkit.doctor.registry import Check
from rocmkit.doctor.result import CheckResult, Report, Status

_COLOURS = {
    Status.PASS: "green",
    Status.WARN: "yellow",
    Status.FAIL: "red",
    Status.ERROR: "magenta",
    Status.SKIP: "bright_black",
}
_VERDICT_WORDS = {
    Status.PASS: "PASS: every check passed",
    Status.SKIP: "PASS: every check that could run passed",
    Status.WARN: "WARN: no failures, but warnings to look at",
    Status.FAIL: "FAIL: at least one check found a problem",
    Status.ERROR: "ERROR: at least one check could not run",
}


def _status(s: Status, colour: bool) -> str:
    word = s.value.upper().ljust(5)
    return click.style(word, fg=_COLOURS[s], bold=s in (Status.FAIL, Status.ERROR)) if colour else word


class Progress:
    """One stderr line per check as it finishes (checks can take minutes)."""

    def __init__(self, total: int, stream: TextIO | None = None, colour: bool | None = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self.colour = self.stream.isatty() if colour is None else colour

    def start(self, chk: Check) -> None:
        if self.stream.isatty():
            where = " (child process)" if chk.isolated else ""
            self.stream.write(f"[{self.done + 1}/{self.total}] {chk.name}{where} ...\r")
            self.stream.flush()

    def result(self, chk: Check, results: list[CheckResult]) -> None:
        self.done += 1
        # On a terminal, wipe the "... running" line that start() left.
        clear = "\x1b[2K" if self.stream.isatty() else ""
        for r in results:
            self.stream.write(
                f"{clear}[{self.done}/{self.total}] {_status(r.status, self.colour)} {r.name} "
                f"({r.duration_s:.2f} s) {r.message}\n"
            )
        self.stream.flush()


def _figures(r: CheckResult) -> str:
    parts = []
    for f in r.figures:
        text = f"{f.name}={f.value:.4g} {f.unit}"
        if f.fraction is not None:
            text += f" ({f.fraction:.0%} of reference)"
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
    counts = {s: sum(r.status is s for r in results) for s in Status}
    summary = ", ".join(f"{n} {s.value}" for s, n in counts.items() if n)
    verdict = report.verdict
    word = _VERDICT_WORDS[verdict]
    if colour:
        word = click.style(word, fg=_COLOURS[verdict], bold=True)
    lines.append("")
    lines.append(f"{word} ({summary or 'no checks'}; level {report.level}; exit code {report.exit_code})")
    return "\n".join(lines) + "\n"
