"""``rocmkit doctor``: run the levelled checks and report one verdict.

Exit codes: 0 nothing failed, warned or errored (checks passed or were skipped),
1 a check failed, 2 warnings only, 3 a check could not run (and none failed).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rocmkit.arch import BACKENDS
from rocmkit.cli.folds import allow_option, renamed_flag, renamed_report, report_option, unfold, with_params
from rocmkit.cli.renamed import renamed
from rocmkit.cli.request import OUT, request
from rocmkit.cli.sections import DOCTOR_SECTIONS, SectionedCommand
from rocmkit.doctor.request import DoctorRequest

if TYPE_CHECKING:

    from rocmkit.doctor.result import Report


@click.command("doctor", cls=SectionedCommand, sections=DOCTOR_SECTIONS)
@click.option("--level", "-l", type=click.IntRange(0, 3), default=1, show_default=True,
    help="0 static facts (seconds), 1 quick device smoke, 2 kernels and performance, 3 models and multi-GPU.")
@click.option(
    "--only", multiple=True, metavar="NAME", help="Run only these checks (name, group or glob), at any level."
)
@click.option("--skip", multiple=True, metavar="NAME", help="Leave these checks out (name, group or glob).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the rocmkit.report/1 JSON on stdout instead of the table."
)
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report (--json, --format) to this file instead of stdout: whole, or not at all.")
@click.option("--capture", type=click.Path(path_type=Path),
    help="Check a capture folder (rocmkit snapshot) instead of this machine; level-0 static checks only.")
@click.option(
    "--venv",
    type=click.Path(file_okay=False, path_type=Path),
    help="Check this virtual environment's torch and Triton (as made by `rocmkit install --venv`). "
    "Default: the active venv, else rocmkit's own Python.",
)
@click.option("--python", "python_path", metavar="PATH", help="Check this interpreter's torch and Triton.")
@click.option("--backend", type=click.Choice(BACKENDS),
    help="Device path for GPU checks (default: what detection found; cpu runs Triton's interpreter).")
@click.option("--framework", metavar="torch|jax|torch,jax",
    help="Which frameworks' checks to run (jax: the jax.* checks). Default: the frameworks the checked Python has.")
@click.option("--timeout-scale", type=click.FloatRange(0.1, 100.0), default=1.0, show_default=True,
    help="Multiply every isolated check's timeout (slow or busy nodes).")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
    help="A check option (size, threshold, repeat count), e.g. --set shm_min_bytes=4294967296.")
@click.option("--isolation", type=click.Choice(["fork", "spawn"]), default="fork", show_default=True,
    help="fork: isolated checks fork from one worker that imported torch and Triton once; "
    "spawn: a fresh Python per check (slower; rules the worker out).")
@click.option("--jobs", "-j", type=click.IntRange(1, 256), help="Checks to run at once (GPU checks still run "
    "one at a time). Default: the usable cores with --isolation fork, 1 with spawn.")
@click.option("--fresh", is_flag=True, help="Ignore every cache: detect again and compile every kernel and graph again.")
@click.option("--format", "output_format", type=click.Choice(["table", "json", "npd"]), default="table",
    show_default=True, help="npd: one status line (<= 80 chars) and node-problem-detector's exit codes "
    "(0 OK, 1 problem, 2 unknown); see docs/npd.md.")
@click.option("--strict", is_flag=True, help="Warnings (a figure below its floor, a slow cache) fail (exit 1).")
@click.option("--image-build", is_flag=True, help="Inside an image build: device nodes, groups and driver are "
    "not applicable (also assumed when ROCMKIT_GFX is set and /dev/kfd does not exist).")
@click.option("--warm-caches", is_flag=True, help="Fill the compile caches the jobs will use (an image build, a "
    "Slurm prolog): checks them (env.caches), compiles a training step into them cold then warm "
    "(compile.cache_speed) and the Triton kernels for this node's archs (triton.codegen).")
@click.option("--list", "list_only", is_flag=True, help="List the checks and exit.")
@click.option("--verbose", "-v", is_flag=True,
    help="The table of every result (default: what failed or warned), with remedies and child stderr.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr (lines, status line, heartbeat): "
    "the report only.")
@with_params(
    report_option("junit", "prom", intro="Also write the report to FILE in FORMAT (written whole, or not at all)"),
    allow_option("untrusted-python"),
    renamed_report("--junit", "junit", "junit"),
    renamed_report("--prom", "prom", "prom"),
    renamed_flag("--allow-untrusted-python", "--allow untrusted-python"),
)
@unfold("report", "allow")
@request(DoctorRequest)
def cli(req: DoctorRequest) -> None:
    """Validate the environment, Triton kernels and torch.compile on this node.

    \b
    Exit codes: 0 pass, 1 a check failed, 2 warnings only, 3 a check could not run.
    With --format npd: 0 OK, 1 a problem, 2 unknown (node-problem-detector's protocol).
    """
    for line in renamed(click.get_current_context()):
        OUT.message(line)
    if req.fmt == "npd":
        from rocmkit.errors import RocmkitError

        try:
            _run(req)
        except RocmkitError as exc:
            # NPD reads stdout and the exit status only: rocmkit failing to judge is "Unknown".
            from rocmkit.doctor.reporters import npd

            code, line = npd.unknown(exc.message)
            OUT.data(line)
            sys.exit(code)
        return
    _run(req)


def _run(req: DoctorRequest) -> None:
    from rocmkit.doctor.prepare import prepare
    from rocmkit.doctor.registry import check_modules, check_option_values, list_lines, unknown_options
    from rocmkit.doctor.reporters import text
    from rocmkit.doctor.run import discover, doctor, select
    from rocmkit.util import ticker

    if req.quiet:
        ticker.shared().enabled = False  # no status line, no "still running" lines
    if req.list_only:
        found = discover(check_modules())
        OUT.lines(list_lines(found.checks))
        for r in found.broken:
            OUT.warning(r.message)
        return
    # Everything before the first check is one task: on a terminal its status line, in a log
    # its "still running" line, so even a cold start (a venv's probe, the vendor tools,
    # resolve asking the index) is never silent.
    with ticker.shared().task("doctor", phase="loading the checks"):
        found = discover(check_modules())
        # Bad names fail here, before detection and the plan take their time.
        picked = select(found.checks, level=req.level, only=req.selection, skip=req.skip)
        check_option_values(req.options, found.checks.values())  # --set shm_min_bytes=abc: exit 4, now
        p = prepare(req, picked, OUT)
    opts = req.run_options()
    for key in unknown_options(opts.options, found.checks.values()):
        OUT.warning(
            f"no check reads --set {key}; it is ignored (`rocmkit doctor --list` names each check's options)"
        )
    progress = text.Progress(p.total, quiet=req.quiet)
    report = doctor(
        p.machine,
        opts,
        plan=p.plan,
        plan_error=p.plan_error,
        cache_dir=p.session.cache_dir,
        on_start=progress.start,
        on_result=progress.result,
        checks=found,
        python=p.python,
    )
    sys.exit(_write_reports(req, report))


def _write_reports(req: DoctorRequest, report: Report) -> int:
    """Write the reports; the exit code (``--strict``: warnings fail; npd: NPD's codes)."""
    from rocmkit.doctor.reporters import json as json_reporter
    from rocmkit.doctor.reporters import junit as junit_reporter
    from rocmkit.doctor.reporters import prom as prom_reporter
    from rocmkit.doctor.reporters import text
    from rocmkit.util.ticker import colour_wanted

    code = report.exit_code
    if req.strict and code == 2:
        code = 1
    if req.fmt == "npd":
        from rocmkit.doctor.reporters import npd

        code, line = npd.status(report, strict=req.strict)
        body = line + "\n"
    elif req.fmt == "json":
        body = json_reporter.render(report)
    else:
        colour = req.output is None and colour_wanted(sys.stdout)
        body = text.render(report, colour=colour, verbose=req.verbose)
    if req.output is None:
        OUT.data(body, nl=False)
    else:
        # Renamed into place: a run that fails leaves no empty report, as a failed `> FILE` would.
        OUT.file(req.output, body, fix="choose a file in a folder you can write to")
        OUT.message(f"wrote {req.output}")
    for path, render in ((req.junit, junit_reporter.render), (req.prom, prom_reporter.render)):
        if path is None:
            continue
        # 0644 whatever the umask: node_exporter's collector reads the .prom file as another user.
        OUT.file(path, render(report), mode=0o644, fix="choose a file in a folder you can write to")
    return code
