"""``rocmkit bench``: benchmarks. ``rocmkit bench models``: torch.compile against eager on the model set."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rocmkit.bench.request import BenchRequest, CompareRequest
from rocmkit.bench.saved import load_saved
from rocmkit.cli.request import OUT, request
from rocmkit.util import ticker

if TYPE_CHECKING:
    from rocmkit.bench.results import SuiteResult


@click.group(name="bench")
def cli() -> None:
    """Benchmarks: torch.compile vs eager on a built-in model set."""


@cli.command(name="models")
@click.option("--suite", "suite_name", type=click.Choice(["builtin", "huggingface", "timm"]), default="builtin",
    show_default=True, help="builtin (5 models), or PyTorch's dashboard lists: huggingface (55), timm (18).")
@click.option("--results", "results_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Append each model's row to this JSON-lines file as it finishes (for --resume and merge).")
@click.option("--resume", is_flag=True, help="Run only the models without a row in --results.")
@click.option("--shard", "shard_text", metavar="I/N", default=None, help="Run the I-th of N shards.")
@click.option("--models", "models", multiple=True, metavar="NAMES",
    help="Models to run, comma-separated or repeated (default: all). See --list.")
@click.option("--mode", type=click.Choice(["infer", "train"]), default="infer", show_default=True,
    help="Inference, or a training step (forward, backward, optimizer step).")
@click.option("--dtype", type=click.Choice(["fp32", "bf16", "fp16"]), default="fp32", show_default=True,
    help="fp32, or AMP autocast to bf16/fp16 (meant for GPUs).")
@click.option("--size", type=click.Choice(["tiny", "small", "full"]), default=None,
    help="Model sizes (small: builtin only). [default: tiny on the CPU, full on a GPU]")
@click.option("--repeat", "-n", type=click.IntRange(min=1), default=30, show_default=True,
    help="Timing samples (eager and compiled interleaved); medians are reported.")
@click.option("--warmup", type=click.IntRange(min=1), default=3, show_default=True,
    help="Warm-up calls before timing, for eager and for compiled.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
    help="Where to run; 'cuda' also means a ROCm GPU.")
@click.option(
    "--impl",
    type=click.Choice(["auto", "rocmkit", "transformers"]),
    default="auto",
    show_default=True,
    help="Model implementations: transformers' classes when installed, or rocmkit's.",
)
@click.option(
    "--cosine", is_flag=True, help="Accuracy by cosine similarity >= 0.99 instead of the fp64 rule."
)
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=1), default=None,
    help="Seconds per model before its child is killed. [default: by size, 600-1800]")
@click.option(
    "--compile-mode",
    type=click.Choice(["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]),
    default="default",
    show_default=True,
    help="torch.compile mode; reduce-overhead adds CUDA/HIP graphs, as PyTorch's GPU dashboard.",
)
@click.option("--threads", type=click.IntRange(min=1), default=None,
    help="CPU threads for torch and inductor's kernels (CPU runs). [default: torch's]")
@click.option("--isolation", type=click.Choice(["fork", "spawn"]), default="fork", show_default=True,
    help="Each model in a fork of one worker that imported torch and inductor once, or in a fresh "
    "interpreter (the slower baseline).")
@click.option("--json", "as_json", is_flag=True, help="Write the rocmkit.bench/1 JSON to stdout.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Also write one CSV row per model to FILE.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Also write a self-contained HTML page with the speedup chart to FILE.")
@click.option("--svg", "svg_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Also write the speedup chart alone as an SVG file.")
@click.option("--markdown", "md_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Also write the table as Markdown to FILE.")
@click.option(
    "--load",
    "load_path",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Render a saved --json result (table, --csv, --html, --svg, --markdown) instead of running.",
)
@click.option("--venv", type=click.Path(file_okay=False, path_type=Path),
    help="Measure this virtual environment's torch (as made by `rocmkit install --venv`). "
    "Default: the active venv, else rocmkit's own Python.")
@click.option("--python", "python_path", metavar="PATH", help="Measure this interpreter's torch.")
@click.option("--list", "list_only", is_flag=True, help="List the models and exit.")
@click.option("--perturb-compiled", "perturb", type=float, default=0.0, hidden=True,
    help="Diagnosis: add this to compiled outputs, to see the accuracy check fail.")
@request(BenchRequest)
def models_cmd(req: BenchRequest) -> None:
    """Measure torch.compile against eager on a model suite.

    Each model runs in its own process (a fork of one warm worker, unless
    --isolation spawn): warm-up, eager and compiled runs
    interleaved, speedup = median eager / median compiled, and the compiled
    output checked against eager. With --results each row is appended to a
    file as it finishes; --resume continues a killed run, --shard I/N splits
    one run (join the shards with `rocmkit bench merge`). Exit code 0 when
    every model passes, 1 when any model failed accuracy, compilation, or did
    not finish.
    """
    from rocmkit.bench import html, results
    from rocmkit.bench.models import select
    from rocmkit.bench.suite import Progress, run_suite

    if req.list_only:
        specs = select(req.names, suite=req.suite_name)
        shard = req.shard
        OUT.lines([f"{s.name:36} {s.suite:12} {s.description}" for s in (shard.take(specs) if shard else specs)])
        return
    if req.results_path is not None and req.suite_name != "builtin" and req.load_path is None:
        OUT.message(f"rocmkit: rows go to {req.results_path} (continue a stopped run with --resume)")

    def started(p: Progress) -> None:
        if ticker.shared().live:
            return  # the status line shows the model, its phase and the ETA, updated as it runs
        eta = f", about {ticker.duration_text(p.eta_s)} left" if p.eta_s is not None else ""
        before = f" ({p.done_before} done before)" if p.done_before else ""
        OUT.message(f"[{p.index}/{p.total}{before}] {p.name}: running ...{eta}")

    def finished(row: results.ModelResult) -> None:
        speed = f" {row.speedup:.2f}x" if row.speedup else ""
        OUT.message(f"{row.name}: {row.status}{speed} ({row.duration_s:.0f} s)")

    if req.load_path is not None:
        suite = _load_warning(req.load_path)
    else:
        # Recorded in the result so a table can say exactly what produced it.
        argv = sys.argv[sys.argv.index("bench") :] if "bench" in sys.argv else ["bench", "models"]
        suite = run_suite(
            req.suite_options(_measured_python(req)),
            on_start=started,
            on_result=finished,
            command="rocmkit " + shlex.join(argv),
            on_note=OUT.message,
        )
    if req.csv_path is not None:
        OUT.file(req.csv_path, results.to_csv(suite))
    if req.html_path is not None or req.svg_path is not None:
        from rocmkit.bench.compare import load_references

        # Published figures for this suite and mode (the MI250 line for HF training) drawn alongside.
        refs = [r for r in load_references() if r.suite == suite.suite and r.mode == suite.mode]
        if req.html_path is not None:
            OUT.file(req.html_path, html.render_page(suite, refs))
        if req.svg_path is not None:
            OUT.file(req.svg_path, html.render_svg(suite, refs))
    if req.md_path is not None:
        OUT.file(req.md_path, results.to_markdown(suite))
    if req.as_json:
        OUT.json(suite.to_dict())
    else:
        OUT.data(results.to_text(suite), nl=False)
    if suite.summary.passed < suite.summary.total:
        sys.exit(1)


def _load_warning(path: Path) -> SuiteResult:
    """A saved run, warning on stderr about rows it set aside as another run's."""
    notes: list[str] = []
    suite = load_saved(path, notes)
    for note in notes:
        OUT.message(f"rocmkit: warning: {note}")
    return suite


def _measured_python(req: BenchRequest) -> str:
    """The Python whose torch is measured, chosen as doctor and install choose it."""
    from rocmkit.pyenv import select_python

    python = select_python(venv=req.venv, python=req.python_path)
    if not python.own:
        OUT.message(f"rocmkit: measuring the Python at {python.executable} ({python.version})")
    return str(python.executable)


@cli.command(name="merge")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Write the merged rocmkit.bench/1 JSON to stdout.")
@click.option("--output", "-o", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Also write the merged result as rocmkit.bench/1 JSON to FILE.")
def merge_cmd(files: tuple[Path, ...], as_json: bool, out_path: Path | None) -> None:
    """Join the --results files of a sharded run (--shard I/N) into one result.

    The files must come from one run (same suite, mode, dtype, size, repeats,
    compile mode, backend); a model with rows in two files is an error. Exit
    code 0 when every model of the run has a row and passed, 1 otherwise.
    """
    from rocmkit.bench import results, runlog

    logs = [runlog.read(f) for f in files]
    for log in logs:
        if log.set_aside:
            OUT.message(f"rocmkit: warning: {log.set_aside_text()}")
    merged = runlog.merge(logs)
    if merged.missing:
        more = " ..." if len(merged.missing) > 10 else ""
        OUT.message(
            f"rocmkit: {len(merged.missing)} model(s) have no row in these files: "
            f"{', '.join(merged.missing[:10])}{more} (a shard missing or unfinished? rerun it with --resume)"
        )
    if out_path is not None:
        OUT.file(out_path, json.dumps(merged.suite.to_dict(), indent=2) + "\n")
    if as_json:
        OUT.json(merged.suite.to_dict())
    else:
        OUT.data(results.to_text(merged.suite), nl=False)
    s = merged.suite.summary
    if merged.missing or s.passed < s.total:
        sys.exit(1)


@cli.command(name="compare")
@click.argument("a_path", metavar="A", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.argument("b_path", metavar="B", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--reference", "reference_path", type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None, help="Published figures to draw (TOML as matrices/bench/references.toml). [default: rocmkit's]")
@click.option("--min-change", type=click.FloatRange(min=0.0, max=0.9), default=0.05, show_default=True,
    help="Smallest relative change flagged, on top of the IQRs not overlapping.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Also write A and B side by side as a self-contained HTML page.")
@click.option("--json", "as_json", is_flag=True, help="Write the per-model verdicts as JSON to stdout.")
@request(CompareRequest)
def compare_cmd(req: CompareRequest) -> None:
    """Per-model speedup ratios and accuracy changes from run A to run B.

    A and B are `bench models --json` outputs or --results files (a merged
    shard set too). A model is flagged when it broke (passed in A; failed,
    errored or, in a results file, never finished in B) or got slower beyond
    the noise of the repeats. Exit code 0 when nothing
    is flagged, 1 when something is (for CI), 3 when nothing is flagged but a
    model could not be judged (its run too noisy: CPU steal, load, spread).
    """
    from rocmkit.bench import compare

    refs = compare.load_references(req.reference_path)
    notes: list[str] = []
    b_meant: list[str] = []
    a, b = load_saved(req.a_path, notes), load_saved(req.b_path, notes, b_meant)
    c = compare.compare(a, b, min_change=req.min_change, references=refs, notes=notes, b_meant=b_meant)
    if req.html_path is not None:
        OUT.file(req.html_path, compare.render_page(c))
    if req.as_json:
        OUT.json(compare.to_dict(c))
    else:
        OUT.data(compare.to_text(c), nl=False)
    if c.flagged:
        sys.exit(1)
    if c.not_judged:
        sys.exit(3)
