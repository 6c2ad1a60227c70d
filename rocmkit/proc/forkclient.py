"""The parent's side of a prefork worker, shared by the doctor and bench: one lifecycle, one
restart policy, one way to hand a fork its folder and read back what it left.

A client starts its worker (:class:`rocmkit.proc.prefork.PreforkProcess`) on first use, and
again after it died, at most :data:`MAX_RESTARTS` times per run; after that, or when a worker
cannot start, or refuses to fork (a GPU runtime initialised in it), the client is
``unavailable`` (with why) and its caller runs the rest in spawned children. Each request gets
a folder of its own under the client's: the fork writes its output there, its result in
:func:`rocmkit.proc.results.result_path` of it and what it is doing in
:func:`rocmkit.proc.results.phase_path` (shown on a terminal's status line while it runs); the
folder is removed when the caller is done.

The doctor's :class:`rocmkit.doctor.forkserver.ForkServer` and bench's
:class:`rocmkit.bench.forks.ModelForks` say only how their worker starts and what their forks
run.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocmkit.proc.prefork import ForkOutcome, ForkRefused, PreforkProcess, PreforkUnavailable, tail_text
from rocmkit.proc.results import phase_path, read_phase
from rocmkit.util.ticker import following

# Workers started again after one died, per run, before the rest runs in spawned children.
MAX_RESTARTS = 3


@dataclass(frozen=True)
class Forked:
    """One request's answer: how the fork ended, its folder (result file inside, until the
    ``with`` block ends), the worker that ran it, and the tail of its output."""

    outcome: ForkOutcome
    folder: Path
    worker: PreforkProcess
    output: str


class ForkClient(ABC):
    """A prefork worker for one run; thread-safe (requests may run side by side). Subclasses
    say how their worker starts (:meth:`start_worker`); the rest (restarts, requests) is here."""

    what = "worker"  # named in messages: "doctor's worker", "bench worker"

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or Path(tempfile.mkdtemp(prefix="rocmkit-forks-"))
        self.starts = 0  # workers started: 1 unless one died
        self.restarts_left = MAX_RESTARTS
        self.unavailable: str | None = None  # why the rest of the run is spawned, once it is
        self.refused = False  # the worker found a GPU runtime initialised: forks are unsafe
        self._worker: PreforkProcess | None = None
        self._lock = threading.Lock()
        self._ids = 0

    @abstractmethod
    def start_worker(self) -> PreforkProcess:
        """Start this client's worker (its Python, environment, preloads, modules)."""

    def live(self) -> PreforkProcess | None:
        """The running worker, started (again) when needed; None once unavailable."""
        with self._lock:
            if self.unavailable:
                return None
            if self._worker is not None and self._worker.alive:
                return self._worker
            if self._worker is not None:
                self._worker.close()
                self._worker = None
                if self.restarts_left <= 0:
                    self.unavailable = f"the {self.what} died too often"
                    return None
                self.restarts_left -= 1
            self.starts += 1
            try:
                self._worker = self.start_worker()
            except ForkRefused as exc:
                self.refused = True
                self.unavailable = str(exc)
                return None
            except PreforkUnavailable as exc:
                self.unavailable = str(exc)
                return None
            return self._worker

    def prestart(self) -> None:
        """Start the worker now, in the background, so that its imports overlap whatever runs
        first; the first request waits for it (:meth:`live` holds the lock while it starts)."""
        threading.Thread(target=self.live, name=f"{self.what} start", daemon=True).start()

    @property
    def worker_pid(self) -> int | None:
        w = self._worker
        return w.proc.pid if w is not None and w.alive else None

    @contextlib.contextmanager
    def fork(
        self, call: str, payload: dict[str, Any], *, timeout_s: float, output_cap: int
    ) -> Iterator[Forked | None]:
        """Run ``call`` in a fork with ``payload`` (``{folder}`` in its string values becomes the
        request's folder); yields None when no worker can run it (then spawn instead). A fork that
        reports ``refused`` makes the client unavailable: forking is unsafe in this worker."""
        worker = self.live()
        if worker is None:
            yield None
            return
        with self._lock:
            self._ids += 1
            request_id = self._ids
        folder = Path(tempfile.mkdtemp(prefix=f"{request_id}-", dir=self.folder))
        try:
            filled = {k: v.replace("{folder}", str(folder)) if isinstance(v, str) else v for k, v in payload.items()}
            # The fork says its phase in its folder; this thread's status line reads it meanwhile.
            phase = phase_path(folder)
            filled["phase_path"] = str(phase)
            with following(functools.partial(read_phase, phase)):
                outcome = worker.run(
                    request_id, call, filled, folder=folder, timeout_s=timeout_s, output_cap=output_cap
                )
            if outcome.status == "refused":
                self.refused = True
                self.unavailable = f"a GPU runtime was initialised in the {self.what}: forking is unsafe"
            yield Forked(outcome=outcome, folder=folder, worker=worker, output=tail_text(folder / "output.txt"))
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def close_worker(self) -> None:
        """Stop the worker now (a fork refused: forking is unsafe in it); the client stays
        unavailable, its folder kept until :meth:`close`."""
        with self._lock:
            if self._worker is not None:
                self._worker.close()
                self._worker = None

    def close(self) -> None:
        with self._lock:
            if self._worker is not None:
                self._worker.close()
                self._worker = None
        shutil.rmtree(self.folder, ignore_errors=True)
