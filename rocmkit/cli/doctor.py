"""``rocmkit doctor``: run the levelled checks and report one verdict.

Exit codes: 0 nothing failed, warned or errored (checks passed or were skipped),
1 a check failed, 2 warnings only, 3 a check could not run (and none failed).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from collections.abc import Mapping

    from rocmkit.doctor.registry import Check


@click.command("doctor")
@click.option(
    "--level",
    "-l",
    type=click.IntRange(0, 3),
    default=1,
    show_default=True,
    help="0 static facts (seconds), 1 quick device smoke, 2 kernels and performance, 3 models and multi-GPU.",
)
@click.option(
    "--only", multiple=True, metavar="NAME", help="Run only these checks (name, group or glob), at any level."
)
@click.option("--skip", multiple=True, metavar="NAME", help="Leave these checks out (name, group or glob).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the rocmkit.report/1 JSON on stdout instead of the table."
)
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Also write JUnit XML here.")
@click.option(
    "--prom",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write a node_exporter textfile here (written atomically).",
)
@click.option(
    "--capture",
    type=click.Path(path_type=Path),
    help="Check a capture folder (rocmkit snapshot) instead of this machine; level-0 static checks only.",
)
@click.option(
    "--venv",
    type=click.Path(file_okay=False, path_type=Path),
    help="Check this virtual environment's torch and Triton (as made by `rocmkit install --venv`). "
    "Default: the active venv, else rocmkit's own Python.",
)
@click.option("--python", "python_path", metavar="PATH", help="Check this interpreter's torch and Triton.")
@click.option(
    "--backend",
    type=click.Choice(["rocm", "cuda", "cpu"]),
    help="Device path for GPU checks (default: what detection found; cpu runs Triton's interpreter).",
)
@click.option(
    "--timeout-scale",
    type=click.FloatRange(0.1, 100.0),
    default=1.0,
    show_default=True,
    help="Multiply every isolated check's timeout (slow or busy nodes).",
)
@click.option(
    "--set",
    "settings",
    multiple=True,
    metavar="KEY=VALUE",
    help="A check option (size, threshold, repeat count), e.g. --set shm_min_bytes=4294967296.",
)
@click.option("--list", "list_only", is_flag=True, help="List the checks and exit.")
@click.option("--verbose", "-v", is_flag=True, help="Show remedies and child stderr for every result.")
def cli(
    level: int,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    as_json: bool,
    junit: Path | None,
    prom: Path | None,
    capture: Path | None,
    venv: Path | None,
    python_path: str | None,
    backend: str | None,
    timeout_scale: float,
    settings: tuple[str, ...],
    list_only: bool,
    verbose: bool,
) -> None:
    """Validate the environment, Triton kernels and torch.compile on this node.

    \b
    Exit codes: 0 pass, 1 a check failed, 2 warnings only, 3 a check could not run.
    """
    from rocmkit.doctor.registry import check_modules
    from rocmkit.doctor.reporters import text
    from rocmkit.doctor.run import RunOptions, discover, doctor, make_plan, select
    from rocmkit.errors import UsageError
    from rocmkit.paths import cache_dir

    found = discover(check_modules())
    if list_only:
        _print_list(found.checks)
        for r in found.broken:
            click.echo(f"warning: {r.message}", err=True)
        return

    for path in (junit, prom):
        if path is not None and not path.parent.is_dir():
            raise UsageError(
                f"folder {path.parent} does not exist", f"create it or write {path.name} elsewhere"
            )
    # Bad names fail here, before detection and the plan take their time.
    total = len(select(found.checks, level=level, only=only, skip=skip))

    from rocmkit.detect import load_machine
    from rocmkit.doctor.python_env import select_python

    python = select_python(venv=venv, python=python_path)
    from rocmkit.install.flow import recover_for_python

    # An install killed in this venv (kill -9) left a journal: undo it before checking.
    recover_for_python(Path(python.executable), lambda m: click.echo(m, err=True))
    if not python.own:
        click.echo(f"checking the Python at {python.executable} ({python.version})", err=True)
    machine = load_machine(capture)
    plan = make_plan(machine)
    opts = RunOptions(
        level=level,
        only=only,
        skip=skip,
        backend=backend,  # type: ignore[arg-type]  # click.Choice guarantees the literal
        timeout_scale=timeout_scale,
        options=parse_settings(settings),
    )
    for key in unknown_settings(opts.options):
        click.echo(
            f"warning: no built-in check reads --set {key}; it is ignored unless a check from "
            "ROCMKIT_DOCTOR_MODULES reads it (see docs/doctor.md for the option names)",
            err=True,
        )
    progress = text.Progress(total)
    report = doctor(
        machine,
        opts,
        plan=plan,
        cache_dir=cache_dir(),
        on_start=progress.start,
        on_result=progress.result,
        checks=found,
        python=python,
    )
    if as_json:
        from rocmkit.doctor.reporters import json as json_reporter

        click.echo(json_reporter.render(report), nl=False)
    else:
        click.echo(text.render(report, colour=sys.stdout.isatty(), verbose=verbose), nl=False)
    from rocmkit.doctor.reporters import junit as junit_reporter
    from rocmkit.doctor.reporters import prom as prom_reporter

    for path, render in ((junit, junit_reporter.render), (prom, prom_reporter.render)):
        if path is None:
            continue
        try:
            prom_reporter.write_atomic(path, render(report))
        except OSError as exc:
            raise UsageError(
                f"cannot write {path}: {exc.strerror or exc}", "choose a file in a folder you can write to"
            ) from exc
    sys.exit(report.exit_code)


def parse_settings(settings: tuple[str, ...]) -> dict[str, object]:
    """``KEY=VALUE`` pairs; values that read as JSON (numbers, true/false) become those."""
    from rocmkit.errors import DataError, UsageError
    from rocmkit.safeload import loads_json

    out: dict[str, object] = {}
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {item!r} is not KEY=VALUE", "write it like --set repeats=5")
        try:
            # Bounded: NaN, 1e400 or [[[[... would reach a check as a number it cannot use.
            out[key.strip()] = loads_json(value, f"--set {key.strip()}", max_depth=8)
        except DataError as exc:
            if "is not valid JSON" not in exc.message:
                raise UsageError(exc.message, "give a finite number, true/false or plain text") from exc
            out[key.strip()] = value
    return out


# Options the built-in checks read besides the kernel ones in rocmkit.kernels.sizes; a
# misspelt key would otherwise leave its threshold at the default without a word.
_CHECK_SETTINGS = frozenset(
    {
        "shm_min_bytes",
        "cache_min_free_bytes",
        "smoke_rel_tolerance",
        "distributed_timeout_s",
        "distributed_work_budget_s",
        "cpu_procs",
        "allreduce_sizes",
        "allreduce_iters",
        "allreduce_warmup",
    }
)


def unknown_settings(options: Mapping[str, object]) -> list[str]:
    """The ``--set`` keys no built-in check reads (``models.*`` keys belong to the models check)."""
    from rocmkit.kernels.sizes import CHECK_OPTION_KEYS, OPTION_KEYS

    known = _CHECK_SETTINGS | OPTION_KEYS.keys() | CHECK_OPTION_KEYS.keys()
    return [k for k in options if k not in known and not k.startswith("models.")]


def _print_list(checks: Mapping[str, Check]) -> None:
    rows = list(checks.values())
    rows.sort(key=lambda c: c.level)
    width = max((len(c.name) for c in rows), default=5)
    click.echo(f"{'LEVEL':5}  {'CHECK':{width}}  {'RUNS IN':7}  {'NEEDS':18}  DESCRIPTION")
    for c in rows:
        where = "child" if c.isolated else "process"
        needs = ",".join(sorted(c.needs)) or "-"
        click.echo(f"{c.level:<5}  {c.name:{width}}  {where:7}  {needs:18}  {c.description}")
