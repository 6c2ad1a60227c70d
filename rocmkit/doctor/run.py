"""Select, order and run doctor checks, and build the report.

Selection: every check at or below ``level``; ``only`` picks checks by name,
group (``env`` for ``env.*``) or glob (``triton.*``) at any level; ``skip``
removes them. Needs (torch, triton, a GPU) that this node lacks turn a check
into ``skip`` with the reason, before anything is started. Isolated checks run
in a child process each (:mod:`rocmkit.doctor.isolate`); the others run here,
with the same rule that an exception is the check's ``error``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib
import importlib.util
import os
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from rocmkit import __version__
from rocmkit.arch import Backend
from rocmkit.doctor import isolate
from rocmkit.doctor.absent import absent_gate, install_torch_remedy
from rocmkit.doctor.python_env import PythonEnv, this_python
from rocmkit.doctor.registry import Check, CheckContext, load_checks
from rocmkit.doctor.result import CheckResult, Report, Status
from rocmkit.errors import UsageError
from rocmkit.machine import Machine
from rocmkit.packages import TRITON_DISTRIBUTIONS
from rocmkit.plan import Plan
from rocmkit.sources import relevant_env

MAX_LEVEL = 3


@dataclass(frozen=True, kw_only=True)
class Discovery:
    checks: dict[str, Check]
    # Check modules that exist but fail to import: reported, never fatal.
    broken: tuple[CheckResult, ...] = ()


def discover(modules: Sequence[str]) -> Discovery:
    """Import the check modules one by one; a module that fails to import becomes
    an ``error`` result rather than stopping every other check."""
    good: list[str] = []
    broken: list[CheckResult] = []
    for mod in modules:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name == mod:
                continue  # not written (or not installed): nothing to run
            broken.append(_broken_module(mod, exc))
            continue
        except Exception as exc:  # a bug in a check module must not stop the others
            broken.append(_broken_module(mod, exc))
            continue
        good.append(mod)
    return Discovery(checks=load_checks(tuple(good)), broken=tuple(broken))


def _broken_module(mod: str, exc: BaseException) -> CheckResult:
    return CheckResult(
        name=f"doctor.module:{mod.rsplit('.', 1)[-1]}",
        level=0,
        status=Status.ERROR,
        message=f"check module {mod} failed to import: {type(exc).__name__}: {exc}".splitlines()[0][:300],
        remedy="report this as a rocmkit bug, with `rocmkit doctor --json` attached",
        details={"module": mod},
    )


def _matches(chk: Check, pattern: str) -> bool:
    group = chk.name.split(".", 1)[0]
    return pattern in (chk.name, group) or fnmatch.fnmatchcase(chk.name, pattern)


def select(
    checks: Mapping[str, Check],
    *,
    level: int = 1,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
) -> list[Check]:
    """The checks to run, in order (level, then module and registration order)."""
    if not 0 <= level <= MAX_LEVEL:
        raise UsageError(f"--level must be 0 to {MAX_LEVEL}, not {level}", "use --level 0, 1, 2 or 3")
    known = ", ".join(sorted(checks)) or "none"
    for pattern in (*only, *skip):
        if not any(_matches(c, pattern) for c in checks.values()):
            raise UsageError(
                f"no doctor check matches {pattern!r}",
                f"see `rocmkit doctor --list`; known checks: {known}",
            )
    if only:
        picked = [c for c in checks.values() if any(_matches(c, p) for p in only)]
    else:
        picked = [c for c in checks.values() if c.level <= level]
    picked = [c for c in picked if not any(_matches(c, p) for p in skip)]
    order = {name: i for i, name in enumerate(checks)}
    return sorted(picked, key=lambda c: (c.level, order[c.name]))


def _installed(dist_or_module: str) -> bool:
    try:
        return importlib.util.find_spec(dist_or_module) is not None
    except (ImportError, ValueError):
        return False


class Why(NamedTuple):
    """Why a check is not run: the message, the fix, and the package missing, if that is why."""

    message: str
    remedy: str
    missing: str | None = None


def missing_need(chk: Check, ctx: CheckContext, python: PythonEnv | None = None) -> Why | None:
    """Why this check cannot run here, or None."""
    live_only = {"torch", "triton", "gpu", "live"}
    if ctx.machine.source.startswith("capture:") and (chk.isolated or chk.needs & live_only):
        return Why("runs on a live machine only, not on a capture", "run `rocmkit doctor` on the node itself")
    for need in sorted(chk.needs):
        if need == "gpu" and ctx.backend == "cpu":
            return Why("needs a GPU, and this run uses the CPU backend", "run it on a GPU node")
        present = python.has(need) if python is not None else _installed(need)
        if need in ("torch", "triton", "transformers") and not present:
            remedy = {
                "torch": install_torch_remedy(python or this_python()),
                "triton": "install the Triton build torch pins (`rocmkit install` does)",
                "transformers": "pip install transformers",
            }[need]
            where = "this Python" if python is None or python.own else python.executable
            return Why(f"needs {need}, which is not installed in {where}", remedy, need)
    return None


# A check whose failure means every check that needs this thing would fail the same way.
GATE_CHECKS = {"torch.import": "torch", "triton.import": "triton"}

Progress = Callable[[Check], None]
ResultHook = Callable[[Check, list[CheckResult]], None]


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    level: int = 1
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    backend: Backend | None = None  # default: what the machine has
    timeout_scale: float = 1.0
    options: dict[str, Any] = field(default_factory=dict)
    modules: tuple[str, ...] = ()  # default: registry.check_modules()


def run_checks(
    selected: Iterable[Check],
    ctx: CheckContext,
    *,
    timeout_scale: float = 1.0,
    on_start: Progress | None = None,
    on_result: ResultHook | None = None,
    python: PythonEnv | None = None,
    level: int = 1,
) -> list[CheckResult]:
    """Run ``selected`` in order. ``level``: the level asked for; from 1 on, torch (or
    Triton next to torch) missing from the checked Python is a finding, not a skip."""
    results: list[CheckResult] = []
    pending = list(selected)
    broken: dict[str, Why] = {}  # need -> why later checks needing it are not run
    for i, chk in enumerate(pending):
        if on_start is not None:
            on_start(chk)
        try:
            out = _run_one(chk, ctx, timeout_scale, broken, python, level)
        except KeyboardInterrupt:
            # Ctrl-C: the running child is already killed (the runner does it); keep
            # what ran and say plainly what did not, so the partial report is honest.
            out = [_not_run(chk, ctx, Status.ERROR, "interrupted (Ctrl-C) while running")]
            results.extend(out)
            if on_result is not None:
                on_result(chk, out)
            results.extend(
                _not_run(c, ctx, Status.SKIP, "not run: the doctor was interrupted") for c in pending[i + 1 :]
            )
            break
        if on_result is not None:
            on_result(chk, out)
        results.extend(out)
        for r in out:
            need = GATE_CHECKS.get(r.name)
            if need is not None and r.status in (Status.FAIL, Status.ERROR):
                # Every later check needing it would fail with the same ImportError: say it once.
                broken[need] = Why(f"not run: {r.name} failed on this node", f"fix {r.name} first")
            if (
                "gpu" in chk.needs
                and r.status is Status.ERROR
                and r.details.get("child", {}).get("status") == "timeout"
            ):
                # A GPU that hung one kernel hangs the next: do not spend every
                # later check's timeout finding that out again.
                broken["gpu"] = Why(
                    f"not run: {r.name} hung, so the GPU may be wedged",
                    "check `dmesg` for GPU resets, reset the GPU or reboot, then rerun",
                )
    return results


def _not_run(
    chk: Check, ctx: CheckContext, status: Status, message: str, why: Why | None = None
) -> CheckResult:
    """A check that was not run: skipped for ``why``, or cut short by Ctrl-C."""
    return CheckResult(
        name=chk.name,
        level=chk.level,
        status=status,
        message=message,
        remedy=why.remedy if why else None,
        backend=ctx.backend,
        details={"missing": why.missing} if why and why.missing else {},
    )


def _run_one(
    chk: Check,
    ctx: CheckContext,
    timeout_scale: float,
    broken: Mapping[str, Why],
    python: PythonEnv | None = None,
    level: int = 1,
) -> list[CheckResult]:
    why = missing_need(chk, ctx, python)
    if why is not None and why.missing in ("torch", "triton"):
        found = absent_gate(chk, ctx, python or this_python(), level)
        if found is not None:
            return [found]
    if why is None:
        why = next((broken[n] for n in sorted(chk.needs) if n in broken), None)
    if why is not None:
        return [_not_run(chk, ctx, Status.SKIP, why.message, why)]
    # Another venv's Python: whatever imports torch or Triton must run there, in a child.
    foreign = python is not None and not python.own and bool(chk.needs & {"torch", "triton", "transformers"})
    if chk.isolated or foreign:
        return isolate.run_isolated(chk, ctx, timeout_s=chk.timeout_s * timeout_scale, python=python)
    return isolate.call_check(chk, ctx)


def host_id(hostname: str, read: Callable[[str], str | None] | None = None) -> str:
    """Stable per node: the hostname plus a short hash of the machine id (which
    survives renames and is shared by no two installs)."""
    reader = read or _read_text
    machine_id = (reader("/etc/machine-id") or reader("/var/lib/dbus/machine-id") or "").strip()
    digest = hashlib.sha256(f"{hostname}\n{machine_id}".encode()).hexdigest()[:12]
    return f"{hostname}-{digest}"


def _read_text(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def versions(results: Sequence[CheckResult], python: PythonEnv | None = None) -> dict[str, str | None]:
    """Versions for the report, read without importing torch; the torch checks add
    what only an import can tell (``torch.version.hip``) through their details."""
    py = python or this_python()
    triton = next((f"{d}=={v}" for d in TRITON_DISTRIBUTIONS if (v := py.dists.get(d)) is not None), None)
    out: dict[str, str | None] = {
        "rocmkit": __version__,
        "python": py.version,
        "python_executable": py.executable,
        "torch": py.dists.get("torch"),
        "triton": triton,
        "hip": None,
        "cuda": None,
    }
    for r in results:
        found = r.details.get("versions")
        if isinstance(found, dict):
            out.update({str(k): (None if v is None else str(v)) for k, v in found.items()})
    return out


def make_plan(machine: Machine) -> Plan | None:
    """The plan resolve would make for this machine, where one can be made.

    Nothing fitting (NoPlanError) is a normal answer here; so, for the doctor, is any
    other failure of resolve: the plan is context for the report, and `rocmkit resolve`
    is where its errors are shown."""
    try:
        from rocmkit.resolve import Constraints, resolve

        return resolve(machine, Constraints())
    except Exception:
        return None


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def doctor(
    machine: Machine,
    opts: RunOptions,
    *,
    plan: Plan | None = None,
    cache_dir: Path,
    environ: Mapping[str, str] | None = None,
    on_start: Progress | None = None,
    on_result: ResultHook | None = None,
    checks: Discovery | None = None,
    python: PythonEnv | None = None,
) -> Report:
    """Run the selected checks on ``machine`` and return the report."""
    from rocmkit.doctor.registry import check_modules

    env = dict(os.environ if environ is None else environ)
    found = checks or discover(opts.modules or check_modules(env))
    selected = select(found.checks, level=opts.level, only=opts.only, skip=opts.skip)
    started = now_iso()
    ctx = CheckContext(
        machine=machine,
        plan=plan,
        backend=opts.backend or machine.backend_kind,
        # Only the variables that matter to checks: the context travels to children
        # as JSON, and secrets in the environment have no business there.
        env=relevant_env(env),
        cache_dir=cache_dir,
        options=dict(opts.options),
    )
    py = python or this_python()
    ran = run_checks(
        selected,
        ctx,
        timeout_scale=opts.timeout_scale,
        on_start=on_start,
        on_result=on_result,
        python=py,
        level=opts.level,
    )
    results = [*found.broken, *ran]
    live = machine.source == "live"
    # A capture is another machine: never label it with this host's name.
    fallback = socket.gethostname() if live else Path(machine.source.split(":", 1)[-1]).name or "capture"
    hostname = machine.host.hostname or fallback
    return Report(
        machine=machine.to_dict(),
        plan=plan.to_dict() if plan else None,
        results=tuple(results),
        versions=versions(results, py),
        started_at=started,
        finished_at=now_iso(),
        host_id=host_id(hostname) if live else f"{hostname}-capture",
        hostname=hostname,
        level=opts.level,
    )
