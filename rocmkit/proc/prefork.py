"""The parent's side of a prefork worker (:mod:`rocmkit.proc.prefork_worker`).

One worker per run, in the Python the tasks are for, imports torch (and what else they
need) once; each task then costs a fork instead of an interpreter start plus those
imports. The doctor runs its isolated checks this way (:mod:`rocmkit.doctor.forkserver`),
``rocmkit bench`` its models (:mod:`rocmkit.bench.forks`). What one child per task
promised still holds per fork: a crash, a hang (killed here at the task's timeout, with
its whole process group), an OOM kill or output without end ends that task only.

The worker is a long-lived helper speaking a pipe protocol, so it is started with
``subprocess.Popen`` rather than :func:`rocmkit.proc.runner.run` (which runs a command to its
end); it gets the same treatment: an argument list, its own session, a timeout on every
wait, and its group killed on close.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from rocmkit.proc.prefork_worker import SCHEMA
from rocmkit.util.ticker import Task, current_task

# The worker imports torch (seconds), Triton or inductor (seconds more) before it is ready.
READY_TIMEOUT_S = 300.0
# Bytes a task may print before its fork is stopped (the report keeps the tail).
OUTPUT_CAP_BYTES = 8 * 1024 * 1024
# After a kill, how long the worker may take to report the exit.
EXIT_GRACE_S = 5.0
POLL_S = 0.05
# torch.cuda.is_available() then asks NVML rather than initialising the CUDA driver, which
# would make every later fork unable to use the GPU.
WORKER_ENV = {"PYTORCH_NVML_BASED_CUDA_CHECK": "1"}

ForkStatus = Literal["ok", "failed", "signal", "overflow", "timeout", "died", "refused", "error"]


class PreforkUnavailable(Exception):
    """No worker can run tasks: the caller runs them in spawned children."""


class ForkRefused(PreforkUnavailable):
    """A GPU runtime was initialised in the worker: no fork of it is safe, now or later."""


@dataclass(frozen=True, kw_only=True)
class ForkOutcome:
    """How one fork ended: ``ok``/``failed``/``signal``/``overflow``, ``timeout`` (killed here),
    ``died`` (the worker went), ``refused`` (the worker found a GPU runtime initialised: no
    fork is safe), or ``error`` (no fork: ``error`` says why)."""

    status: ForkStatus
    returncode: int | None
    error: str | None
    elapsed_s: float


class PreforkProcess:
    """One started worker process and the thread that reads its replies."""

    def __init__(
        self,
        argv: list[str],
        env: Mapping[str, str],
        cwd: Path,
        start: dict[str, Any],
        watch: Task | None = None,
        what: str = "worker",
    ) -> None:
        self.what = what
        # The task waiting on this start (a terminal's status line): told each import as it begins.
        self.watch = watch
        self.log = tempfile.TemporaryFile(prefix="rocmkit-worker-")  # noqa: SIM115  # closed in close()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=dict(env),
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
        self._ids = 0
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()
        self.send(start)

    @classmethod
    def start(
        cls,
        python: str,
        *,
        env: Mapping[str, str],
        cwd: Path,
        preload: Sequence[str] = (),
        modules: Sequence[str] = (),
        what: str = "worker",
    ) -> PreforkProcess:
        """A worker that has imported ``preload`` and ``modules`` and is ready to fork.

        Raises :class:`PreforkUnavailable` if it does not come up, or if importing
        initialised a GPU runtime (a fork would inherit a driver state it cannot use)."""
        start = {"schema": SCHEMA, "preload": list(preload), "modules": list(modules)}
        # Whoever waits for this worker (the first check or model that needs it) shows why.
        watch = current_task()
        before = watch.phase_text if watch is not None else None
        if watch is not None:
            watch.set_phase(f"starting the {what}")
        worker = cls(
            [python, "-X", "faulthandler", "-m", "rocmkit.proc.prefork_worker"],
            {**env, **{k: v for k, v in WORKER_ENV.items() if k not in env}},
            cwd,
            start,
            watch,
            what,
        )
        try:
            ready = worker.ready.get(timeout=READY_TIMEOUT_S)
        except queue.Empty:
            ready = {"event": "timeout"}
        finally:
            worker.watch = None
            if watch is not None:
                watch.set_phase(before)
        if ready.get("event") != "ready":
            tail = worker.stderr_tail()
            worker.close()
            raise PreforkUnavailable(
                f"the {what} did not start ({ready.get('event')}): {tail[-1] if tail else 'no output'}"
            )
        if ready.get("cuda_initialized"):
            worker.close()
            raise ForkRefused(f"importing torch initialised CUDA/HIP in the {what}: forking is unsafe")
        worker.info = ready
        return worker

    def _read(self, stream: IO[bytes]) -> None:
        for raw in stream:
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            if msg.get("event") == "ready":
                self.ready.put(msg)
                continue
            if msg.get("event") == "importing":
                watch = self.watch
                if watch is not None:
                    watch.set_phase(f"importing {msg.get('module')} in the {self.what}")
                continue
            with self._waiters_lock:
                waiter = self._waiters.get(int(msg.get("id", -1)))
            if waiter is not None:
                waiter.put(msg)
        # EOF: the worker is gone. Every task still waiting hears it.
        self.alive = False
        self.ready.put({"event": "died"})
        with self._waiters_lock:
            for waiter in self._waiters.values():
                waiter.put({"event": "died"})

    @property
    def pid(self) -> int:
        return self.proc.pid

    def next_id(self) -> int:
        with self._waiters_lock:
            self._ids += 1
            return self._ids

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

    def exit_description(self, wait_s: float = EXIT_GRACE_S) -> str:
        """How the worker process ended, as the kernel reported it: "killed by SIGTERM",
        "exited with code 3"; "still running" when it has not ended within ``wait_s``."""
        try:
            code = self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return "still running"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"killed by {name}"
        return f"exited with code {code}"

    def stderr_tail(self, lines: int = 20) -> list[str]:
        with contextlib.suppress(OSError, ValueError):
            self.log.seek(0)
            text = self.log.read().decode("utf-8", "replace")
            return [ln for ln in text.strip().splitlines() if ln.strip()][-lines:]
        return []

    def run(
        self, request_id: int, call: str, request: Mapping[str, Any], *, folder: Path, timeout_s: float, output_cap: int
    ) -> ForkOutcome:
        """Fork once to call ``call`` ("module:function") with ``request``; wait for its end.

        The fork runs in ``folder``, prints into ``folder/output.txt`` (at most
        ``output_cap`` bytes), and leaves its results in files the task names."""
        message = {
            **request,
            "op": "run",
            "id": request_id,
            "call": call,
            "cwd": str(folder),
            "output_path": str(folder / "output.txt"),
            "output_cap": output_cap,
        }
        waiter = self.register(request_id)
        try:
            start = time.monotonic()
            if not self.send(message):
                waiter.put({"event": "died"})
            status, returncode, error = _wait(waiter, timeout_s, start)
            return ForkOutcome(
                status=status, returncode=returncode, error=error, elapsed_s=time.monotonic() - start
            )
        finally:
            self.unregister(request_id)

    def close(self) -> None:
        self.send({"op": "quit"})
        with contextlib.suppress(OSError, ValueError):
            self._stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=EXIT_GRACE_S)
        # The worker's group: the worker itself, if it did not leave. Forks have their
        # own sessions and were killed by the worker when its stdin closed.
        kill_group(self.proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=EXIT_GRACE_S)
        # The reader thread ends at the pipe's EOF (the worker is gone); then its end is closed
        # here, not left to the garbage collector.
        self._reader.join(timeout=EXIT_GRACE_S)
        if not self._reader.is_alive() and self.proc.stdout is not None:
            with contextlib.suppress(OSError):
                self.proc.stdout.close()
        self.log.close()


def _wait(
    waiter: queue.Queue[dict[str, Any]], timeout_s: float, start: float
) -> tuple[ForkStatus, int | None, str | None]:
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
                return "refused", None, None
            elif event == "died":
                if pid is not None:
                    kill_group(pid)
                return "died", None, None
        if killed_at is None and time.monotonic() > deadline and pid is not None:
            kill_group(pid)
            killed_at = time.monotonic()
        elif killed_at is None and time.monotonic() > deadline + EXIT_GRACE_S:
            return "timeout", None, None  # never started: the worker is stuck


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def tail_text(path: Path, limit: int = 64 * 1024) -> str:
    """The last ``limit`` bytes a fork printed (its stderr tail names the crash)."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
