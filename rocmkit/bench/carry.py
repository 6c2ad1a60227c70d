"""``rocmkit bench`` carried out, in install's shape: the request (:mod:`rocmkit.bench.request`:
what was asked, checked when made) <- prepare (the measured Python, the command line recorded
in the result) <- carry out (run or load the suite, render, say the exit code).

The command line arrives as ``argv`` (the words after ``rocmkit``), never read from
``sys.argv``: an in-process call (the API, the tests) records what it was given. Every write goes
through ``out`` (the CLI's ``OUT``); the exit code is returned, not raised, so the Click body only
passes it on.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rocmkit.bench.request import BenchRequest, CompareRequest, MergeRequest
    from rocmkit.bench.results import ModelResult, SuiteResult
    from rocmkit.bench.suite import Progress


class Output(Protocol):
    """Where bench writes (the CLI's ``OUT``): data on stdout, messages on stderr, files whole."""

    def data(self, text: str, *, nl: bool = True) -> None: ...

    def json(self, obj: Any) -> None: ...

    def lines(self, lines: list[str] | tuple[str, ...]) -> None: ...

    def message(self, text: str) -> None: ...

    def file(self, path: Path, text: str, *, mode: int | None = None, fix: str = ...) -> None: ...


@dataclass(frozen=True, kw_only=True)
class Prepared:
    """What a ``bench models`` run reads before it runs: whose torch, and how it was asked."""

    python: str  # the interpreter whose torch is measured
    command: str  # "rocmkit bench models ...", recorded in the result so a table says what made it


def command_text(argv: Sequence[str]) -> str:
    """The command line as recorded: from ``bench`` on (global options before it say nothing
    about the run), ``rocmkit bench models`` when none was given."""
    words = list(argv)
    words = words[words.index("bench") :] if "bench" in words else ["bench", "models", *words]
    return "rocmkit " + shlex.join(words)


def prepare(req: BenchRequest, argv: Sequence[str], out: Output) -> Prepared:
    """The Python whose torch is measured, chosen as doctor and install choose it."""
    from rocmkit.pyenv import select_python

    python = select_python(venv=req.venv, python=req.python_path)
    if not python.own:
        out.message(f"rocmkit: measuring the Python at {python.executable} ({python.version})")
    return Prepared(python=str(python.executable), command=command_text(argv))


def carry_out(req: BenchRequest, argv: Sequence[str], out: Output) -> int:
    """``bench models``: list, or load a saved run, or prepare and run the suite; render what was
    asked; 0 when every model passed, 1 otherwise."""
    from rocmkit.bench.models import select

    if req.list_only:
        specs = select(req.names, suite=req.suite_name)
        shard = req.shard
        out.lines([f"{s.name:36} {s.suite:12} {s.description}" for s in (shard.take(specs) if shard else specs)])
        return 0
    if req.load_path is not None:
        suite = load_with_warnings(req.load_path, out)
    else:
        suite = _run(req, prepare(req, argv, out), out)
    render(req, suite, out)
    return 0 if suite.summary.passed == suite.summary.total else 1


def _run(req: BenchRequest, prepared: Prepared, out: Output) -> SuiteResult:
    from rocmkit.bench.suite import run_suite
    from rocmkit.util import ticker

    if req.results_path is not None and req.suite_name != "builtin":
        out.message(f"rocmkit: rows go to {req.results_path} (continue a stopped run with --resume)")

    def started(p: Progress) -> None:
        if ticker.shared().live:
            return  # the status line shows the model, its phase and the ETA, updated as it runs
        eta = f", about {ticker.duration_text(p.eta_s)} left" if p.eta_s is not None else ""
        before = f" ({p.done_before} done before)" if p.done_before else ""
        out.message(f"[{p.index}/{p.total}{before}] {p.name}: running ...{eta}")

    def finished(row: ModelResult) -> None:
        speed = f" {row.speedup:.2f}x" if row.speedup else ""
        out.message(f"{row.name}: {row.status}{speed} ({row.duration_s:.0f} s)")

    return run_suite(
        req.suite_options(prepared.python),
        on_start=started,
        on_result=finished,
        command=prepared.command,
        on_note=out.message,
    )


def render(req: BenchRequest, suite: SuiteResult, out: Output) -> None:
    """The table (or JSON) on stdout and each file asked for."""
    from rocmkit.bench import html, results

    if req.csv_path is not None:
        out.file(req.csv_path, results.to_csv(suite))
    if req.html_path is not None or req.svg_path is not None:
        from rocmkit.bench.compare import load_references

        # Published figures for this suite and mode (the MI250 line for HF training) drawn alongside.
        refs = [r for r in load_references() if r.suite == suite.suite and r.mode == suite.mode]
        if req.html_path is not None:
            out.file(req.html_path, html.render_page(suite, refs))
        if req.svg_path is not None:
            out.file(req.svg_path, html.render_svg(suite, refs))
    if req.md_path is not None:
        out.file(req.md_path, results.to_markdown(suite))
    if req.as_json:
        out.json(suite.to_dict())
    else:
        out.data(results.to_text(suite), nl=False)


def load_with_warnings(path: Path, out: Output) -> SuiteResult:
    """A saved run, warning on stderr about rows it set aside as another run's."""
    from rocmkit.bench.saved import load_saved

    notes: list[str] = []
    suite = load_saved(path, notes)
    for note in notes:
        out.message(f"rocmkit: warning: {note}")
    return suite


def merge(req: MergeRequest, out: Output) -> int:
    """``bench merge``: the shards' rows as one result; 0 when every model has a row and passed."""
    from rocmkit.bench import results, runlog

    logs = [runlog.read(f) for f in req.files]
    for log in logs:
        if log.set_aside:
            out.message(f"rocmkit: warning: {log.set_aside_text()}")
    merged = runlog.merge(logs)
    if merged.missing:
        more = " ..." if len(merged.missing) > 10 else ""
        out.message(
            f"rocmkit: {len(merged.missing)} model(s) have no row in these files: "
            f"{', '.join(merged.missing[:10])}{more} (a shard missing or unfinished? rerun it with --resume)"
        )
    if req.out_path is not None:
        out.file(req.out_path, json.dumps(merged.suite.to_dict(), indent=2) + "\n")
    if req.as_json:
        out.json(merged.suite.to_dict())
    else:
        out.data(results.to_text(merged.suite), nl=False)
    s = merged.suite.summary
    return 1 if merged.missing or s.passed < s.total else 0


def compare(req: CompareRequest, out: Output) -> int:
    """``bench compare``: 0 when nothing is flagged, 1 when something is, 3 when nothing is
    flagged but a model could not be judged."""
    from rocmkit.bench import compare as cmp
    from rocmkit.bench.saved import load_saved

    refs = cmp.load_references(req.reference_path)
    notes: list[str] = []
    b_meant: list[str] = []
    a, b = load_saved(req.a_path, notes), load_saved(req.b_path, notes, b_meant)
    c = cmp.compare(a, b, min_change=req.min_change, references=refs, notes=notes, b_meant=b_meant)
    if req.html_path is not None:
        out.file(req.html_path, cmp.render_page(c))
    if req.as_json:
        out.json(cmp.to_dict(c))
    else:
        out.data(cmp.to_text(c), nl=False)
    if c.flagged:
        return 1
    return 3 if c.not_judged else 0
