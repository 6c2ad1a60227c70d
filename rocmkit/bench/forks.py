"""The models of one ``rocmkit bench`` run as forks of one warm worker.

A model's child spends five seconds or more importing torch, dynamo and inductor
(and two to four more for transformers) before it builds anything: across the
55 models of the HuggingFace list, minutes of every run. One prefork worker
(:mod:`rocmkit.proc.prefork`) per run imports them once, with the run's environment
(compile caches, threads, hidden GPUs), and forks one process per model. Each
model keeps its own process: a crash, a hang (its group killed at the timeout),
an OOM kill or endless output ends that model's row only. Sequential, like the
spawned children: the timings of one model must not share the cores with another.

A worker that dies while a model runs (the OOM killer may choose it) is that
model's ``error`` row and is started again for the next; after
:data:`MAX_RESTARTS`, or where the worker cannot start or finds a GPU runtime
initialised, the rest of the run uses spawned children
(:func:`rocmkit.bench.suite.run_suite` falls back).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from rocmkit.proc.prefork import OUTPUT_CAP_BYTES, PreforkProcess, PreforkUnavailable, tail_text
from rocmkit.proc.runner import CommandResult

MAX_RESTARTS = 2
# What every model's child imports before it builds the model: torch.compile's machinery.
PRELOAD = ("torch", "torch._dynamo", "torch._inductor.compile_fx")
# And what the models of a suite (or transformers' own classes) need: its base module is
# most of its import time (~3.5 s on two cores).
SUITE_PRELOAD = {
    "huggingface": ("transformers", "transformers.modeling_utils"),
    "timm": ("timm",),
}
MODULES = ("rocmkit.bench.child", "rocmkit.bench.harness", "rocmkit.bench.models")
CALL = "rocmkit.bench.child:fork_main"


def preload_for(suite: str, impl: str) -> tuple[str, ...]:
    """What the worker imports for a run of ``suite`` with model implementation ``impl``."""
    extra = SUITE_PRELOAD.get(suite, ())
    if impl == "transformers":
        extra = (*extra, *SUITE_PRELOAD["huggingface"])
    return tuple(dict.fromkeys((*PRELOAD, *extra)))


class ModelForks:
    """Runs bench children (``probe``, one model) as forks; thread-unsafe, one at a time."""

    def __init__(self, python: str, env: Mapping[str, str], *, preload: Sequence[str], folder: Path) -> None:
        self.python = python
        self.env = dict(env)
        self.preload = tuple(preload)
        self.folder = folder
        self.starts = 0
        self.restarts_left = MAX_RESTARTS
        self.unavailable: str | None = None  # why the rest of the run is spawned, once it is
        self._worker: PreforkProcess | None = None

    def _live(self) -> PreforkProcess | None:
        if self._worker is not None and self._worker.alive:
            return self._worker
        if self._worker is not None:
            self._worker.close()
            self._worker = None
            if self.restarts_left <= 0:
                self.unavailable = "the bench worker died too often"
                return None
            self.restarts_left -= 1
        if self.unavailable:
            return None
        self.starts += 1
        try:
            self._worker = PreforkProcess.start(
                self.python,
                env=self.env,
                cwd=self.folder,
                preload=self.preload,
                modules=MODULES,
                what="bench worker",
            )
        except PreforkUnavailable as exc:
            self.unavailable = str(exc)
            return None
        return self._worker

    def run(self, args: Sequence[str], *, timeout_s: float) -> CommandResult | None:
        """Fork to run the bench child with ``args`` (the spawned child's command line:
        ``probe OUT`` or ``run JOB OUT``); None when no worker can (then spawn instead)."""
        worker = self._live()
        if worker is None:
            return None
        request_id = worker.next_id()
        folder = Path(tempfile.mkdtemp(prefix=f"{request_id}-", dir=self.folder))
        argv = ("fork", "rocmkit.bench.child", *args)
        try:
            outcome = worker.run(
                request_id,
                CALL,
                {"args": list(args)},
                folder=folder,
                timeout_s=timeout_s,
                output_cap=OUTPUT_CAP_BYTES,
            )
            output = tail_text(folder / "output.txt")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if outcome.status == "refused":
            self.unavailable = "a GPU runtime was initialised in the bench worker: forking is unsafe"
            self.close()
            return None
        status = outcome.status
        error = outcome.error
        if status == "died":
            tail = worker.stderr_tail(3)
            how = worker.exit_description()
            status, error = "error", f"the bench worker died while it ran ({how})" + (f": {tail[-1]}" if tail else "")
        elif status == "overflow":
            error = f"{OUTPUT_CAP_BYTES // (1024 * 1024)} MiB"
        return CommandResult(
            argv=argv,
            status=status,  # type: ignore[arg-type]  # ok/failed/signal/timeout/overflow/error
            returncode=outcome.returncode,
            stderr=output,
            duration_s=round(outcome.elapsed_s, 3),
            timeout_s=timeout_s,
            error=error,
        )

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None
