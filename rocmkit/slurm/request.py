"""What ``rocmkit slurm healthcheck|prolog|config`` were asked to do: frozen requests, checked
here, and the fast-check run the two hooks share."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.errors import UsageError

if TYPE_CHECKING:
    from rocmkit.slurm.checks import Outcome
    from rocmkit.slurm.config import HookConfig


@dataclass(frozen=True, kw_only=True)
class HookRequest:
    """The options the health check and the prolog share."""

    node: str | None = None
    venv: Path | None = None
    python_path: str | None = None
    skip: tuple[str, ...] = ()
    settings: tuple[str, ...] = ()
    strict: bool = False
    budget: float = 45.0
    report: Path | None = None
    max_age: float = 24.0  # hours
    log_target: str | None = None

    def __post_init__(self) -> None:
        from rocmkit.slurm.scontrol import slurm_value

        if self.node is not None:
            slurm_value("--node", self.node)

    def doctor_args(self) -> tuple[str, ...]:
        """The same choices, as arguments for the `rocmkit doctor` the checks run."""
        args: list[str] = []
        if self.venv is not None:
            args += ["--venv", str(self.venv.absolute())]
        if self.python_path:
            args += ["--python", self.python_path]
        for s in self.skip:
            args += ["--skip", s]
        for s in self.settings:
            args += ["--set", s]
        return tuple(args)


@dataclass(frozen=True, kw_only=True)
class HealthcheckRequest(HookRequest):
    scontrol: str | None = None
    no_drain: bool = False


@dataclass(frozen=True, kw_only=True)
class ConfigRequest:
    folder: Path = Path("/etc/slurm")
    write: bool = False
    as_prolog: bool = False
    interval: int = 300
    node_state: str = "ANY,CYCLE"
    log_target: str = "/var/log/slurm/rocmkit-healthcheck.log"
    python_path: str | None = None
    slurm_conf: str | None = None  # the hooks export SLURM_CONF (slurmd passes no environment)
    hook_args: tuple[str, ...] = ()
    force: bool = False  # --force: write root-run hooks even into a folder another user can write

    def __post_init__(self) -> None:
        from rocmkit.slurm.scontrol import slurm_value

        # Each lands in a slurm.conf line (HealthCheckNodeState=..., Prolog=DIR/...).
        slurm_value("--node-state", self.node_state)
        slurm_value("--dir", str(self.folder))
        if self.hook_args and not self.hook_args[0].startswith("-"):
            # `config --write /etc/slurm`: the folder landed among the hooks' arguments (the doctor
            # takes no positional argument), and the hooks would have been written elsewhere.
            first = self.hook_args[0]
            raise UsageError(
                f"{first} is not an option for the hooks: --write takes no value, and the folder is --dir",
                f"pass --dir {first}" + (" --write" if self.write else ""),
            )
        if not self.folder.is_absolute():
            raise UsageError(
                f"--dir {self.folder} is not an absolute path", "slurmd needs one, e.g. --dir /etc/slurm"
            )
        if self.slurm_conf is not None and not Path(self.slurm_conf).is_absolute():
            raise UsageError(f"--slurm-conf {self.slurm_conf} is not an absolute path", "pass the full path")
        if self.write and not self.folder.is_dir():
            raise UsageError(
                f"--dir {self.folder} does not exist", (f"mkdir -p {self.folder}", "pass --dir with the folder for the hooks")
            )

    def unsafe_folder(self) -> str | None:
        """Why --dir is no place for scripts slurmd runs as root (another user could replace
        them: that user would run code as root on every node), or None."""
        from rocmkit.util.trust import folder_problem

        return folder_problem(self.folder)

    def hook_config(self) -> HookConfig:
        from rocmkit.proc.runner import which
        from rocmkit.slurm.config import HookConfig
        from rocmkit.slurm.scontrol import DEFAULT_PATH

        args = list(self.hook_args)
        given = args[args.index("--scontrol") + 1] if "--scontrol" in args[:-1] else None
        return HookConfig(
            scontrol=given or which("scontrol", {"PATH": DEFAULT_PATH}) or "scontrol",
            folder=self.folder,
            python=self.python_path or sys.executable,
            interval_s=self.interval,
            node_state=self.node_state,
            log=self.log_target,
            args=self.hook_args,
            slurm_conf=self.slurm_conf,
        )


def quick_outcome(req: HookRequest, node: str) -> Outcome:
    """Run the fast checks for one hook call on ``node``."""
    from rocmkit.doctor.registry import check_modules
    from rocmkit.doctor.run import discover, select
    from rocmkit.slurm.checks import Outcome, QuickOptions, hook_env, quick_checks, run_quick, target_findings

    missing = target_findings(req.venv.absolute() if req.venv else None, req.python_path)
    if missing:
        return Outcome(findings=tuple(missing))
    names = quick_checks()
    # A bad --skip fails here, as a usage error.
    select(discover(check_modules()).checks, level=1, skip=req.skip)
    opts = QuickOptions(
        budget_s=req.budget,
        strict=req.strict,
        doctor_args=req.doctor_args(),
        report=req.report,
        max_age_s=req.max_age * 3600,
        host=node,
        env=hook_env(),
    )
    return run_quick(opts, [n for n in names if n not in req.skip])
