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
:data:`rocmkit.proc.forkclient.MAX_RESTARTS` (the doctor's policy too), or where the
worker cannot start or finds a GPU runtime initialised, the rest of the run uses spawned children
(:func:`rocmkit.bench.suite.run_suite` falls back).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rocmkit.proc.forkclient import ForkClient
from rocmkit.proc.prefork import OUTPUT_CAP_BYTES, PreforkProcess
from rocmkit.proc.runner import CommandResult

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


class ModelForks(ForkClient):
    """Runs bench children (``probe``, one model) as forks; one at a time. The worker's lifecycle
    and restart policy are :class:`rocmkit.proc.forkclient.ForkClient`'s, as the doctor's."""

    what = "bench worker"

    def __init__(self, python: str, env: Mapping[str, str], *, preload: Sequence[str], folder: Path) -> None:
        super().__init__(folder)
        self.python = python
        self.env = dict(env)
        self.preload = tuple(preload)

    def start_worker(self) -> PreforkProcess:
        return PreforkProcess.start(
            self.python, env=self.env, cwd=self.folder, preload=self.preload, modules=MODULES, what=self.what
        )

    def run(self, args: Sequence[str], *, timeout_s: float) -> CommandResult | None:
        """Fork to run the bench child with ``args`` (the spawned child's command line:
        ``probe OUT`` or ``run JOB OUT``); None when no worker can (then spawn instead)."""
        argv = ("fork", "rocmkit.bench.child", *args)
        with self.fork(CALL, {"args": list(args)}, timeout_s=timeout_s, output_cap=OUTPUT_CAP_BYTES) as forked:
            if forked is None or forked.outcome.status == "refused":
                self.close_worker()
                return None
            outcome, output = forked.outcome, forked.output
            status, error = outcome.status, outcome.error
            if status == "died":
                tail = forked.worker.stderr_tail(3)
                how = forked.worker.exit_description()
                status = "error"
                error = f"the {self.what} died while it ran ({how})" + (f": {tail[-1]}" if tail else "")
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
