"""``rocmkit bench``: benchmarks. ``rocmkit bench models``: torch.compile against eager on the model set."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rocmkit.bench.request import BenchRequest, CompareRequest, MergeRequest
from rocmkit.cli.folds import renamed_report, report_option, unfold, with_params
from rocmkit.cli.renamed import renamed
from rocmkit.cli.request import OUT, command_line, request
from rocmkit.cli.sections import BENCH_SECTIONS, SectionedCommand


@click.group(name="bench")
def cli() -> None:
    """Benchmarks: torch.compile vs eager on a built-in model set."""


@cli.command(name="models", cls=SectionedCommand, sections=BENCH_SECTIONS)
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
@click.option(
    "--load",
    "load_path",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Render a saved --json result (the table, --report's files) instead of running.",
)
@click.option("--venv", type=click.Path(file_okay=False, path_type=Path),
    help="Measure this virtual environment's torch (as made by `rocmkit install --venv`). "
    "Default: the active venv, else rocmkit's own Python.")
@click.option("--python", "python_path", metavar="PATH", help="Measure this interpreter's torch.")
@click.option("--list", "list_only", is_flag=True, help="List the models and exit.")
@click.option("--perturb-compiled", "perturb", type=float, default=0.0, hidden=True,
    help="Diagnosis: add this to compiled outputs, to see the accuracy check fail.")
@with_params(
    report_option("csv", "html", "svg", "markdown", intro="Also write the result to FILE in FORMAT"),
    renamed_report("--csv", "csv", "csv_path"),
    renamed_report("--html", "html", "html_path"),
    renamed_report("--svg", "svg", "svg_path"),
    renamed_report("--markdown", "markdown", "md_path"),
)
@unfold("report")
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
    from rocmkit.bench.carry import carry_out

    for line in renamed(click.get_current_context()):
        OUT.message(line)
    _exit(carry_out(req, command_line(), OUT))


def _exit(code: int) -> None:
    """The carried-out exit code, passed on as the process's (the body decides nothing itself)."""
    if code:
        sys.exit(code)


@cli.command(name="merge")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Write the merged rocmkit.bench/1 JSON to stdout.")
@click.option("--output", "-o", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Also write the merged result as rocmkit.bench/1 JSON to FILE.")
@request(MergeRequest)
def merge_cmd(req: MergeRequest) -> None:
    """Join the --results files of a sharded run (--shard I/N) into one result.

    The files must come from one run (same suite, mode, dtype, size, repeats,
    compile mode, backend); a model with rows in two files is an error. Exit
    code 0 when every model of the run has a row and passed, 1 otherwise.
    """
    from rocmkit.bench.carry import merge

    _exit(merge(req, OUT))


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
    from rocmkit.bench.carry import compare

    _exit(compare(req, OUT))
