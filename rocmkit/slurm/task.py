"""One node's part of ``scripts/slurm/onboard.sbatch``: the doctor, its report, and
the readiness barrier before a cross-node all-reduce.

When the doctor would run ``distributed.all_reduce`` across nodes, every node
first checks that its torch imports (the doctor's ``torch.import`` check) and
meets the others at :mod:`rocmkit.slurm.ready`. If every node can take part,
the doctor runs as asked. If one cannot, no node starts the all-reduce: each
runs the rest of its checks and reports ``distributed.all_reduce`` as an
``error`` that names the node that cannot take part, in seconds rather than
after the rendezvous timeout.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rocmkit.doctor.result import CheckResult, Report, Status
from rocmkit.errors import DataError, ToolError, UsageError
from rocmkit.proc.runner import run
from rocmkit.slurm import ready
from rocmkit.util.atomicio import write_text_atomic

NAME = "distributed.all_reduce"
DEFAULT_TIMEOUT_S = 4 * 3600.0
PROBE_TIMEOUT_S = 180.0
# The doctor options that pick the Python to check: the probe must check the same one.
_PYTHON_OPTS = ("--venv", "--python", "--backend", "--timeout-scale")


@dataclass(frozen=True, kw_only=True)
class DoctorArgs:
    level: int
    only: tuple[str, ...]
    skip: tuple[str, ...]
    python_args: tuple[str, ...]


def parse_doctor_args(args: Sequence[str]) -> DoctorArgs:
    """The parts of the doctor's options the task needs (the doctor checks them all)."""
    level, only, skip, py = 1, [], [], []
    items = list(args)
    i = 0
    while i < len(items):
        opt, eq, val = items[i].partition("=")
        if not eq and i + 1 < len(items) and opt in ("--level", "-l", "--only", "--skip", *_PYTHON_OPTS):
            val = items[i + 1]
            i += 1
        i += 1
        if opt in ("--level", "-l"):
            try:
                level = int(val)
            except ValueError:
                raise UsageError(f"--level {val!r} is not 0-3", "pass --level 0, 1, 2 or 3") from None
        elif opt == "--only":
            only.append(val)
        elif opt == "--skip":
            skip.append(val)
        elif opt in _PYTHON_OPTS:
            py += [opt, val]
    return DoctorArgs(level=level, only=tuple(only), skip=tuple(skip), python_args=tuple(py))


def runs_distributed(d: DoctorArgs) -> bool:
    import fnmatch

    def hit(pattern: str) -> bool:
        return pattern in (NAME, "distributed") or fnmatch.fnmatchcase(NAME, pattern)

    picked = any(hit(p) for p in d.only) if d.only else d.level >= 3
    return picked and not any(hit(p) for p in d.skip)


def _doctor(args: Sequence[str], timeout_s: float, env: Mapping[str, str]) -> tuple[Report | None, str]:
    res = run([sys.executable, "-m", "rocmkit", "doctor", "--json", *args], timeout=timeout_s, env=env)
    if res.stderr:
        sys.stderr.write(res.stderr)
    try:
        return Report.from_dict(json.loads(res.stdout)), res.describe()
    except (ValueError, DataError):
        return None, res.describe()


def probe(d: DoctorArgs, env: Mapping[str, str]) -> tuple[bool, str]:
    """Can this node take part: does torch import in the Python the doctor checks?"""
    report, how = _doctor(["--only", "torch.import", *d.python_args], PROBE_TIMEOUT_S, env)
    if report is None:
        return False, f"rocmkit doctor failed: {how}"
    for r in report.results:
        if r.name == "torch.import" and r.status in (Status.FAIL, Status.ERROR, Status.SKIP):
            return False, f"torch.import: {r.message}"
    return True, ""


def not_started(verdict: ready.Verdict, host: str, nnodes: int, master: str) -> CheckResult:
    """The all-reduce result when the barrier said no: names the node(s) at fault."""
    mine = [a for a in verdict.not_ready if a.node == host]
    # A healthy peer of a node that said "cannot" is not at fault: its all-reduce is a
    # skip that names the node, so the drain list holds that node alone. A peer that
    # never answered (or a store never reached) stays an error: nobody knows whose fault.
    status = Status.ERROR
    if mine:
        message = f"this node ({host}) cannot take part in the all-reduce: {mine[0].reason}; not started on any node"
        remedy = "fix this node's torch first (see its torch.import result), then onboard again"
    else:
        message = f"all-reduce not started on any of {nnodes} nodes: {verdict.describe()}"
        names = ", ".join(a.node for a in verdict.not_ready) or "the node named"
        if verdict.not_ready and not verdict.missing and not verdict.error:
            status = Status.SKIP
        remedy = (
            f"fix {names} (its own report says how), or leave it out (sbatch --exclude), and onboard again"
        )
    return CheckResult(
        name=NAME,
        level=3,
        status=status,
        message=message,
        remedy=remedy,
        details={"readiness": verdict.to_dict(), "nnodes": nnodes, "master": master},
    )


def merge(report: Report, extra: CheckResult) -> Report:
    results = (*(r for r in report.results if r.name != extra.name), extra)
    return replace(report, results=results)


def onboard_task(
    *,
    host: str,
    out_dir: Path,
    doctor_args: Sequence[str],
    env: Mapping[str, str],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    ready_timeout_s: float = ready.DEFAULT_TIMEOUT_S,
) -> int:
    """Run this node's doctor, write ``out_dir/<host>.json``; returns the doctor's exit code."""
    from rocmkit.doctor.checks.distributed import LayoutError, launcher_ranks, rendezvous_port

    d = parse_doctor_args(doctor_args)
    args = list(doctor_args)
    extra: CheckResult | None = None
    try:
        ranks = launcher_ranks(env)
    except LayoutError:
        ranks = None  # the doctor's own check reports the bad launch
    if ranks is not None and runs_distributed(d) and env.get("MASTER_ADDR"):
        rank, nnodes = ranks
        master = env["MASTER_ADDR"]
        port = int(rendezvous_port(env)) + ready.PORT_OFFSET
        ok, why = probe(d, env)
        answer = ready.Answer(rank=rank, node=host, ready=ok, reason=why)
        names = [n for n in env.get("ROCMKIT_NODES", "").split(",") if n]
        print(
            f"rocmkit: {host} (rank {rank}/{nnodes}) {'ready' if ok else 'NOT ready: ' + why}",
            file=sys.stderr,
        )
        store = None
        if rank == 0:
            store = ready.ReadyStore(
                port=port, nnodes=nnodes, own=answer, timeout_s=ready_timeout_s, names=names
            )
            verdict = store.verdict()
        else:
            verdict = ready.ask(master, port, answer, ready_timeout_s)
        if not verdict.go:
            print(f"rocmkit: all-reduce not started: {verdict.describe()}", file=sys.stderr)
            args.append(f"--skip={NAME}")
            extra = not_started(verdict, host, nnodes, f"{master}:{port}")
        try:
            report, how = _doctor(args, timeout_s, env)
        finally:
            if store is not None:
                store.finish()
    else:
        report, how = _doctor(args, timeout_s, env)
    if report is None:
        raise ToolError(
            f"the doctor on {host} wrote no report: {how}", "run the same doctor command on the node by hand"
        )
    if extra is not None:
        report = merge(report, extra)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out_dir / f"{host}.json", json.dumps(report.to_dict(), indent=2) + "\n")
    return report.exit_code
