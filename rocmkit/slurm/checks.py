"""The fast checks a health check or prolog runs, within a strict time budget.

Level 0 (static facts, milliseconds) and the quick level-1 device checks
(torch imports, sees its GPUs, runs one small kernel). The doctor runs as a
child process under :func:`rocmkit.proc.runner.run`, so the budget holds even when a
check hangs in a driver call; a doctor killed at the budget is itself a
finding (a hung GPU is the commonest reason for one).

A recent full doctor report (``rocmkit doctor --level 2/3 --json``, written by
onboarding or a cron job) adds its failures, so a node that failed the slow
checks an hour ago is not declared healthy by the fast ones.
"""

from __future__ import annotations

import os
import pwd
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from rocmkit.doctor.result import CheckResult, Report, Status
from rocmkit.errors import DataError, UntrustedError, UsageError
from rocmkit.proc.runner import run
from rocmkit.slurm.scontrol import DEFAULT_PATH
from rocmkit.util.safeload import load_json_file, loads_json

# The level-1 checks quick enough for a health check: seconds, not minutes.
QUICK_LEVEL1 = ("torch.import", "torch.devices", "torch.arch_list", "torch.device_smoke")
DEFAULT_BUDGET_S = 45.0  # slurmd kills a HealthCheckProgram after 60 s
DEFAULT_MAX_AGE_S = 24 * 3600.0
BAD = (Status.FAIL, Status.ERROR)
# A report stamped later than now by more than this is from a wrong clock, not a recent run.
CLOCK_SKEW_S = 300.0
# `sinfo -R` prints 50 characters of a reason by default (%50E): the rest goes to the log.
REASON_LIMIT = 50


def quick_checks() -> tuple[str, ...]:
    """Every level-0 check and the quick level-1 ones, by name (no check is run)."""
    from rocmkit.doctor.registry import check_modules
    from rocmkit.doctor.run import discover, select

    found = discover(check_modules()).checks
    names = [c.name for c in select(found, level=0)]
    names += [n for n in QUICK_LEVEL1 if n in found]
    return tuple(names)


def hook_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for the doctor child: slurmd gives its hooks no PATH and no HOME."""
    env = dict(os.environ if environ is None else environ)
    env.setdefault("PATH", DEFAULT_PATH)
    if not env.get("HOME"):
        try:
            env["HOME"] = pwd.getpwuid(os.getuid()).pw_dir or "/"
        except KeyError:
            env["HOME"] = "/"
    env.setdefault("LANG", "C.UTF-8")
    # The report's plan is context; a health check every few minutes must not ask the package
    # index (the doctor's plan is held to it unless offline: rocmkit/session.py).
    env.setdefault("ROCMKIT_OFFLINE", "1")
    return env


@dataclass(frozen=True, kw_only=True)
class Finding:
    check: str
    status: Status
    message: str
    remedy: str | None = None
    source: str = "health check"  # or "report <path>"
    subject: str = ""  # what failed, for the drain reason: a GPU's bus id ("46:00.0", "46:00.0+1")


@dataclass(frozen=True, kw_only=True)
class Outcome:
    findings: tuple[Finding, ...]
    notes: tuple[str, ...] = ()  # what the log should say besides the findings
    ran: int = 0  # checks run
    unchecked: bool = False  # the doctor itself broke: no verdict on the node

    @property
    def healthy(self) -> bool:
        return not self.findings


@dataclass(frozen=True, kw_only=True)
class QuickOptions:
    budget_s: float = DEFAULT_BUDGET_S
    strict: bool = False  # warnings count as failures too
    doctor_args: Sequence[str] = ()  # --venv V, --set K=V, --skip NAME ...
    report: Path | None = None
    max_age_s: float = DEFAULT_MAX_AGE_S
    host: str = ""
    env: Mapping[str, str] = field(default_factory=dict)


def target_findings(venv: Path | None, python: str | None) -> list[Finding]:
    """The environment this node is configured to serve, when it is gone or has no Python.

    That is the node's fault (a wiped venv, a half-finished upgrade), not rocmkit's: it drains
    the node with a reason that says so, where a doctor started on it would only fail to start
    and leave the node up."""
    out: list[Finding] = []
    if venv is not None:
        py = venv / "bin" / "python"
        if not venv.is_dir():
            out.append(
                Finding(
                    check="venv missing",
                    status=Status.ERROR,
                    message=f"the venv this node serves, {venv}, is gone",
                    remedy=f"recreate it (`rocmkit install --venv {venv}`) or fix the hook's --venv",
                )
            )
        elif not os.access(py, os.X_OK):
            out.append(
                Finding(
                    check="venv broken",
                    status=Status.ERROR,
                    message=f"the venv {venv} has no runnable Python ({py} is missing or its base interpreter is gone)",
                    remedy=f"recreate it: `python3 -m venv --clear {venv}`, then `rocmkit install --venv {venv}`",
                )
            )
    if os.geteuid() == 0 and not out:
        from rocmkit.pyenv import untrusted_problem, venv_interpreter

        # Root runs this Python: whatever it reads at start-up (the venv, its site-packages and
        # .pth files, the base interpreter and its standard library) that another user can
        # write is that user's code run as root on every node, so it is not run, and the node
        # is not known good.
        target = str(venv_interpreter(venv)) if venv is not None else python
        problem = untrusted_problem(target) if target is not None and os.access(target, os.X_OK) else None
        if problem:
            where = venv if venv is not None else python
            out.append(
                Finding(
                    check="venv untrusted",
                    status=Status.ERROR,
                    message=f"the Python {where} is not safe to run as root: {problem}",
                    remedy=f"make it root's: `chown -R root:root {where} && chmod -R go-w {where}` "
                    "(and the same for the folder that names the problem)",
                )
            )
    if python is not None and not os.access(python, os.X_OK):
        out.append(
            Finding(
                check="python missing",
                status=Status.ERROR,
                message=f"the Python this node serves, {python}, is missing or not executable",
                remedy="reinstall it, or fix the hook's --python",
            )
        )
    return out


def bad(status: Status, strict: bool) -> bool:
    return status in BAD or (strict and status is Status.WARN)


def run_quick(opts: QuickOptions, names: Sequence[str] | None = None) -> Outcome:
    """Run the fast checks in a child doctor and read the recent report; never raises
    for the node's sake (whatever goes wrong is a finding or a note)."""
    picked = tuple(names) if names is not None else quick_checks()
    argv = [sys.executable, "-m", "rocmkit", "doctor", "--json", "--level", "1"]
    for name in picked:
        argv += ["--only", name]
    argv += list(opts.doctor_args)
    res = run(argv, timeout=opts.budget_s, env=dict(opts.env) or hook_env())
    findings: list[Finding] = []
    notes: list[str] = []
    ran = 0
    if res.status == "timeout":
        findings.append(
            Finding(
                check="timeout",
                status=Status.ERROR,
                message=f"the fast checks did not finish within {opts.budget_s:g} s (a hung GPU or driver?)",
                remedy="run `rocmkit doctor --level 1 -v` on the node to see which check hangs",
            )
        )
    else:
        try:
            # Bounded, as every file rocmkit reads back: a doctor gone wrong cannot make
            # the health check itself run out of memory or recursion.
            report = Report.from_dict(loads_json(res.stdout, "the doctor's --json report"))
        except (ValueError, DataError):
            if res.returncode == UntrustedError.exit_code:
                # The doctor refused what it found on the node (a tampered install journal, a
                # folder others can write): the node's fault, named by the doctor's own line.
                lines = res.stderr.strip().splitlines()
                # Its last error: the `error: ...` line and the `fix: ...` lines under it, as one.
                start = max((i for i, line in enumerate(lines) if line.startswith("error: ")), default=len(lines) - 1)
                said = " ".join(lines[start:]) or "a file or folder it will not trust"
                findings.append(
                    Finding(
                        check="untrusted",
                        status=Status.ERROR,
                        message=f"the doctor refused to run on this node: {said[:300]}",
                        remedy="follow the fix in that line, then rerun `rocmkit slurm healthcheck --no-drain`",
                    )
                )
                return Outcome(findings=tuple(findings), notes=tuple(notes))
            # rocmkit itself broke (bad option, crash): no reason to drain a node.
            notes.append(f"the doctor wrote no report: {res.describe()}")
            return Outcome(findings=(), notes=tuple(notes), unchecked=True)
        ran = len(report.results)
        findings += [result_finding(r, "health check") for r in report.results if bad(r.status, opts.strict)]
    if opts.report is not None:
        extra, note = report_findings(opts.report, opts.max_age_s, opts.host, opts.strict)
        findings += extra
        if note:
            notes.append(note)
    return Outcome(findings=tuple(findings), notes=tuple(notes), ran=ran)


def result_finding(r: CheckResult, source: str) -> Finding:
    gpus = r.details.get("failed_gpus")
    subject = ""
    if isinstance(gpus, list) and gpus and all(isinstance(g, str) for g in gpus):
        # The hw.* checks name the GPUs that failed; an admin pulling a GPU needs which one.
        subject = gpus[0][-7:] + (f"+{len(gpus) - 1}" if len(gpus) > 1 else "")
    return Finding(
        check=r.name, status=r.status, message=r.message, remedy=r.remedy, source=source, subject=subject
    )


def report_findings(
    path: Path, max_age_s: float, host: str, strict: bool, now: datetime | None = None
) -> tuple[list[Finding], str | None]:
    """The failures of the last full doctor report, when it is this node's and recent enough."""
    try:
        if not path.exists():
            return [], f"no full report at {path} yet"
        report = Report.from_dict(load_json_file(path, str(path)))
    except (OSError, ValueError, DataError, UsageError) as exc:
        return [], f"cannot read the full report {path}: {getattr(exc, 'message', exc)}"
    if host and report.hostname.split(".")[0] != host:
        return [], f"{path} is {report.hostname}'s report, not {host}'s: ignored"
    try:
        finished = datetime.fromisoformat(report.finished_at.replace("Z", "+00:00"))
    except ValueError:
        return [], f"{path} has no valid finished_at: ignored"
    if finished.tzinfo is None:
        finished = finished.replace(tzinfo=timezone.utc)
    age = ((now or datetime.now(timezone.utc)) - finished).total_seconds()
    if age < -CLOCK_SKEW_S:
        return [], (
            f"{path} says it finished {-age / 60:.0f} min in the future ({report.finished_at}): ignored "
            "(check this node's clock and the writer's)"
        )
    if age > max_age_s:
        return [], f"{path} is {age / 3600:.1f} h old (over {max_age_s / 3600:g} h): ignored"
    source = f"report {path} (level {report.level}, {age / 60:.0f} min old)"
    return [result_finding(r, source) for r in report.results if bad(r.status, strict)], None


def drain_reason(findings: Sequence[Finding], limit: int = REASON_LIMIT) -> str:
    """``rocmkit: env.device_nodes`` (more checks comma-separated, cut to ``limit``: the
    checks' messages and remedies are in the log, where nothing truncates them)."""
    from rocmkit.slurm.scontrol import REASON_PREFIX, reason_safe

    names: list[str] = []
    for f in findings:
        # A name from a --report file (anyone's words) that could write another scontrol
        # field is spelled safely: the node still drains, the log has the name as written.
        name = reason_safe(f"{f.check} {f.subject}" if f.subject else f.check)
        if name not in names:
            names.append(name)
    reason = f"{REASON_PREFIX} {names[0]}"
    for i, name in enumerate(names[1:], start=1):
        more = f" (+{len(names) - i} more)"
        if len(reason) + len(name) + 2 + len(more) > limit:
            return reason + more
        reason += f",{name}"
    return reason
