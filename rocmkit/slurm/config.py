"""``rocmkit slurm config``: the slurm.conf lines and the hook scripts they name.

slurmd runs ``HealthCheckProgram``/``Prolog`` without arguments and with an
empty environment, so each hook is a two-line script holding absolute paths
(this Python, its rocmkit) and the options, which a site writes once with
``--write DIR`` and names in slurm.conf.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rocmkit.slurm.scontrol import DEFAULT_PATH

HEALTHCHECK_FILE = "rocmkit-healthcheck"
PROLOG_FILE = "rocmkit-prolog"
DEFAULT_INTERVAL_S = 300
DEFAULT_NODE_STATE = "ANY,CYCLE"
DEFAULT_LOG = "/var/log/slurm/rocmkit-healthcheck.log"


@dataclass(frozen=True, kw_only=True)
class HookConfig:
    folder: Path  # where the hook scripts go (/etc/slurm)
    python: str = sys.executable
    interval_s: int = DEFAULT_INTERVAL_S
    node_state: str = DEFAULT_NODE_STATE
    log: str = DEFAULT_LOG
    args: Sequence[str] = ()  # --venv V, --report R, --strict, --set K=V ...
    # slurm.conf where scontrol does not look by default (slurmd passes the hooks no SLURM_CONF).
    slurm_conf: str | None = None
    scontrol: str = "scontrol"  # found on the script's PATH unless an absolute path is known


def _gone_lines(cfg: HookConfig, command: str) -> list[str]:
    """What the script does when rocmkit's own Python is gone: the node cannot check itself.

    slurmd ignores a HealthCheckProgram's exit code, so the health check drains the node
    itself (``rocmkit: python missing``; once the Python is back, rocmkit resumes it as one
    of its own drains); a Prolog's non-zero exit is acted on by slurmd (drain, requeue)."""
    tag = f"rocmkit-{command}"
    if cfg.log == "syslog":
        log = f'logger -t {tag} -p daemon.err "$msg"'
    else:
        quoted = shlex.quote(cfg.log)
        # Never append through a symlink another user planted where the log goes.
        log = f'[ -L {quoted} ] || printf \'%s %s: %s\\n\' "$(date +%Y-%m-%dT%H:%M:%S%z)" {tag} "$msg" >> {quoted}'
    lines = [
        f"if [ ! -x {shlex.quote(cfg.python)} ]; then",
        '  node=${SLURMD_NODENAME:-$(hostname -s)}',
        f'  msg="$node: rocmkit\'s Python {cfg.python} is missing or not executable: the node cannot be checked"',
        '  echo "$msg" >&2',
        f"  {log}",
    ]
    if command == "healthcheck":
        lines.append(
            f'  {shlex.quote(cfg.scontrol)} update NodeName="$node" State=DRAIN Reason="rocmkit: python missing"'
        )
    return [*lines, "  exit 1", "fi"]


def hook_script(cfg: HookConfig, command: str) -> str:
    argv = [cfg.python, "-m", "rocmkit", "slurm", command, "--log", cfg.log, *cfg.args]
    conf = f"SLURM_CONF={shlex.quote(cfg.slurm_conf)}\nexport SLURM_CONF\n" if cfg.slurm_conf else ""
    return (
        "#!/bin/sh\n"
        "# Written by `rocmkit slurm config --write`: slurmd runs this as root, with no\n"
        "# arguments and an empty environment, so every path in it is absolute.\n"
        f"PATH={DEFAULT_PATH}\nexport PATH\n"
        f"{conf}" + "\n".join(_gone_lines(cfg, command)) + f"\nexec {shlex.join(argv)}\n"
    )


def scripts(cfg: HookConfig) -> dict[str, str]:
    return {HEALTHCHECK_FILE: hook_script(cfg, "healthcheck"), PROLOG_FILE: hook_script(cfg, "prolog")}


def conf_lines(cfg: HookConfig, *, prolog: bool = False) -> str:
    """The slurm.conf lines: the health check, or (``prolog``) the per-job variant."""
    if prolog:
        pro = cfg.folder / PROLOG_FILE
        return "\n".join(
            [
                "# rocmkit per-job check (slurm.conf on every node; then `scontrol reconfigure`).",
                '# A failing prolog makes slurmd drain the node (Reason="Prolog error") and',
                "# requeue the job, held; the reason rocmkit found is in the log named in the script,",
                "# and `rocmkit slurm healthcheck` lifts that drain once the checks pass again.",
                "# Alloc runs it when the job is allocated, on every node, before the batch script.",
                "PrologFlags=Alloc",
                f"Prolog={pro}",
                "# The same script works after each job too:",
                f"#Epilog={pro}",
                "",
            ]
        )
    hc = cfg.folder / HEALTHCHECK_FILE
    return "\n".join(
        [
            "# rocmkit node health check (slurm.conf on every node; then `scontrol reconfigure`).",
            '# It drains a failing node with Reason="rocmkit: CHECK" and resumes only those.',
            f"HealthCheckProgram={hc}",
            f"HealthCheckInterval={cfg.interval_s}",
            f"HealthCheckNodeState={cfg.node_state}",
            "",
        ]
    )
