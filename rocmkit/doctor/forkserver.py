"""The doctor's fork server: its checks run in forks of a prefork worker
(:mod:`rocmkit.proc.prefork`, :mod:`rocmkit.proc.prefork_worker`).

One worker per doctor run, in the checked Python, imports torch and Triton once;
each isolated check then costs a fork instead of an interpreter start plus those
imports. What one-child-per-check isolation promised still holds per fork: a
crash, a hang (killed here at the check's timeout, with its whole process group),
an OOM kill or output without end is that check's ``error`` result, and the next
check runs. A worker that dies is started again for the checks after it; one that
cannot start, or keeps dying, leaves the remaining checks to the spawned children
of :func:`rocmkit.doctor.isolate.run_isolated`.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from rocmkit.doctor import isolate
from rocmkit.doctor.registry import Check, CheckContext
from rocmkit.doctor.result import CheckResult
from rocmkit.proc.forkclient import ForkClient, Forked
from rocmkit.proc.prefork import OUTPUT_CAP_BYTES, PreforkProcess, PreforkUnavailable
from rocmkit.proc.results import result_path
from rocmkit.proc.runner import CommandResult
from rocmkit.pyenv import PyEnv, shim_path

# The function each fork calls with its request.
CALL = "rocmkit.doctor.isolate:serve_request"


class WorkerUnavailable(PreforkUnavailable):
    """No worker can run checks: the caller runs them in spawned children."""


class ForkServer(ForkClient):
    """Runs isolated checks as forks of one warm worker; thread-safe, one run at a time per check.
    The worker's lifecycle and restart policy are :class:`rocmkit.proc.forkclient.ForkClient`'s."""

    what = "doctor's worker"

    def __init__(
        self,
        ctx: CheckContext,
        *,
        python: PyEnv | None = None,
        preload: tuple[str, ...] = (),
        modules: tuple[str, ...] = (),
        output_cap: int = OUTPUT_CAP_BYTES,
        env: Mapping[str, str] | None = None,
        what: str = "doctor's worker",
    ) -> None:
        super().__init__(Path(tempfile.mkdtemp(prefix="rocmkit-doctor-")))
        self.ctx = ctx
        self.python = python
        self.preload = preload
        self.modules = modules
        self.output_cap = output_cap
        self.env = dict(env or {})  # on top of the checks' environment (JAX_PLATFORMS for jax's worker)
        self.what = what
        self.imports: list[dict[str, Any]] = []  # per worker start: what it imported, in how long

    def start_worker(self) -> PreforkProcess:
        foreign = self.python is not None and not self.python.own
        shim = shim_path(self.folder / "path", self.python) if foreign and self.python is not None else None
        executable = str(self.python.executable) if self.python is not None else sys.executable
        worker = PreforkProcess.start(
            executable,
            env={**isolate.child_env(self.ctx, shim=shim), **self.env},
            # Not the user's folder: a stray torch/ or triton.py there would shadow the real ones.
            cwd=self.folder,
            preload=self.preload,
            modules=self.modules,
            what=self.what,
        )
        self.imports.append({k: worker.info.get(k) for k in ("pid", "imported", "failed")})
        return worker

    # -- one check ----------------------------------------------------------------------

    def run(self, chk: Check, ctx: CheckContext, *, timeout_s: float) -> list[CheckResult]:
        """Run ``chk`` in a fork; raises :class:`WorkerUnavailable` when no worker can run it.

        A worker that dies while the check runs (its fork killed with it) could have been
        killed by this check or by another one running beside it, so the check runs once
        more in a new worker; dying again, it is this check's ``error``."""
        request = {
            "schema": isolate.REQUEST_SCHEMA,
            "check": chk.name,
            "module": chk.module,
            "context": ctx.to_dict(),
            "result_path": str(result_path(Path("{folder}"))),
        }
        for attempt in (1, 2):
            with self.fork(CALL, request, timeout_s=timeout_s, output_cap=self.output_cap) as forked:
                if forked is None:
                    raise WorkerUnavailable(self.unavailable or "forking is unsafe in this environment")
                died = forked.outcome.status == "died"
                if died and attempt == 1 and not result_path(forked.folder).exists():
                    continue
                return self._results(chk, ctx, forked, timeout_s)
        raise AssertionError("unreachable: the second attempt returns")

    def _results(self, chk: Check, ctx: CheckContext, forked: Forked, budget: float) -> list[CheckResult]:
        outcome, worker, output = forked.outcome, forked.worker, forked.output
        status, elapsed = outcome.status, outcome.elapsed_s
        if status == "refused":
            raise WorkerUnavailable("torch.cuda was initialised in the worker: forking is unsafe")
        results = isolate.read_results(result_path(forked.folder))
        worker_pid = worker.info.get("pid")
        if results is not None:
            if status != "ok":
                note = {"child_exit": status, "stderr_tail": isolate.stderr_tail(output)}
                results = [replace(r, details={**r.details, **note}) for r in results]
            return results
        if status == "died":
            # Say what ended it (the signal, or an exit code): the out-of-memory killer sends
            # SIGKILL, so only that one points at it; any other is the check's own doing.
            how = worker.exit_description()
            oom = " (the kernel's out-of-memory killer sends it; so can any process of this user)"
            return [
                isolate.error_result(
                    chk,
                    ctx,
                    f"the doctor's worker process died twice while this check ran (in two "
                    f"workers), the second time {how}"
                    f"{oom if how == 'killed by SIGKILL' else ''}; "
                    "it was started again for the checks after it",
                    elapsed,
                    (
                        "check `dmesg | grep -i 'out of memory'`; "
                        if how == "killed by SIGKILL"
                        else "the check (or something it ran) ended its parent process; "
                    )
                    + f"rerun with `rocmkit doctor --only {chk.name} --isolation spawn`",
                    {
                        "worker_exit": how,
                        "worker_pid": worker_pid,
                        "worker_stderr_tail": worker.stderr_tail(isolate.STDERR_TAIL_LINES),
                        "stderr_tail": isolate.stderr_tail(output),
                    },
                )
            ]
        proc = CommandResult(
            argv=("fork", chk.name),
            status=status,
            returncode=outcome.returncode,
            stderr=output,
            duration_s=round(elapsed, 3),
            timeout_s=budget,
            error=f"{self.output_cap // (1024 * 1024)} MiB" if status == "overflow" else outcome.error,
        )
        return [isolate.failure_result(chk, ctx, proc, budget, elapsed)]
