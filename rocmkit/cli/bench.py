"""``rocmkit bench``: benchmarks. ``rocmkit bench models``: torch.compile against eager on the model set."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from rocmkit.bench.request import BenchRequest
from rocmkit.bench.results import SuiteResult
from rocmkit.cli.request import OUT, request
from rocmkit.errors import UsageError


@click.group(name="bench")
def cli() -> None:
    """Benchmarks: torch.compile vs eager on a built-in model set."""


def _write(path: Path, text: str) -> None:
    try:
        from rocmkit.atomicio import write_text_atomic

        write_text_atomic(path, text)
    except OSError as exc:
        from rocmkit.errors import storage_error

        raise storage_error(exc) or UsageError(
            f"cannot write {path}: {exc.strerror}", "choose a writable path"
        ) from exc


def _load(path: Path) -> SuiteResult:
    from rocmkit.errors import DataError
    from rocmkit.safeload import load_json_file

    try:
        data = load_json_file(path, str(path))
    except DataError as exc:
        raise DataError(exc.message, "pass a file written by `rocmkit bench models --json`") from exc
    return SuiteResult.from_dict(data)


@cli.command(name="models")
@click.option("--models", "models", multiple=True, metavar="NAMES",
    help="Models to run, comma-separated or repeated (default: all). See --list.")
@click.option("--mode", type=click.Choice(["infer", "train"]), default="infer", show_default=True,
    help="Inference, or a training step (forward, backward, optimizer step).")
@click.option("--dtype", type=click.Choice(["fp32", "bf16", "fp16"]), default="fp32", show_default=True,
    help="fp32, or AMP autocast to bf16/fp16 (meant for GPUs).")
@click.option("--size", type=click.Choice(["tiny", "small", "full"]), default=None,
    help="Model sizes. [default: tiny on the CPU, full on a GPU]")
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
@click.option("--list", "list_only", is_flag=True, help="List the models and exit.")
@click.option("--perturb-compiled", "perturb", type=float, default=0.0, hidden=True,
    help="Diagnosis: add this to compiled outputs, to see the accuracy check fail.")
@request(BenchRequest)
def models_cmd(req: BenchRequest) -> None:
    """Measure torch.compile against eager on the built-in model set.

    Each model runs in its own process: warm-up, eager and compiled runs
    interleaved, speedup = median eager / median compiled, and the compiled
    output checked against eager. Exit code 0 when every model passes, 1 when
    any model failed accuracy, compilation, or did not finish.
    """
    from rocmkit.bench import html, results
    from rocmkit.bench.models import select
    from rocmkit.bench.suite import run_suite

    if req.list_only:
        OUT.lines([f"{s.name:12} {s.suite:12} {s.description}" for s in select(req.names)])
        return

    def finished(row: results.ModelResult) -> None:
        speed = f" {row.speedup:.2f}x" if row.speedup else ""
        OUT.message(f"{row.name}: {row.status}{speed} ({row.duration_s:.0f} s)")

    if req.load_path is not None:
        suite = _load(req.load_path)
    else:
        # Recorded in the result so a table can say exactly what produced it.
        argv = sys.argv[sys.argv.index("bench") :] if "bench" in sys.argv else ["bench", "models"]
        suite = run_suite(
            req.suite_options(),
            on_start=lambda name: OUT.message(f"{name}: running ..."),
            on_result=finished,
            command="rocmkit " + shlex.join(argv),
        )
    renders = (
        (req.csv_path, results.to_csv),
        (req.html_path, html.render_page),
        (req.svg_path, html.render_svg),
        (req.md_path, results.to_markdown),
    )
    for path, render in renders:
        if path is not None:
            _write(path, render(suite))
    if req.as_json:
        OUT.json(suite.to_dict())
    else:
        OUT.data(results.to_text(suite), nl=False)
    if suite.summary.passed < suite.summary.total:
        sys.exit(1)
