"""``rocmkit slurm``: the node health check, the per-job prolog, their slurm.conf lines,
and one node's task of ``scripts/slurm/onboard.sbatch``."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from rocmkit.slurm.checks import Outcome

F = TypeVar("F", bound=Callable[..., Any])

_common = [
    click.option(
        "--node", metavar="NAME", help="Slurm NodeName (default: SLURMD_NODENAME, else the short hostname)."
    ),
    click.option(
        "--venv",
        type=click.Path(file_okay=False, path_type=Path),
        help="Check this venv's torch (doctor --venv).",
    ),
    click.option(
        "--python", "python_path", metavar="PATH", help="Check this interpreter's torch (doctor --python)."
    ),
    click.option("--skip", multiple=True, metavar="NAME", help="Leave these checks out (doctor --skip)."),
    click.option(
        "--set", "settings", multiple=True, metavar="KEY=VALUE", help="A check option (doctor --set)."
    ),
    click.option("--strict", is_flag=True, help="Warnings count as failures too."),
    click.option(
        "--budget",
        type=click.FloatRange(1.0, 3600.0),
        default=45.0,
        show_default=True,
        help="Seconds the checks may take in all; over it is a finding (slurmd kills a health check at 60 s).",
    ),
    click.option(
        "--report",
        type=click.Path(dir_okay=False, path_type=Path),
        help="The last full `rocmkit doctor --json` report of this node: its failures count while recent.",
    ),
    click.option(
        "--max-age",
        type=click.FloatRange(0.0),
        default=24.0,
        show_default=True,
        help="Hours after which --report is too old to count.",
    ),
    click.option(
        "--log", "log_target", metavar="FILE|syslog", help="Also log here (stderr is discarded by slurmd)."
    ),
]


def common(f: F) -> F:
    for opt in reversed(_common):
        f = opt(f)
    return f


@click.group("slurm")
def cli() -> None:
    """Slurm: health check, prolog and onboarding."""


def _outcome(
    node: str,
    venv: Path | None,
    python_path: str | None,
    skip: tuple[str, ...],
    settings: tuple[str, ...],
    strict: bool,
    budget: float,
    report: Path | None,
    max_age: float,
) -> Outcome:
    from rocmkit.slurm.checks import QuickOptions, hook_env, quick_checks, run_quick

    names = quick_checks()
    from rocmkit.doctor.registry import check_modules
    from rocmkit.doctor.run import discover, select

    select(discover(check_modules()).checks, level=1, skip=skip)  # a bad --skip fails here, as a usage error
    args: list[str] = []
    if venv is not None:
        args += ["--venv", str(venv.absolute())]
    if python_path:
        args += ["--python", python_path]
    for s in skip:
        args += ["--skip", s]
    for s in settings:
        args += ["--set", s]
    opts = QuickOptions(
        budget_s=budget,
        strict=strict,
        doctor_args=tuple(args),
        report=report,
        max_age_s=max_age * 3600,
        host=node,
        env=hook_env(),
    )
    return run_quick(opts, [n for n in names if n not in skip])


@cli.command("healthcheck")
@common
@click.option("--scontrol", metavar="PATH", help="scontrol to use (default: found on a standard PATH).")
@click.option("--no-drain", is_flag=True, help="Report only; never drain or resume.")
def healthcheck_cmd(
    node: str | None,
    venv: Path | None,
    python_path: str | None,
    skip: tuple[str, ...],
    settings: tuple[str, ...],
    strict: bool,
    budget: float,
    report: Path | None,
    max_age: float,
    log_target: str | None,
    scontrol: str | None,
    no_drain: bool,
) -> None:
    """A HealthCheckProgram: run the fast checks; drain this node when one fails
    (Reason "rocmkit: CHECK"), resume it when rocmkit drained it and all pass again.

    \b
    Exit codes: 0 healthy, 1 a check failed (node drained), 3 the checks could not run.
    Install it with `rocmkit slurm config --write /etc/slurm`.
    """
    from rocmkit.slurm.hooks import Log, health_check, node_name, single_run
    from rocmkit.slurm.scontrol import Scontrol

    name = node_name(node, dict(os.environ))
    log = Log(log_target, "rocmkit-healthcheck")
    # scontrol needs only a PATH (a standard one when slurmd gave none) and, at sites
    # with slurm.conf elsewhere, SLURM_CONF.
    control = Scontrol(scontrol, env={k: v for k in ("PATH", "SLURM_CONF") if (v := os.environ.get(k))})
    with single_run(name) as alone:
        if not alone:
            log(f"{name}: the previous health check still runs: this one skipped")
            sys.exit(0)
        outcome = _outcome(name, venv, python_path, skip, settings, strict, budget, report, max_age)
        result = health_check(name, outcome, control, log, drain=not no_drain)
    sys.exit(result.exit_code)


@cli.command("prolog")
@common
def prolog_cmd(
    node: str | None,
    venv: Path | None,
    python_path: str | None,
    skip: tuple[str, ...],
    settings: tuple[str, ...],
    strict: bool,
    budget: float,
    report: Path | None,
    max_age: float,
    log_target: str | None,
) -> None:
    """A Prolog (or Epilog): the fast checks before each job; exit 1 on a failure, so
    slurmd drains the node ("Prolog error") and requeues the job."""
    from rocmkit.slurm.hooks import Log, node_name, prolog

    env = dict(os.environ)
    name = node_name(node, env)
    log = Log(log_target, "rocmkit-prolog")
    outcome = _outcome(name, venv, python_path, skip, settings, strict, budget, report, max_age)
    sys.exit(prolog(name, outcome, log, job=env.get("SLURM_JOB_ID")))


@cli.command("config")
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("/etc/slurm"),
    show_default=True,
    help="Where the hook scripts live on the nodes.",
)
@click.option("--write", is_flag=True, help="Also write the hook scripts into --dir (mode 755).")
@click.option("--prolog", "as_prolog", is_flag=True, help="Print the Prolog/Epilog variant instead.")
@click.option(
    "--interval", type=click.IntRange(1), default=300, show_default=True, help="HealthCheckInterval, seconds."
)
@click.option("--node-state", default="ANY,CYCLE", show_default=True, help="HealthCheckNodeState.")
@click.option(
    "--log",
    "log_target",
    default="/var/log/slurm/rocmkit-healthcheck.log",
    show_default=True,
    metavar="FILE|syslog",
)
@click.option(
    "--python", "python_path", metavar="PATH", help="The Python that has rocmkit (default: this one)."
)
@click.option(
    "--slurm-conf",
    metavar="PATH",
    help="slurm.conf for the hooks' scontrol, where it is not the default (/etc/slurm/slurm.conf).",
)
@click.argument("hook_args", nargs=-1, type=click.UNPROCESSED)
def config_cmd(
    folder: Path,
    write: bool,
    as_prolog: bool,
    interval: int,
    node_state: str,
    log_target: str,
    python_path: str | None,
    slurm_conf: str | None,
    hook_args: tuple[str, ...],
) -> None:
    """Print the slurm.conf lines for the health check (or --prolog), and with --write
    the hook scripts they name. Arguments after `--` go to the hooks (e.g.
    -- --venv /opt/venv --report /var/lib/rocmkit/last.json).
    """
    from rocmkit.atomicio import write_text_atomic
    from rocmkit.errors import UsageError
    from rocmkit.slurm.config import HookConfig, conf_lines, scripts

    if not folder.is_absolute():
        raise UsageError(f"--dir {folder} is not an absolute path", "slurmd needs one, e.g. --dir /etc/slurm")
    if slurm_conf is not None and not Path(slurm_conf).is_absolute():
        raise UsageError(f"--slurm-conf {slurm_conf} is not an absolute path", "pass the full path")
    cfg = HookConfig(
        folder=folder,
        python=python_path or sys.executable,
        interval_s=interval,
        node_state=node_state,
        log=log_target,
        args=hook_args,
        slurm_conf=slurm_conf,
    )
    if write:
        if not folder.is_dir():
            raise UsageError(f"folder {folder} does not exist", "create it, or pass --dir")
        for name, text in scripts(cfg).items():
            try:
                write_text_atomic(folder / name, text, mode=0o755)
            except OSError as exc:
                raise UsageError(
                    f"cannot write {folder / name}: {exc.strerror or exc}", "run as root"
                ) from exc
            click.echo(f"wrote {folder / name}", err=True)
    click.echo(conf_lines(cfg, prolog=as_prolog), nl=False)


@cli.command("task")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Write HOST.json here.",
)
@click.option("--host", metavar="NAME", help="This node's name (default: the short hostname).")
@click.option(
    "--ready-timeout",
    type=click.FloatRange(1.0),
    default=120.0,
    show_default=True,
    help="Seconds to wait for every node to say it can take part in the all-reduce.",
)
@click.argument("doctor_args", nargs=-1, type=click.UNPROCESSED)
def task_cmd(out_dir: Path, host: str | None, ready_timeout: float, doctor_args: tuple[str, ...]) -> None:
    """One node's part of onboard.sbatch: `rocmkit doctor DOCTOR_ARGS --json` into
    OUT/HOST.json; before a cross-node all-reduce, every node first says whether it
    can take part, so a node that cannot is named at once."""
    import socket

    from rocmkit.slurm.task import onboard_task

    name = host or socket.gethostname().split(".")[0]
    sys.exit(
        onboard_task(
            host=name,
            out_dir=out_dir,
            doctor_args=doctor_args,
            env=dict(os.environ),
            ready_timeout_s=ready_timeout,
        )
    )
