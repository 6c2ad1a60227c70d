"""Select, order and run doctor checks, and build the report.

Selection: every check at or below ``level``; ``only`` picks checks by name,
group (``env`` for ``env.*``) or glob (``triton.*``) at any level; ``skip``
removes them. Needs (torch, triton, a GPU) that this node lacks turn a check
into ``skip`` with the reason, before anything is started. Isolated checks run
in a child process each (:mod:`rocmkit.doctor.isolate`); the others run here,
with the same rule that an exception is the check's ``error``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib
import importlib.util
import os
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from rocmkit import __version__
from rocmkit.arch import Backend
from rocmkit.doctor import cachestats, isolate, verdicts
from rocmkit.doctor.absent import absent_gate, install_torch_remedy
from rocmkit.doctor.forkserver import ForkServer, WorkerUnavailable
from rocmkit.doctor.registry import Check, CheckContext, load_checks
from rocmkit.doctor.result import CheckResult, Report, Status
from rocmkit.errors import RocmkitError, UsageError
from rocmkit.machine import Machine
from rocmkit.packages import TRITON_DISTRIBUTIONS
from rocmkit.plan import Plan
from rocmkit.pyenv import PyEnv, this_python
from rocmkit.sources import relevant_env
from rocmkit.util.ticker import shared as shared_ticker

if TYPE_CHECKING:
    from rocmkit.doctor.sku import Sku

MAX_LEVEL = 3
Isolation = Literal["fork", "spawn"]


@dataclass(frozen=True, kw_only=True)
class Discovery:
    checks: dict[str, Check]
    # Check modules that exist but fail to import: reported, never fatal.
    broken: tuple[CheckResult, ...] = ()


def discover(modules: Sequence[str]) -> Discovery:
    """Import the check modules one by one; a module that fails to import becomes
    an ``error`` result rather than stopping every other check."""
    good: list[str] = []
    broken: list[CheckResult] = []
    for mod in modules:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name == mod:
                continue  # not written (or not installed): nothing to run
            broken.append(_broken_module(mod, exc))
            continue
        except Exception as exc:  # a bug in a check module must not stop the others
            broken.append(_broken_module(mod, exc))
            continue
        good.append(mod)
    return Discovery(checks=load_checks(tuple(good)), broken=tuple(broken))


def _broken_module(mod: str, exc: BaseException) -> CheckResult:
    remedy = "report this as a rocmkit bug, with `rocmkit doctor --json` attached"
    if isinstance(exc, RocmkitError) and exc.fix:
        # A bad kernel declaration names its file and the fix: keep both.
        remedy = exc.fix
    return CheckResult(
        name=f"doctor.module:{mod.rsplit('.', 1)[-1]}",
        level=0,
        status=Status.ERROR,
        message=f"check module {mod} failed to import: {type(exc).__name__}: {exc}".splitlines()[0][:300],
        remedy=remedy,
        details={"module": mod},
    )


def _matches(chk: Check, pattern: str) -> bool:
    group = chk.name.split(".", 1)[0]
    return pattern in (chk.name, group) or fnmatch.fnmatchcase(chk.name, pattern)


def select(
    checks: Mapping[str, Check],
    *,
    level: int = 1,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
) -> list[Check]:
    """The checks to run, in order (level, then module and registration order)."""
    if not 0 <= level <= MAX_LEVEL:
        raise UsageError(f"--level must be 0 to {MAX_LEVEL}, not {level}", "use --level 0, 1, 2 or 3")
    known = ", ".join(sorted(checks)) or "none"
    for pattern in (*only, *skip):
        if not any(_matches(c, pattern) for c in checks.values()):
            raise UsageError(
                f"no doctor check matches {pattern!r}",
                f"see `rocmkit doctor --list`; known checks: {known}",
            )
    if only:
        picked = [c for c in checks.values() if any(_matches(c, p) for p in only)]
    else:
        picked = [c for c in checks.values() if c.level <= level]
    picked = [c for c in picked if not any(_matches(c, p) for p in skip)]
    order = {name: i for i, name in enumerate(checks)}
    return sorted(picked, key=lambda c: (c.level, order[c.name]))


def _installed(dist_or_module: str) -> bool:
    try:
        return importlib.util.find_spec(dist_or_module) is not None
    except (ImportError, ValueError):
        return False


class Why(NamedTuple):
    """Why a check is not run: the message, the fix, and the package missing, if that is why."""

    message: str
    remedy: str
    missing: str | None = None


def missing_need(chk: Check, ctx: CheckContext, python: PyEnv | None = None) -> Why | None:
    """Why this check cannot run here, or None."""
    live_only = {"torch", "triton", "gpu", "live"}
    if ctx.machine.source.startswith("capture:") and (chk.isolated or chk.needs & live_only):
        return Why("runs on a live machine only, not on a capture", "run `rocmkit doctor` on the node itself")
    for need in sorted(chk.needs):
        if need == "gpu" and ctx.backend == "cpu":
            return Why("needs a GPU, and this run uses the CPU backend", "run it on a GPU node")
        present = python.has(need) if python is not None else _installed(need)
        if need in ("torch", "triton", "transformers", "jax") and not present:
            remedy = {
                "torch": install_torch_remedy(python or this_python()),
                "triton": "install the Triton build torch pins (`rocmkit install` does)",
                "transformers": "pip install transformers",
                "jax": "rocmkit install --framework jax --venv V",
            }[need]
            where = "this Python" if python is None or python.own else python.executable
            return Why(f"needs {need}, which is not installed in {where}", remedy, need)
    return None


# A check whose failure means every check that needs this thing would fail the same way.
GATE_CHECKS = {"torch.import": "torch", "triton.import": "triton", "jax.import": "jax"}

# Which framework a check belongs to (None: both, as the env.* checks): `--framework jax`
# runs the jax.* checks and the shared ones, and a venv holding only jax is not failed for
# lacking torch.
TORCH_GROUPS = ("torch", "triton", "attention", "models", "compile", "distributed")
# Environment checks about torch's own machinery (the inductor and Triton compile caches).
TORCH_CHECKS = ("env.caches",)
FRAMEWORKS = ("torch", "jax")


def framework_of(chk: Check) -> str | None:
    group = chk.name.split(".", 1)[0]
    if group == "jax":
        return "jax"
    if group in TORCH_GROUPS or chk.name in TORCH_CHECKS or chk.needs & {"torch", "triton", "transformers"}:
        return "torch"
    return None


def frameworks_for(python: PyEnv, asked: Sequence[str] = ()) -> tuple[str, ...]:
    """The frameworks to check: those asked for, else those the checked Python has (torch when
    it has neither: its absence is then the finding, as it always was)."""
    if asked:
        return tuple(asked)
    found = tuple(f for f in FRAMEWORKS if python.has(f))
    return found or ("torch",)


def for_frameworks(checks: Sequence[Check], frameworks: Sequence[str], only: Sequence[str] = ()) -> list[Check]:
    """``checks`` without those of a framework not being checked (``--only`` names checks itself)."""
    if only:
        return list(checks)
    return [c for c in checks if framework_of(c) in (None, *frameworks)]

Progress = Callable[[Check], None]
ResultHook = Callable[[Check, list[CheckResult]], None]


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    level: int = 1
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    backend: Backend | None = None  # default: what the machine has
    timeout_scale: float = 1.0
    options: dict[str, Any] = field(default_factory=dict)
    modules: tuple[str, ...] = ()  # default: registry.check_modules()
    # "fork": isolated checks fork from one warm worker; "spawn": a fresh child per check
    # (the old way, kept as the benchmark's baseline and a fallback to rule the worker out).
    isolation: Isolation = "fork"
    jobs: int | None = None  # checks at once; default: the usable cores (1 with spawn)
    fresh: bool = False  # ignore every cache (compile caches here; detection in the CLI)
    image_build: bool = False  # --image-build: device nodes, groups and driver are not applicable
    frameworks: tuple[str, ...] = ()  # --framework; default: what the checked Python has


def run_checks(
    selected: Iterable[Check],
    ctx: CheckContext,
    *,
    timeout_scale: float = 1.0,
    on_start: Progress | None = None,
    on_result: ResultHook | None = None,
    python: PyEnv | None = None,
    level: int = 1,
    jobs: int = 1,
    server: ForkServer | None = None,
    workers: Mapping[str, ForkServer] | None = None,
) -> list[CheckResult]:
    """Run ``selected`` and return their results in ``selected``'s order. ``level``: the
    level asked for; from 1 on, torch (or Triton next to torch) missing from the checked
    Python is a finding, not a skip.

    ``jobs`` checks run at once, except that a GPU check waits for every GPU check
    before it (the built-in ones use every visible GPU, so one at a time), an
    ``exclusive`` check (one whose verdict is a speedup or a bandwidth) runs alone, and a check
    waits for the gate check of what it needs (``torch.import`` for torch), whose
    failure skips it. ``on_result`` is called in ``selected``'s order whatever the order
    the checks end in, so progress and the report read the same on every run."""
    pending = list(selected)
    plan = _Schedule(pending, ctx, timeout_scale, python, level, server, workers or {})
    if jobs <= 1:
        return plan.run_serial(on_start, on_result)
    return plan.run_parallel(jobs, on_start, on_result)


class _Schedule:
    """The bookkeeping of one run: which checks are done, what broke, what may start."""

    def __init__(
        self,
        pending: list[Check],
        ctx: CheckContext,
        timeout_scale: float,
        python: PyEnv | None,
        level: int,
        server: ForkServer | None,
        workers: Mapping[str, ForkServer],
    ) -> None:
        self.pending = pending
        self.ctx = ctx
        self.timeout_scale = timeout_scale
        self.python = python
        self.level = level
        self.server = server
        self.workers = workers  # Check.worker -> its warm worker (jax's)
        self.out: list[list[CheckResult] | None] = [None] * len(pending)
        self.broken: dict[str, Why] = {}  # need -> why later checks needing it are not run
        self.emitted = 0

    def run_serial(self, on_start: Progress | None, on_result: ResultHook | None) -> list[CheckResult]:
        for i, chk in enumerate(self.pending):
            if on_start is not None:
                on_start(chk)
            try:
                found = self.gate(chk)
                self.finish(i, found if found is not None else self.execute(chk))
            except KeyboardInterrupt:
                self.interrupted({i})
                self.emit(on_result)
                break
            self.emit(on_result)
        return self.results()

    def run_parallel(
        self, jobs: int, on_start: Progress | None, on_result: ResultHook | None
    ) -> list[CheckResult]:
        running: dict[Future[list[CheckResult]], int] = {}
        pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="rocmkit-doctor")
        try:
            while self.emitted < len(self.pending):
                for i in self.start_order():
                    chk = self.pending[i]
                    if len(running) >= jobs or any(self.pending[r].exclusive for r in running.values()):
                        break
                    if self.out[i] is not None or i in running.values() or not self.ready(i):
                        continue
                    if chk.exclusive and running:
                        if any(self.pending[r].long_running for r in running.values()):
                            # It cannot start before the compile beside it ends anyway: meanwhile
                            # the short checks after it use the free core instead of idling.
                            continue
                        break  # it starts alone, once what runs has ended; nothing overtakes it
                    if on_start is not None:
                        on_start(chk)
                    found = self.gate(chk)
                    if found is not None:
                        self.finish(i, found)
                        continue
                    running[pool.submit(self.execute, chk)] = i
                self.emit(on_result)
                if not running:
                    continue
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    self.finish(running.pop(fut), fut.result())
                self.emit(on_result)
        except KeyboardInterrupt:
            # Ctrl-C: stop every running fork (closing the worker kills their groups), keep
            # what ran and say plainly what did not, so the partial report is honest.
            for forks in (self.server, *self.workers.values()):
                if forks is not None:
                    forks.close()
            self.interrupted(set(running.values()))
            self.emit(on_result)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return self.results()

    def start_order(self) -> list[int]:
        """The order checks are offered a free slot in: a ``long_running`` check first (a real
        compile that outlasts the rest: started late it runs alone at the end, started early
        the short checks fill the other cores beside it), even ahead of an exclusive check, which
        then waits for it while the short checks after it run beside the compile (an exclusive
        check runs alone either way, so this costs it nothing and saves the compile waiting on
        it); then the selected order. Results are reported in the selected order anyway."""
        early = [i for i, chk in enumerate(self.pending) if chk.long_running]
        return [*early, *(i for i in range(len(self.pending)) if i not in early)]

    def ready(self, i: int) -> bool:
        """May check ``i`` start now? Not before the gate of what it needs has ended,
        and a GPU check not before every GPU check ahead of it."""
        chk = self.pending[i]
        for j in range(i):
            if self.out[j] is not None:
                continue
            other = self.pending[j]
            if GATE_CHECKS.get(other.name) in chk.needs:
                return False
            if "gpu" in chk.needs and "gpu" in other.needs:
                return False
        return True

    def gate(self, chk: Check) -> list[CheckResult] | None:
        """The check's result without running it (skipped, or its package absent), or None."""
        ctx, python = self.ctx, self.python
        why = missing_need(chk, ctx, python)
        if why is not None and why.missing in ("torch", "triton"):
            found = absent_gate(chk, ctx, python or this_python(), self.level)
            if found is not None:
                return [found]
        if why is None:
            why = next((self.broken[n] for n in sorted(chk.needs) if n in self.broken), None)
        if why is not None:
            return [_not_run(chk, ctx, Status.SKIP, why.message, why)]
        return None

    def execute(self, chk: Check) -> list[CheckResult]:
        # The check is what a terminal's status line names while it runs (util/ticker.py); the
        # worker's start and the child's own phases fill in what the wait is.
        with shared_ticker().task(chk.name):
            if not chk.stack_verdict:
                return self._execute(chk)
            # A verdict of the software stack alone: reused while the stack stays (--fresh
            # looks again), stored when it passes.
            key = verdicts.stack_key(chk, self.ctx, self.python or this_python())
            found = None if self.ctx.fresh else verdicts.reused(self.ctx.cache_dir, key)
            if found is not None:
                return found
            out = self._execute(chk)
            verdicts.store(self.ctx.cache_dir, key, out)
            return out

    def _execute(self, chk: Check) -> list[CheckResult]:
        ctx, python = self.ctx, self.python
        if not in_child(chk, python):
            return isolate.call_check(chk, ctx)
        budget = chk.timeout_s * self.timeout_scale
        named = self.workers.get(chk.worker) if chk.worker is not None else None
        if named is not None:
            try:
                return named.run(chk, ctx, timeout_s=budget)
            except WorkerUnavailable:
                pass  # that worker cannot run it: a fresh interpreter, as a pristine check had
        elif self.server is not None and not chk.pristine:
            try:
                return self.server.run(chk, ctx, timeout_s=budget)
            except WorkerUnavailable:
                pass  # no warm worker here: a spawned child per check, as before
        return isolate.run_isolated(chk, ctx, timeout_s=budget, python=python)

    def finish(self, i: int, out: list[CheckResult]) -> None:
        chk = self.pending[i]
        self.out[i] = out
        for r in out:
            need = GATE_CHECKS.get(r.name)
            if need is not None and r.status in (Status.FAIL, Status.ERROR):
                # Every later check needing it would fail with the same ImportError: say it once.
                self.broken[need] = Why(f"not run: {r.name} failed on this node", f"fix {r.name} first")
            if (
                "gpu" in chk.needs
                and r.status is Status.ERROR
                and r.details.get("child", {}).get("status") == "timeout"
            ):
                # A GPU that hung one kernel hangs the next: do not spend every
                # later check's timeout finding that out again.
                self.broken["gpu"] = Why(
                    f"not run: {r.name} hung, so the GPU may be wedged",
                    "check `dmesg` for GPU resets, reset the GPU or reboot, then rerun",
                )

    def interrupted(self, running: set[int]) -> None:
        for i, chk in enumerate(self.pending):
            if self.out[i] is not None:
                continue
            if i in running:
                self.out[i] = [_not_run(chk, self.ctx, Status.ERROR, "interrupted (Ctrl-C) while running")]
            else:
                self.out[i] = [_not_run(chk, self.ctx, Status.SKIP, "not run: the doctor was interrupted")]

    def emit(self, on_result: ResultHook | None) -> None:
        """Hand finished results on in order: a check's results wait for those before it."""
        while self.emitted < len(self.pending):
            out = self.out[self.emitted]
            if out is None:
                return
            if on_result is not None:
                on_result(self.pending[self.emitted], out)
            self.emitted += 1

    def results(self) -> list[CheckResult]:
        return [r for out in self.out if out is not None for r in out]


def _not_run(
    chk: Check, ctx: CheckContext, status: Status, message: str, why: Why | None = None
) -> CheckResult:
    """A check that was not run: skipped for ``why``, or cut short by Ctrl-C."""
    return CheckResult(
        name=chk.name,
        level=chk.level,
        status=status,
        message=message,
        remedy=why.remedy if why else None,
        backend=ctx.backend,
        details={"missing": why.missing} if why and why.missing else {},
    )


def host_id(hostname: str, read: Callable[[str], str | None] | None = None) -> str:
    """Stable per node: the hostname plus a short hash of the machine id (which
    survives renames and is shared by no two installs)."""
    reader = read or _read_text
    machine_id = (reader("/etc/machine-id") or reader("/var/lib/dbus/machine-id") or "").strip()
    digest = hashlib.sha256(f"{hostname}\n{machine_id}".encode()).hexdigest()[:12]
    return f"{hostname}-{digest}"


def _read_text(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def versions(
    results: Sequence[CheckResult], python: PyEnv | None = None, machine: Machine | None = None
) -> dict[str, str | None]:
    """Versions for the report, read without importing torch; the torch checks add
    what only an import can tell (``torch.version.hip``) through their details.

    A report of a capture is the captured node's: its Python as captured, and no torch or
    Triton (a capture does not record them), never this machine's."""
    if machine is not None and machine.source != "live":
        out: dict[str, str | None] = {"rocmkit": __version__, "python": machine.host.python}
        out |= dict.fromkeys(("python_executable", "torch", "triton", "hip", "cuda"))
    else:
        py = python or this_python()
        triton = next((f"{d}=={v}" for d in TRITON_DISTRIBUTIONS if (v := py.dists.get(d)) is not None), None)
        out = {
            "rocmkit": __version__,
            "python": py.version,
            "python_executable": str(py.executable),
            "torch": py.dists.get("torch"),
            "triton": triton,
            "hip": None,
            "cuda": None,
        }
    for r in results:
        found = r.details.get("versions")
        if isinstance(found, dict):
            out.update({str(k): (None if v is None else str(v)) for k, v in found.items()})
    return out


def usable_cores() -> int:
    """The cores this process may run on (a Slurm job's allocation, not the node's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# What a fork of the worker finds imported, per need of the checks it will run, in
# import order. Inductor's Triton bridge is what triton.import checks, and costs as much
# as torch itself to import.
_PRELOAD: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "transformers": ("torch",),
    "triton": ("torch", "triton", "torch._inductor.runtime.triton_compat"),
}
_PRELOAD_ORDER = ("torch", "triton", "torch._inductor.runtime.triton_compat")


def in_child(chk: Check, python: PyEnv | None) -> bool:
    """Whether ``chk`` runs in a child (a fork of the warm worker, or a spawn), not here."""
    if chk.python_facts:
        return False  # facts of the checked Python: ctx.python, or this process's own
    # Another venv's Python: whatever imports torch or Triton must run there, in a child.
    foreign = python is not None and not python.own and bool(chk.needs & {"torch", "triton", "transformers"})
    return chk.isolated or foreign


def fork_server(selected: Sequence[Check], ctx: CheckContext, python: PyEnv) -> ForkServer | None:
    """The warm worker for this run's isolated checks, or None where none would run."""
    forked = [c for c in selected if in_child(c, python) and not c.pristine]
    forked = [c for c in forked if missing_need(c, ctx, python) is None]
    if not forked:
        return None
    wanted = {m for c in forked for need in c.needs for m in _PRELOAD.get(need, ())}
    # Only what the checked Python has: the others are findings for their checks.
    preload = tuple(
        m for m in _PRELOAD_ORDER if m in wanted and all(python.has(p) for p in ("torch", m.split(".")[0]))
    )
    modules = tuple(dict.fromkeys(c.module for c in forked))
    return ForkServer(ctx, python=python, preload=preload, modules=modules)


def jax_server(selected: Sequence[Check], ctx: CheckContext, python: PyEnv) -> ForkServer | None:
    """The warm worker of the jax checks (``worker="jax"``): a fresh interpreter of the checked
    Python that imports jax alone (no torch, which a jax venv need not have), with
    JAX_PLATFORMS pinned before the import as each check pins it, so the checks fork from it
    instead of each importing jax again (about 1 s each). A plugin that cannot load still fails
    loudly: the backend starts in each fork (``jax.devices()``), never in the worker. None where
    no such check runs or the Python has no jax (jax.import then says so from a spawned child)."""
    forked = [c for c in selected if c.worker == "jax" and missing_need(c, ctx, python) is None]
    if not forked or not python.has("jax"):
        return None
    from rocmkit.doctor.checks.jaxchecks import expected_platform

    return ForkServer(
        ctx,
        python=python,
        preload=("jax",),
        modules=tuple(dict.fromkeys(c.module for c in forked)),
        env={"JAX_PLATFORMS": expected_platform(ctx.backend)},
        what="doctor's jax worker",
    )


def image_build(machine: Machine) -> bool:
    """A container image build, seen from inside: the GPU was named with ``ROCMKIT_GFX`` (the
    documented way to check or resolve without a GPU at hand) and no ``/dev/kfd`` exists, since
    ``docker build`` attaches no device. There the device nodes, groups and driver say nothing
    about the nodes the image will run on. ``--image-build`` says so explicitly."""
    if machine.source != "live" or not machine.overrides.get("ROCMKIT_GFX"):
        return False
    kfd = next((d for d in machine.host.devices if d.path == "/dev/kfd"), None)
    return kfd is None or not kfd.exists


def gpu_model(machine: Machine, backend: str, selected: Sequence[Check]) -> Sku | None:
    """The machine's row of matrices/sku.toml, where a level-2/3 check will run on a GPU."""
    if backend == "cpu" or not any(c.level >= 2 for c in selected):
        return None
    from rocmkit.doctor.sku import load_skus

    return load_skus().for_machine(machine)


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def doctor(
    machine: Machine,
    opts: RunOptions,
    *,
    plan: Plan | None = None,
    plan_error: str | None = None,
    cache_dir: Path,
    environ: Mapping[str, str] | None = None,
    on_start: Progress | None = None,
    on_result: ResultHook | None = None,
    checks: Discovery | None = None,
    python: PyEnv | None = None,
) -> Report:
    """Run the selected checks on ``machine`` and return the report."""
    from rocmkit.doctor.registry import check_modules

    env = dict(os.environ if environ is None else environ)
    found = checks or discover(opts.modules or check_modules(env))
    py = python or this_python()
    selected = for_frameworks(
        select(found.checks, level=opts.level, only=opts.only, skip=opts.skip),
        frameworks_for(py, opts.frameworks),
        opts.only,
    )
    started = now_iso()
    ctx = CheckContext(
        machine=machine,
        plan=plan,
        backend=opts.backend or machine.backend_kind,
        # Only the variables that matter to checks: the context travels to children
        # as JSON, and secrets in the environment have no business there.
        env=relevant_env(env),
        cache_dir=cache_dir,
        options=dict(opts.options),
        fresh=opts.fresh,
        level=opts.level,
        image_build=opts.image_build or image_build(machine),
        # Another Python's facts, from its probe; rocmkit's own are this process's metadata.
        python=None if py.own else py,
    )
    server = fork_server(selected, ctx, py) if opts.isolation == "fork" else None
    workers = {"jax": w} if opts.isolation == "fork" and (w := jax_server(selected, ctx, py)) else {}
    for warm in workers.values():
        warm.prestart()  # jax imports on the other core while the main worker imports torch
    sku = gpu_model(machine, ctx.backend, selected)
    hook = on_result
    if on_result is not None and sku is not None:
        from rocmkit.doctor.sku import apply_floors

        def hook(chk: Check, results: list[CheckResult]) -> None:
            on_result(chk, apply_floors(results, sku, backend=ctx.backend))

    try:
        ran = run_checks(
            selected,
            ctx,
            timeout_scale=opts.timeout_scale,
            on_start=on_start,
            on_result=hook,
            python=py,
            level=opts.level,
            jobs=opts.jobs or (usable_cores() if server is not None or workers else 1),
            server=server,
            workers=workers,
        )
    finally:
        if server is not None:
            # The worker's exit (torch's teardown, on a busy node seconds) is a wait like any other.
            with shared_ticker().task("worker", phase="stopping the doctor's worker"):
                server.close()
        for warm in workers.values():
            warm.close()
    if sku is not None:
        from rocmkit.doctor.sku import apply_floors

        # Every level-2/3 figure with its % of peak and the floor of this GPU model.
        ran = apply_floors(ran, sku, backend=ctx.backend)
    results = [*found.broken, *ran]
    live = machine.source == "live"
    # A capture is another machine: never label it with this host's name.
    fallback = socket.gethostname() if live else Path(machine.source.split(":", 1)[-1]).name or "capture"
    hostname = machine.host.hostname or fallback
    return Report(
        machine=machine.to_dict(),
        plan=plan.to_dict() if plan else None,
        plan_error=plan_error,
        results=tuple(results),
        versions=versions(results, py, machine),
        started_at=started,
        finished_at=now_iso(),
        host_id=host_id(hostname) if live else f"{hostname}-capture",
        hostname=hostname,
        level=opts.level,
        caches=cachestats.merge([r.details["compile_cache"] for r in ran if "compile_cache" in r.details]),
    )
