"""Run the model set, one child process per model, and collect a :class:`SuiteResult`.

The parent never imports torch: a probe child says which backend torch sees,
then each model runs in its own child with a timeout. A model that fails to
compile, hangs or crashes becomes its own row (``compile_error``, ``timeout``,
``error``) and the others go on. The children are forks of one warm worker
(:mod:`rocmkit.bench.forks`, ``isolation="fork"``), or fresh interpreters through
:func:`rocmkit.proc.runner.run` (``isolation="spawn"``, where no worker can run, and in
tests that hand in their own ``runner``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal

from rocmkit.bench import history, noise, runlog
from rocmkit.bench.forks import ModelForks, preload_for
from rocmkit.bench.harness import Dtype, HarnessOptions, Mode
from rocmkit.bench.models import Impl, select
from rocmkit.bench.results import ModelResult, SuiteResult
from rocmkit.errors import DataError, RocmkitError, ToolError, UsageError, rerun
from rocmkit.proc.result_file import PHASE_ENV
from rocmkit.proc.results import phase_path, read_phase, read_result, result_path
from rocmkit.proc.runner import CommandResult, run
from rocmkit.util import ticker
from rocmkit.util.paths import cache_dir
from rocmkit.util.trust import compile_env

Device = Literal["auto", "cpu", "cuda"]
Isolation = Literal["fork", "spawn"]
RunFunc = Callable[..., CommandResult]

# Per-model child timeout by size: a cold inductor compile of the tiny set on two
# busy cores takes about a minute per model; full models on a GPU, several.
DEFAULT_TIMEOUT_S = {"tiny": 600.0, "small": 900.0, "full": 1800.0}
PROBE_TIMEOUT_S = 120.0


@dataclass(frozen=True, kw_only=True)
class SuiteOptions:
    models: tuple[str, ...] = ()  # empty: the whole set
    mode: Mode = "infer"
    dtype: Dtype = "fp32"
    size: str | None = None  # None: tiny on the CPU, full on a GPU
    repeat: int = 30  # PyTorch's harness default
    warmup: int = 3
    device: Device = "auto"
    impl: Impl = "auto"
    cosine: bool = False
    timeout_s: float | None = None  # per model; None: by size
    compile_mode: str = "default"
    threads: int | None = None  # CPU threads (torch and inductor's OpenMP kernels); None: torch's default
    perturb: float = 0.0
    python: str = sys.executable
    cache_dir: Path | None = None
    suite: str = "builtin"  # builtin, huggingface, timm
    shard: runlog.Shard | None = None
    results: Path | None = None  # the JSON-lines file each row is appended to
    resume: bool = False  # run only the models without a row in ``results``
    isolation: Isolation = "fork"  # forks of one warm worker, or a fresh interpreter per model


@dataclass(frozen=True, kw_only=True)
class Progress:
    """Where a run stands as a model starts: for the ``[3/48] ... ETA`` line on stderr."""

    name: str
    index: int  # 1-based, among the models this invocation runs
    total: int
    done_before: int  # rows a resumed run already had
    eta_s: float | None  # learnt from the models done (see eta_s()); None until the second is done


def typical_s(durations: list[float]) -> float | None:
    """A model's time, learnt from the models done: the median of their times, leaving out the
    first, which pays for the cold compile caches and imports (it made the first ETA three
    times too long). None until a model after the first is done."""
    import statistics

    learnt = durations[1:]
    return statistics.median(learnt) if learnt else None


def each_s(
    durations: list[float], left: int, *, seen: Sequence[float | None] = (), ahead: Sequence[float | None] = ()
) -> list[float] | None:
    """The time of each of the ``left`` models to run (the running one first): a model's own
    time in an earlier run here (``ahead``, bench/history.py) scaled by how this run compares
    with that one on the models done (``seen``: their earlier times, beside ``durations``);
    else :func:`typical_s`. None while a model has neither."""
    typical = typical_s(durations)
    # The first model counts here: its earlier time paid the same cold start (and a run with
    # warm compile caches is told from its first model on: measured 3 times faster).
    pairs = [(d, s) for d, s in zip(durations, seen, strict=False) if s]
    ratio = sum(d for d, _ in pairs) / sum(s for _, s in pairs) if pairs else 1.0
    each = [(a * ratio if a else typical) for a in (*ahead[:left], *([None] * (left - len(ahead))))]
    return None if any(e is None for e in each) else [e for e in each if e is not None]


def eta_s(
    durations: list[float],
    left: int,
    elapsed: float = 0.0,
    *,
    seen: Sequence[float | None] = (),
    ahead: Sequence[float | None] = (),
) -> float | None:
    """Seconds left for ``left`` models (the one running included, ``elapsed`` seconds into it),
    at :func:`each_s` each; None until that is known. A model running past its time counts as
    about to end, so the estimate falls while one runs, never grows."""
    if left <= 0:
        return 0.0
    each = each_s(durations, left, seen=seen, ahead=ahead)
    if each is None:
        return None
    return max(each[0] - elapsed, 0.0) + sum(each[1:])


def eta_text(
    durations: list[float],
    left: int,
    started: float,
    *,
    seen: Sequence[float | None] = (),
    ahead: Sequence[float | None] = (),
) -> str | None:
    """The status line's ETA ("ETA 1 min 10 s") for a model started at ``started``; None
    before one is known."""
    each = each_s(durations, left, seen=seen, ahead=ahead)
    if not each:
        return None
    typical = each[0]
    elapsed = time.monotonic() - started
    seconds = eta_s(durations, left, elapsed, seen=seen, ahead=ahead) or 0.0
    if elapsed <= typical:
        return f"ETA {ticker.duration_text(seconds)}"
    # Past the typical time nobody knows how long this one takes: say what is known.
    over = f"over the typical {ticker.duration_text(typical)}"
    return f"{over}, then about {ticker.duration_text(seconds)}" if seconds else over


def _slug(name: str) -> str:
    # Hub names carry a slash ("meta-llama/Llama-3.2-1B"): not a file name.
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def child_env(
    environ: Mapping[str, str], cache: Path, device: str, threads: int | None = None, root: str | None = None
) -> dict[str, str]:
    """The child's environment: compile caches under rocmkit's cache, GPUs hidden for a CPU run.
    ``root``: where the child finds rocmkit (default: the folder that holds this rocmkit)."""
    env = dict(environ)
    # Never a compile cache another user can write (compiled .so files are loaded and run).
    compile_env(env, cache)
    # The child must import this very rocmkit, even from a source checkout.
    root = root or str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    if device == "cpu":
        if (os.cpu_count() or 1) <= 4:
            # The compile workers would compete with the compiled kernels for a few cores.
            env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
        # CPU-only torch has no GPU to pick, but a ROCm build on a GPU node must not use one.
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["HIP_VISIBLE_DEVICES"] = ""
    if threads:
        # Inductor's C++ kernels size their OpenMP teams from this, eager ops from set_num_threads.
        env["OMP_NUM_THREADS"] = str(threads)
    return env


def _child(python: str, *args: str) -> list[str]:
    return [python, "-m", "rocmkit.bench.child", *args]


def probe(
    python: str,
    env: Mapping[str, str],
    *,
    runner: RunFunc = run,
    workdir: Path,
    forks: ModelForks | None = None,
    needed: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Which backend and device torch sees in ``python``, and the versions; ``needed``
    modules are imported to prove they load."""
    folder = workdir / "probe"
    folder.mkdir(exist_ok=True)
    out = result_path(folder)
    args = ["probe", str(out), *needed]
    forked = forks.run(args, timeout_s=PROBE_TIMEOUT_S) if forks is not None else None
    result = forked or runner(_child(python, *args), timeout=PROBE_TIMEOUT_S, env=env)
    if not result.ok or not out.is_file():
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or [""]
        if "No module named 'torch'" in "".join(tail):
            raise UsageError(
                f"torch is not importable by {python}", "install torch first (`rocmkit install`)"
            )
        raise ToolError(f"probing torch failed: {result.describe()}", "run `rocmkit doctor` to see why")
    data, why = read_result(out, "the torch probe's result file")
    if why is not None:
        raise DataError(why, "run `rocmkit doctor` to see why")
    if not isinstance(data, dict) or "backend" not in data or "device" not in data:
        raise ToolError(
            f"probing torch failed: {out} holds no probe answer", "run `rocmkit doctor` to see why"
        )
    return data


def _failed_row(name: str, suite: str, result: CommandResult, timeout: float) -> ModelResult:
    tail = (result.stderr or result.stdout)[-2000:]
    if result.status == "timeout":
        return ModelResult(
            name=name,
            suite=suite,
            status="timeout",
            duration_s=result.duration_s,
            stderr_tail=tail,
            message=f"did not finish within {timeout:g} s and was killed (raise --timeout)",
        )
    last = [ln for ln in tail.strip().splitlines() if ln.strip()][-1:] or [""]
    return _error_row(
        name,
        suite,
        result,
        f"the child process ended without a result: {result.describe()}"
        + (f" ({last[0][:200]})" if last[0] and last[0] not in result.describe() else ""),
    )


def _error_row(name: str, suite: str, result: CommandResult, message: str) -> ModelResult:
    """An ``error`` row for a model whose child gave no usable result."""
    return ModelResult(
        name=name,
        suite=suite,
        status="error",
        duration_s=result.duration_s,
        stderr_tail=(result.stderr or result.stdout)[-2000:],
        message=message,
    )


def _result_row(name: str, suite: str, out: Path, result: CommandResult) -> ModelResult:
    """The row a child wrote, read as every child's result is: a damaged file is that model's
    ``error`` row."""
    tail = (result.stderr or result.stdout)[-2000:]
    data, why = read_result(out, f"the result file of {name}")
    if why is None:
        try:
            row = ModelResult.from_dict(data)
        except RocmkitError as exc:
            why = f"the result file of {name} is not a bench row ({exc.message})"
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            why = f"the result file of {name} is not a bench row ({type(exc).__name__}: {exc})"
        else:
            return row if row.status == "pass" else replace(row, stderr_tail=tail)
    return _error_row(name, suite, result, (why or "")[:300])


def _device_label(probed: str, backend: str, threads: int | None) -> str:
    if backend == "cpu" and threads and probed.endswith(")"):
        return f"{probed.rsplit(' (', 1)[0]} ({threads} thread{'s' if threads != 1 else ''})"
    return probed


def _forks(opts: SuiteOptions, env: Mapping[str, str], work: Path, stack: contextlib.ExitStack) -> ModelForks:
    folder = work / "forks"
    folder.mkdir()
    forks = ModelForks(opts.python, env, preload=preload_for(opts.suite, opts.impl), folder=folder)
    stack.callback(forks.close)
    return forks


def _foreign_root(python: str, work: Path) -> str | None:
    """For another environment's Python (``bench --venv/--python``): a folder with rocmkit and
    what its child needs from rocmkit's environment (psutil, packaging) where that Python lacks
    them, never rocmkit's whole site-packages. None for rocmkit's own Python."""
    # Not realpath: two venvs' pythons link to one base interpreter, with other site-packages.
    if os.path.abspath(python) == os.path.abspath(sys.executable):
        return None
    from rocmkit.pyenv import probe as probe_python
    from rocmkit.pyenv import shim_path

    target = probe_python(Path(python))
    if target.own:
        return None
    return str(shim_path(work / "path", target, needs=("packaging", "psutil")))


def run_suite(
    opts: SuiteOptions,
    *,
    environ: Mapping[str, str] | None = None,
    runner: RunFunc = run,
    on_start: Callable[[Progress], None] | None = None,
    on_result: Callable[[ModelResult], None] | None = None,
    command: str = "",
    on_note: Callable[[str], None] | None = None,
) -> SuiteResult:
    """Run each selected model in its own child and return the suite's result. ``on_note``
    hears what takes seconds before the first model (importing torch and inductor), so a
    cold run is not silent."""
    env_in = dict(os.environ if environ is None else environ)
    if opts.size == "small" and opts.suite != "builtin":
        raise UsageError(
            f"--suite {opts.suite} comes in sizes tiny and full", "use --size tiny or --size full"
        )
    if opts.resume and opts.results is None:
        raise UsageError("--resume needs the results file to continue", "add --results FILE")
    selected = select(opts.models, env_in, opts.suite)
    order = [s.name for s in selected]
    specs = opts.shard.take(selected) if opts.shard else selected
    if opts.repeat < 1 or opts.warmup < 1:
        raise UsageError("--repeat and --warmup must be at least 1")
    previous: runlog.RunLog | None = None
    if opts.resume and opts.results is not None and opts.results.is_file():
        previous = runlog.read(opts.results)
    cache = opts.cache_dir or cache_dir()
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    # Forks only with the real runner: a test's stand-in runner stands for spawned children.
    fork = opts.isolation == "fork" and runner is run
    with tempfile.TemporaryDirectory(prefix="rocmkit-bench-") as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        root = _foreign_root(opts.python, work)
        forks: ModelForks | None = None
        if fork and opts.device == "cpu":
            # The models' environment is known before the probe: the worker answers it too.
            forks = _forks(opts, child_env(env_in, cache, "cpu", opts.threads, root=root), work, stack)
        what = ", ".join(preload_for(opts.suite, opts.impl))
        if on_note is not None and not ticker.shared().live:
            # On a terminal the status line says it, import by import, as the worker reports them.
            on_note(f"rocmkit: importing {what} in {opts.python} (once per run) ...")
        needs = {"huggingface": "transformers", "timm": "timm"}.get(opts.suite)
        needed = tuple(dict.fromkeys(n for n in (needs, "transformers" if opts.impl == "transformers" else None) if n))
        with ticker.shared().task("bench", phase=f"asking {opts.python} which device torch sees"):
            info = probe(
                opts.python,
                child_env(env_in, cache, opts.device, root=root),
                runner=runner,
                workdir=work,
                forks=forks,
                needed=needed,
            )
        backend = "cpu" if opts.device == "cpu" else str(info["backend"])
        if opts.device == "cuda" and backend == "cpu":
            raise UsageError(
                "--device cuda: torch sees no GPU here",
                ("rocmkit doctor   # why torch sees no GPU", rerun("--device", "cpu")),
            )
        if opts.impl == "transformers" and not (info.get("versions") or {}).get("transformers"):
            raise UsageError(
                f"--impl transformers: transformers is not importable by {opts.python}",
                ("pip install transformers", rerun("--impl", "rocmkit")),
            )
        if needs and not (info.get("versions") or {}).get(needs):
            why = (info.get("import_errors") or {}).get(needs) or "not installed"
            raise UsageError(
                f"--suite {opts.suite} needs {needs}, which {opts.python} cannot import ({why})",
                f"`rocmkit install --with {needs}` (timm also needs the torchvision built for this torch; "
                "`rocmkit doctor` checks it)",
            )
        device = "cpu" if backend == "cpu" else "cuda"
        size = opts.size or ("tiny" if device == "cpu" else "full")
        timeout = opts.timeout_s or DEFAULT_TIMEOUT_S.get(size, 1800.0)
        env = child_env(env_in, cache, device, opts.threads, root=root)
        if fork and forks is None:
            forks = _forks(opts, env, work, stack)
        harness = HarnessOptions(
            mode=opts.mode,
            dtype=opts.dtype,
            size=size,
            repeat=opts.repeat,
            warmup=opts.warmup,
            device=device,
            impl=opts.impl,
            cosine=opts.cosine,
            perturb=opts.perturb,
            threads=opts.threads,
            compile_mode=opts.compile_mode,
        )
        shell = SuiteResult(
            backend=backend,
            device=_device_label(str(info["device"]), backend, opts.threads),
            mode=opts.mode,
            dtype=opts.dtype,
            size=size,
            repeat=opts.repeat,
            models=(),
            versions=dict(info.get("versions") or {}),
            started_at=started,
            command=command,
            compile_mode=opts.compile_mode,
            threads=opts.threads,
            suite=opts.suite,
            shard=str(opts.shard or ""),
        )
        header = runlog.header_of(
            shell, suite_name=opts.suite, models=[s.name for s in specs], order=order, shard=shell.shard
        )
        done: dict[str, ModelResult] = {}
        if previous is not None and opts.results is not None:
            if previous.set_aside:
                # Rewriting the file without them would lose them; counting them would mix runs.
                raise UsageError(
                    f"--resume: {previous.set_aside_text()}",
                    "move those lines to a file of their own, or start afresh without --resume",
                )
            diff = runlog.mismatch(previous.header, header)
            if diff or previous.header.get("models") != header["models"]:
                raise UsageError(
                    f"--resume: {opts.results} holds another run ({'; '.join(diff) or 'other models'})",
                    "resume with the options of the first run, or start afresh without --resume",
                )
            done = {r.name: r for r in previous.rows if r.name in header["models"]}
            header = previous.header
            # Rewritten whole: appending after a line torn by the kill would corrupt the next row.
            runlog.start(opts.results, header, list(previous.rows))
        elif opts.results is not None:
            runlog.start(opts.results, header)
        todo = [s for s in specs if s.name not in done]
        rows: list[ModelResult] = []
        # Each model's time in earlier runs with these settings: the ETA's starting point.
        setting = f"{opts.suite}|{device}|{size}|{opts.mode}|{opts.compile_mode}|{opts.threads}|{opts.isolation}"
        earlier = history.load(cache)
        before_s = [earlier.get(history.key(setting, s.name)) for s in todo]
        for i, spec in enumerate(todo, start=1):
            durations = [r.duration_s for r in rows]
            ahead, seen = before_s[i - 1 :], before_s[: i - 1]
            if on_start is not None:
                eta = eta_s(durations, len(todo) - i + 1, seen=seen, ahead=ahead)
                on_start(Progress(name=spec.name, index=i, total=len(todo), done_before=len(done), eta_s=eta))
            folder = work / f"{i:04d}-{_slug(spec.name)}"
            folder.mkdir()
            job = folder / "job.json"
            out = result_path(folder)
            job.write_text(json.dumps({"model": spec.name, "suite": opts.suite, "options": asdict(harness)}))
            args = ["run", str(job), str(out)]
            before = noise.sample()
            # The status line's ETA, learnt from the models done and how long this one has run.
            eta_now = partial(eta_text, durations, len(todo) - i + 1, time.monotonic(), seen=seen, ahead=ahead)
            with ticker.shared().task(f"model {i}/{len(todo)} {spec.name}", detail=eta_now):
                forked = forks.run(args, timeout_s=timeout) if forks is not None else None
                if forked is None:
                    # A spawned child says its phase (the harness's say_phase) in its folder.
                    phase = phase_path(folder)
                    with ticker.in_phase("starting a fresh Python"), ticker.following(partial(read_phase, phase)):
                        result = runner(_child(opts.python, *args), timeout=timeout, env={**env, PHASE_ENV: str(phase)})
                else:
                    result = forked
            if out.is_file():
                row = _result_row(spec.name, spec.suite, out, result)
            else:
                row = _failed_row(spec.name, spec.suite, result, timeout)
            # What else ran on the host meanwhile: compare refuses to judge a loaded run.
            row = replace(row, host_load=noise.host_load(before, noise.sample()))
            if opts.results is not None:
                runlog.append_row(opts.results, row, run=header.get("run"))
            rows.append(row)
            if row.duration_s > 0:
                history.save(cache, {history.key(setting, row.name): row.duration_s})
            if on_result is not None:
                on_result(row)
    all_rows = {**done, **{r.name: r for r in rows}}
    return replace(
        shell,
        # A resumed run keeps what its first invocation recorded.
        versions=dict(header.get("versions") or shell.versions),
        device=str(header.get("device") or shell.device),
        started_at=str(header.get("started_at", started)),
        models=tuple(all_rows[s.name] for s in specs if s.name in all_rows),
        finished_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    )
