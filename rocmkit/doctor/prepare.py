"""What a doctor run reads before its first check, in install's shape: the request
(:mod:`rocmkit.doctor.request`) <- prepare (this module: the checked Python, a killed install's
journal finished, the machine and the plan, each read once through the ``Session``) <- the run
(:func:`rocmkit.doctor.run.doctor`).

Messages go through ``out`` (the CLI's ``OUT``); nothing here names a command.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rocmkit.doctor.registry import Check
    from rocmkit.doctor.request import DoctorRequest
    from rocmkit.machine import Machine
    from rocmkit.plan import Plan
    from rocmkit.pyenv import PyEnv
    from rocmkit.session import Session

# Detection cached longer ago than this: the hw.* checks read the hardware facts again
# (ECC counts, temperatures and throttling change within minutes; docs/hardware.md).
HEALTH_FRESH_S = 30.0


class Output(Protocol):
    """Where the doctor's preparation speaks (the CLI's ``OUT``): stderr lines."""

    def message(self, text: str) -> None: ...

    def warning(self, text: str) -> None: ...


@dataclass(frozen=True, kw_only=True)
class Prepared:
    python: PyEnv  # the checked Python
    session: Session
    machine: Machine
    plan: Plan | None
    plan_error: str | None  # why there is no plan (said, and recorded in the report)
    total: int  # the checks that will run, for the progress lines


def health_stale(capture: object, picked: Iterable[Check], detected_at: float | None) -> bool:
    wanted = any(c.name.startswith("hw.") for c in picked)
    return capture is None and wanted and (detected_at is None or time.time() - detected_at > HEALTH_FRESH_S)


def prepare(req: DoctorRequest, picked: list[Check], out: Output) -> Prepared:
    """The checked Python, the machine, the plan and the number of checks to run."""
    from rocmkit.doctor.run import for_frameworks, frameworks_for
    from rocmkit.install.recover import recover_for_python
    from rocmkit.pyenv import select_python
    from rocmkit.session import Session
    from rocmkit.util import ticker

    with ticker.in_phase("probing the checked Python"):
        python = select_python(
            venv=req.venv,
            python=req.python_path,
            # As root a venv another user can write is refused (exit 13) unless the caller says so.
            on_untrusted=out.warning if req.allow_untrusted_python else None,
        )
    total = len(for_frameworks(picked, frameworks_for(python, req.frameworks), req.selection))
    # An install killed in this venv (kill -9) left a journal: undo it before checking.
    recover_for_python(python.executable, out.message)
    if not python.own:
        out.message(f"checking the Python at {python.executable} ({python.version})")
    # Detection facts are cached per boot and driver state, and the plan with them: a rerun
    # skips the probes and resolve. The plan is the one `rocmkit resolve --python X.Y` prints
    # for the checked Python, held to what the index serves unless offline.
    session = Session(capture=req.capture, fresh=req.fresh, python=python.short_version)
    with ticker.in_phase("detecting this machine"):
        machine = session.machine()
    if health_stale(req.capture, picked, session.detected_at):
        with ticker.in_phase("reading the GPUs' hardware health"):
            from rocmkit.detect import refresh_health

            machine = refresh_health(machine)
    with ticker.in_phase("resolving the plan, held to what the index serves"):
        plan, plan_error = _plan(session, out)
    return Prepared(python=python, session=session, machine=machine, plan=plan, plan_error=plan_error, total=total)


def _plan(session: Session, out: Output) -> tuple[Plan | None, str | None]:
    """The plan, or why there is none: said on stderr and recorded in the report, never
    swallowed (the checks still run: a machine without a plan is worth checking)."""
    from rocmkit.errors import RocmkitError
    from rocmkit.resolve.constraints import Constraints

    try:
        return session.plan(Constraints()), None
    except RocmkitError as exc:
        why = exc.one_line().removeprefix("error: ")
        out.warning(f"no plan for this machine: {why}")
        return None, why
