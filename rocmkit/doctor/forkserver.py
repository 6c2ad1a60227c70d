"""The doctor's side of the fork server (:mod:`rocmkit.doctor.worker`).

One worker per doctor run, in the checked Python, imports torch and Triton once;
each isolated check then costs a fork instead of an interpreter start plus those
imports. What one-child-per-check isolation promised still holds per fork: a
crash, a hang (killed here at the check's timeout, with its whole process group),
an OOM kill or output without end is that check's ``error`` result, and the next
check runs. A worker that dies is started again for the checks after it; one that
cannot start, or keeps dying, leaves the remaining checks to the spawned children
of :func:`rocmkit.doctor.isolate.run_isolated`.

The worker is a long-lived helper speaking a pipe protocol, so it is started with
``subprocess.Popen`` rather than :func:`rocmkit.runner.run` (which runs a command
to its end); it gets the same treatment: an argument list, its own session, a
timeout on every wait, and its group killed on close.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from rocmkit.doctor import isolate
from rocmkit.doctor.python_env import PythonEnv, shim_path
from rocmkit.doctor.registry import Check, CheckContext
from rocmkit.doctor.result import CheckResult
from rocmkit.runner import CommandResult

# The worker imports torch (seconds) and Triton (seconds more) before it is ready.
READY_TIMEOUT_S = 300.0
# Restarts after the worker dies before the rest runs in spawned children instead.
MAX_RESTARTS = 3
# Bytes a check may print before its fork is stopped (the report keeps the tail).
OUTPUT_CAP_BYTES = 8 * 1024 * 1024
# After a kill, how long the worker may take to report the exit.
EXIT_GRACE_S = 5.0
POLL_S = 0.05


class WorkerUnavailable(Exception):
    """No worker can run checks: the caller runs them in spawned children."""


class _Worker:
    """One started worker process and the thread that reads its replies."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path, start: dict[str, Any]) -> None:
        self.log = tempfile.TemporaryFile(prefix="rocmkit-worker-")  # noqa: SIM115  # closed in close()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._stdin: IO[bytes] = self.proc.stdin
        self._write = threading.Lock()
        self._waiters: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._waiters_lock = threading.Lock()
        self.ready: queue.Queue[dict[str, Any]] = queue.Queue()
        self.alive = True
        self.info: dict[str, Any] = {}
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()
        self.send(start)

    def _read(self, stream: IO[bytes]) -> None:
        for raw in stream:
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            if msg.get("event") == "ready":
                self.ready.put(msg)
                continue
            with self._waiters_lock:
                waiter = self._waiters.get(int(msg.get("id", -1)))
            if waiter is not None:
                waiter.put(msg)
        # EOF: the worker is gone. Every check still waiting hears it.
        self.alive = False
        self.ready.put({"event": "died"})
        with self._waiters_lock:
            for waiter in self._waiters.values():
                waiter.put({"event": "died"})

    def send(self, msg: dict[str, Any]) -> bool:
        with self._write:
            try:
                self._stdin.write((json.dumps(msg) + "\n").encode())
                self._stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                return False
        return True

    def register(self, request_id: int) -> queue.Queue[dict[str, Any]]:
        waiter: queue.Queue[dict[str, Any]] = queue.Queue()
        with self._waiters_lock:
            self._waiters[request_id] = waiter
            if not self.alive:
                waiter.put({"event": "died"})
        return waiter

    def unregister(self, request_id: int) -> None:
        with self._waiters_lock:
            self._waiters.pop(request_id, None)

    def stderr_tail(self) -> list[str]:
        with contextlib.suppress(OSError, ValueError):
            self.log.seek(0)
            return isolate.stderr_tail(self.log.read().decode("utf-8", "replace"))
        return []

    def close(self) -> None:
        self.send({"op": "quit"})
        with contextlib.suppress(OSError, ValueError):
            self._stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=EXIT_GRACE_S)
        # The worker's group: the worker itself, if it did not leave. Forks have their
        # own sessions and were killed by the worker when its stdin closed.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=EXIT_GRACE_S)
        self.log.close()


class ForkServer:
    """Runs isolated checks as forks of one warm worker; thread-safe, one run at a time per check."""

    def __init__(
        self,
        ctx: CheckContext,
        *,
        python: PythonEnv | None = None,
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
        self._worker: _Worker | None = None
        self._lock = threading.Lock()
        self._next_id = 0

    # -- the worker ---------------------------------------------------------------------

    def _start(self) -> _Worker:
        foreign = self.python is not None and not self.python.own
        shim = shim_path(self.folder / "path", self.python) if foreign and self.python is not None else None
        executable = self.python.executable if self.python is not None else sys.executable
        start = {
            "schema": "rocmkit.doctor.worker/1",
            "preload": list(self.preload),
            "modules": list(self.modules),
        }
        env = isolate.child_env(self.ctx, shim=shim)
        # torch.cuda.is_available() then asks NVML rather than initialising the CUDA driver,
        # which would make every later fork unable to use the GPU (the forks inherit it too,
        # harmlessly: a check that uses the GPU initialises it for real).
        env.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
        worker = _Worker(
            [executable, "-X", "faulthandler", "-m", "rocmkit.doctor.worker"],
            env,
            # Not the user's folder: a stray torch/ or triton.py there would shadow the real ones.
            self.folder,
            start,
        )
        self.starts += 1
        try:
            ready = worker.ready.get(timeout=READY_TIMEOUT_S)
        except queue.Empty:
            ready = {"event": "timeout"}
        if ready.get("event") != "ready":
            tail = worker.stderr_tail()
            worker.close()
            raise WorkerUnavailable(
                f"the doctor's worker did not start ({ready.get('event')}): {tail[-1] if tail else 'no output'}"
            )
        if ready.get("cuda_initialized"):
            worker.close()
            self.refused = True
            raise WorkerUnavailable("importing torch initialised CUDA/HIP in the worker: forking is unsafe")
        worker.info = ready
        self.imports.append({k: ready.get(k) for k in ("pid", "imported", "failed")})
        return worker

    def _live_worker(self) -> _Worker:
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
                status, returncode, error, elapsed = self._run_once(
                    worker, request_id, chk, ctx, folder, timeout_s
                )
                if status == "died" and attempt == 1 and not (folder / "result.json").exists():
                    continue
                return self._results(chk, ctx, folder, status, returncode, timeout_s, elapsed, worker, error)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        raise AssertionError("unreachable: the second attempt returns")

    def _run_once(
        self, worker: _Worker, request_id: int, chk: Check, ctx: CheckContext, folder: Path, timeout_s: float
    ) -> tuple[str, int | None, str | None, float]:
        request = {
            "op": "run",
            "id": request_id,
            "schema": isolate.REQUEST_SCHEMA,
            "check": chk.name,
            "module": chk.module,
            "context": ctx.to_dict(),
            "result_path": str(folder / "result.json"),
            "output_path": str(folder / "output.txt"),
            "cwd": str(folder),
            "output_cap": self.output_cap,
        }
        waiter = worker.register(request_id)
        try:
            start = time.monotonic()
            if not worker.send(request):
                waiter.put({"event": "died"})
            status, returncode, error = self._wait(waiter, timeout_s, start)
            return status, returncode, error, time.monotonic() - start
        finally:
            worker.unregister(request_id)

    def _wait(
        self, waiter: queue.Queue[dict[str, Any]], timeout_s: float, start: float
    ) -> tuple[str, int | None, str | None]:
        """Wait for the fork's end: ``ok``/``failed``/``signal``/``overflow``, ``timeout``
        (killed here), ``died`` (the worker went), ``refused``, or ``error`` (no fork: why)."""
        pid: int | None = None
        deadline = start + timeout_s
        killed_at: float | None = None
        while True:
            now = time.monotonic()
            if killed_at is not None and now > killed_at + EXIT_GRACE_S:
                return "timeout", None, None
            try:
                msg = waiter.get(timeout=POLL_S)
            except queue.Empty:
                msg = None
            if msg is not None:
                event = msg.get("event")
                if event == "started":
                    pid = int(msg["pid"])
                elif event == "exited":
                    code = msg.get("returncode")
                    if msg.get("error"):
                        return "error", None, f"fork failed: {msg['error']}"
                    if killed_at is not None:
                        return "timeout", code, None
                    if msg.get("overflow"):
                        return "overflow", code, None
                    return ("ok" if code == 0 else "signal" if (code or 0) < 0 else "failed"), code, None
                elif event == "refused":
                    self.refused = True
                    return "refused", None, None
                elif event == "died":
                    if pid is not None:
                        _kill_group(pid)
                    return "died", None, None
            if killed_at is None and time.monotonic() > deadline and pid is not None:
                _kill_group(pid)
                killed_at = time.monotonic()
            elif killed_at is None and time.monotonic() > deadline + EXIT_GRACE_S:
                return "timeout", None, None  # never started: the worker is stuck

    def _results(
        self,
        chk: Check,
        ctx: CheckContext,
        folder: Path,
        status: str,
        returncode: int | None,
        budget: float,
        elapsed: float,
        worker: _Worker,
        error: str | None = None,
    ) -> list[CheckResult]:
        if status == "refused":
            raise WorkerUnavailable("torch.cuda was initialised in the worker: forking is unsafe")
        results = isolate.read_results(folder / "result.json")
        output = _tail_text(folder / "output.txt")
        worker_pid = worker.info.get("pid")
        if results is not None:
            if status != "ok":
                note = {"child_exit": status, "stderr_tail": isolate.stderr_tail(output)}
                results = [replace(r, details={**r.details, **note}) for r in results]
            return results
        if status == "died":
            return [
                isolate.error_result(
                    chk,
                    ctx,
                    "the doctor's worker process died twice while this check ran (in two "
                    "workers); it was started again for the checks after it",
                    elapsed,
                    "check `dmesg` for the out-of-memory killer; rerun with "
                    f"`rocmkit doctor --only {chk.name} --isolation spawn`",
                    {
                        "worker_pid": worker_pid,
                        "worker_stderr_tail": worker.stderr_tail(),
                        "stderr_tail": isolate.stderr_tail(output),
                    },
                )
            ]
        proc = CommandResult(
            argv=("fork", chk.name),
            status=status,  # type: ignore[arg-type]  # ok/failed/signal/timeout/overflow/error
            returncode=returncode,
            stderr=output,
            duration_s=round(elapsed, 3),
            timeout_s=budget,
            error=f"{self.output_cap // (1024 * 1024)} MiB" if status == "overflow" else error,
        )
        return [isolate.failure_result(chk, ctx, proc, budget, elapsed)]


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _tail_text(path: Path, limit: int = 64 * 1024) -> str:
    """The last ``limit`` bytes a check printed (its stderr tail names the crash)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
