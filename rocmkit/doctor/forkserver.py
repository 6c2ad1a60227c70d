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

import shutil
import sys
import tempfile
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from rocmkit.doctor import isolate
from rocmkit.doctor.registry import Check, CheckContext
from rocmkit.doctor.result import CheckResult
from rocmkit.proc.prefork import (
    OUTPUT_CAP_BYTES,
    ForkOutcome,
    ForkRefused,
    PreforkProcess,
    PreforkUnavailable,
    tail_text,
)
from rocmkit.proc.runner import CommandResult
from rocmkit.pyenv import PyEnv, shim_path

# Restarts after the worker dies before the rest runs in spawned children instead.
MAX_RESTARTS = 3
# The function each fork calls with its request.
CALL = "rocmkit.doctor.isolate:serve_request"


class WorkerUnavailable(PreforkUnavailable):
    """No worker can run checks: the caller runs them in spawned children."""


class ForkServer:
    """Runs isolated checks as forks of one warm worker; thread-safe, one run at a time per check."""

    def __init__(
        self,
        ctx: CheckContext,
        *,
        python: PyEnv | None = None,
        preload: tuple[str, ...] = (),
        modules: tuple[str, ...] = (),
        output_cap: int = OUTPUT_CAP_BYTES,
    ) -> None:
        self.ctx = ctx
        self.python = python
        self.preload = preload
        self.modules = modules
        self.output_cap = output_cap
        self.folder = Path(tempfile.mkdtemp(prefix="rocmkit-doctor-"))
        self.starts = 0  # workers started: 1 unless one died
        self.restarts_left = MAX_RESTARTS
        self.imports: list[dict[str, Any]] = []  # per worker start: what it imported, in how long
        self.refused = False  # the worker found CUDA initialised: forks are unsafe
        self._worker: PreforkProcess | None = None
        self._lock = threading.Lock()
        self._next_id = 0

    # -- the worker ---------------------------------------------------------------------

    def _start(self) -> PreforkProcess:
        foreign = self.python is not None and not self.python.own
        shim = shim_path(self.folder / "path", self.python) if foreign and self.python is not None else None
        executable = str(self.python.executable) if self.python is not None else sys.executable
        self.starts += 1
        try:
            worker = PreforkProcess.start(
                executable,
                env=isolate.child_env(self.ctx, shim=shim),
                # Not the user's folder: a stray torch/ or triton.py there would shadow the real ones.
                cwd=self.folder,
                preload=self.preload,
                modules=self.modules,
                what="doctor's worker",
            )
        except ForkRefused as exc:
            self.refused = True
            raise WorkerUnavailable(str(exc)) from None
        except PreforkUnavailable as exc:
            raise WorkerUnavailable(str(exc)) from None
        self.imports.append({k: worker.info.get(k) for k in ("pid", "imported", "failed")})
        return worker

    def _live_worker(self) -> PreforkProcess:
        with self._lock:
            if self._worker is not None and self._worker.alive:
                return self._worker
            if self._worker is not None:
                self._worker.close()
                self._worker = None
                if self.restarts_left <= 0:
                    raise WorkerUnavailable("the doctor's worker died too often")
                self.restarts_left -= 1
            if self.refused:
                raise WorkerUnavailable("forking is unsafe in this environment")
            self._worker = self._start()
            return self._worker

    @property
    def worker_pid(self) -> int | None:
        w = self._worker
        return w.proc.pid if w is not None and w.alive else None

    def close(self) -> None:
        with self._lock:
            if self._worker is not None:
                self._worker.close()
                self._worker = None
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- one check ----------------------------------------------------------------------

    def run(self, chk: Check, ctx: CheckContext, *, timeout_s: float) -> list[CheckResult]:
        """Run ``chk`` in a fork; raises :class:`WorkerUnavailable` when no worker can run it.

        A worker that dies while the check runs (its fork killed with it) could have been
        killed by this check or by another one running beside it, so the check runs once
        more in a new worker; dying again, it is this check's ``error``."""
        for attempt in (1, 2):
            worker = self._live_worker()
            with self._lock:
                self._next_id += 1
                request_id = self._next_id
            folder = Path(tempfile.mkdtemp(prefix=f"{request_id}-", dir=self.folder))
            try:
                request = {
                    "schema": isolate.REQUEST_SCHEMA,
                    "check": chk.name,
                    "module": chk.module,
                    "context": ctx.to_dict(),
                    "result_path": str(folder / "result.json"),
                }
                outcome = worker.run(
                    request_id, CALL, request, folder=folder, timeout_s=timeout_s, output_cap=self.output_cap
                )
                if outcome.status == "refused":
                    self.refused = True
                if outcome.status == "died" and attempt == 1 and not (folder / "result.json").exists():
                    continue
                return self._results(chk, ctx, folder, outcome, timeout_s, worker)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        raise AssertionError("unreachable: the second attempt returns")

    def _results(
        self,
        chk: Check,
        ctx: CheckContext,
        folder: Path,
        outcome: ForkOutcome,
        budget: float,
        worker: PreforkProcess,
    ) -> list[CheckResult]:
        status, elapsed = outcome.status, outcome.elapsed_s
        if status == "refused":
            raise WorkerUnavailable("torch.cuda was initialised in the worker: forking is unsafe")
        results = isolate.read_results(folder / "result.json")
        output = tail_text(folder / "output.txt")
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
            status=status,  # type: ignore[arg-type]  # ok/failed/signal/timeout/overflow/error
            returncode=outcome.returncode,
            stderr=output,
            duration_s=round(elapsed, 3),
            timeout_s=budget,
            error=f"{self.output_cap // (1024 * 1024)} MiB" if status == "overflow" else outcome.error,
        )
        return [isolate.failure_result(chk, ctx, proc, budget, elapsed)]
