"""``rocmkit slurm``: the node health check, the per-job prolog, their slurm.conf lines,
and one node's task of ``scripts/slurm/onboard.sbatch``."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from rocmkit.cli.request import OUT, request
from rocmkit.slurm.request import ConfigRequest, HealthcheckRequest, HookRequest

F = TypeVar("F", bound=Callable[..., Any])

_common = [
    click.option(
        "--node", metavar="NAME", help="Slurm NodeName (default: SLURMD_NODENAME, else the short hostname)."
    ),
    click.option("--venv", type=click.Path(file_okay=False, path_type=Path),
        help="Check this venv's torch (doctor --venv)."),
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
    click.option("--report", type=click.Path(dir_okay=False, path_type=Path),
        help="The last full `rocmkit doctor --json` report of this node: its failures count while recent."),
    click.option("--max-age", type=click.FloatRange(0.0), default=24.0, show_default=True,
        help="Hours after which --report is too old to count."),
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


@cli.command("healthcheck")
@common
@click.option("--scontrol", metavar="PATH", help="scontrol to use (default: found on a standard PATH).")
@click.option("--no-drain", is_flag=True, help="Report only; never drain or resume.")
@request(HealthcheckRequest)
def healthcheck_cmd(req: HealthcheckRequest) -> None:
    """A HealthCheckProgram: run the fast checks; drain this node when one fails
    (Reason "rocmkit: CHECK"), resume it when rocmkit drained it and all pass again.

    \b
    Exit codes: 0 healthy, 1 a check failed (node drained), 3 the checks could not run
    (a second such run in a row drains the node: "rocmkit: cannot check").
    Install it with `rocmkit slurm config --write --dir /etc/slurm`.
    """
    from rocmkit.slurm.hooks import Log, NodeMemo, health_check, node_name, single_run
    from rocmkit.slurm.request import quick_outcome
    from rocmkit.slurm.scontrol import Scontrol, slurm_value

    name = slurm_value("node name (--node, SLURMD_NODENAME or the host name)", node_name(req.node, dict(os.environ)))
    log = Log(req.log_target, "rocmkit-healthcheck")
    # scontrol needs only a PATH (a standard one when slurmd gave none) and, at sites
    # with slurm.conf elsewhere, SLURM_CONF.
    control = Scontrol(req.scontrol, env={k: v for k in ("PATH", "SLURM_CONF") if (v := os.environ.get(k))})
    with single_run(name) as alone:
        if not alone:
            log(f"{name}: the previous health check still runs: this one skipped")
            sys.exit(0)
        outcome = quick_outcome(req, name)
        result = health_check(name, outcome, control, log, drain=not req.no_drain, memo=NodeMemo(name))
    sys.exit(result.exit_code)


@cli.command("prolog")
@common
@request(HookRequest)
def prolog_cmd(req: HookRequest) -> None:
    """A Prolog (or Epilog): the fast checks before each job; exit 1 on a failure, so
    slurmd drains the node ("Prolog error") and requeues the job."""
    from rocmkit.slurm.hooks import Log, NodeMemo, node_name, prolog
    from rocmkit.slurm.request import quick_outcome

    env = dict(os.environ)
    name = node_name(req.node, env)
    log = Log(req.log_target, "rocmkit-prolog")
    outcome = quick_outcome(req, name)
    sys.exit(prolog(name, outcome, log, job=env.get("SLURM_JOB_ID"), memo=NodeMemo(name)))


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
@click.option("--force", is_flag=True,
    help="With --write: write even into a folder another user can write (refused otherwise).")
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
@request(ConfigRequest)
def config_cmd(req: ConfigRequest) -> None:
    """Print the slurm.conf lines for the health check (or --prolog), and with --write
    the hook scripts they name. Arguments after `--` go to the hooks (e.g.
    -- --venv /opt/venv --report /var/lib/rocmkit/last.json).
    """
    from rocmkit.slurm.config import conf_lines, scripts

    cfg = req.hook_config()
    if req.write:
        unsafe = req.unsafe_folder()
        if unsafe and not req.force:
            from rocmkit.errors import UntrustedError

            raise UntrustedError(
                f"refusing to write the hook scripts slurmd runs as root into {req.folder}: {unsafe} "
                "(that user could replace them)",
                (
                    f"chown root {req.folder} && chmod go-w {req.folder}",
                    "pick another --dir, or pass --force if you accept that",
                ),
            )
        if unsafe:
            OUT.warning(f"--force: writing root-run hooks into {req.folder}, although {unsafe}")
        for name, text in scripts(cfg).items():
            OUT.file(req.folder / name, text, mode=0o755, fix="run as root")
            OUT.message(f"wrote {req.folder / name}")
    OUT.data(conf_lines(cfg, prolog=req.as_prolog), nl=False)
    if req.write:
        OUT.message("next: add the lines above to slurm.conf on every node, then: scontrol reconfigure")


@cli.command("task")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
    help="Write HOST.json here.")
@click.option("--host", metavar="NAME", help="This node's name (default: the short hostname).")
@click.option("--ready-timeout", type=click.FloatRange(1.0), default=120.0, show_default=True,
    help="Seconds to wait for every node to say it can take part in the all-reduce.")
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
