"""Checks register here by name, at a level.

A check is a plain function ``(ctx: CheckContext) -> CheckResult | list[CheckResult]``
decorated with :func:`check`. Check modules are listed in ``CHECK_MODULES`` and
imported on demand; a check that touches the GPU or compiles says
``isolated=True`` and then runs in a child process (``rocmkit.doctor.isolate``)
that imports its module by name, so its function must live at module level. A check
that only reads facts about the checked Python (distribution versions, torch's
requirements) says ``python_facts=True`` instead: it runs here, reading them from
``ctx.python`` (the one probe of another Python) or, for rocmkit's own Python, from
this process's metadata, so no child or warm worker is started for it.

Levels: 0 static facts (seconds, no GPU work; runs in an image build), 1 quick
device smoke (well under a minute), 2 kernels and performance (minutes),
3 model-level speedups and multi-GPU (tens of minutes on a GPU node).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from rocmkit.arch import Backend
from rocmkit.doctor.result import CheckResult
from rocmkit.machine import Machine
from rocmkit.plan import Plan
from rocmkit.pyenv import PyEnv

# Modules that define checks. A module that does not exist (yet) is skipped.
CHECK_MODULES: tuple[str, ...] = (
    "rocmkit.doctor.checks.env",
    "rocmkit.doctor.checks.torch_env",
    "rocmkit.doctor.checks.kernels",
    "rocmkit.doctor.checks.attention",
    "rocmkit.doctor.checks.models",
    "rocmkit.doctor.checks.compiled",
    "rocmkit.doctor.checks.caches",
    "rocmkit.doctor.checks.apu",
    "rocmkit.doctor.checks.wsl",
    "rocmkit.doctor.checks.distributed",
    "rocmkit.doctor.checks.jaxchecks",
    "rocmkit.doctor.checks.companions",
    "rocmkit.doctor.checks.hardware",
    "rocmkit.doctor.checks.hardware_load",
)

# "live": looks at this running machine or Python (not at a capture's facts).
Need = Literal["torch", "triton", "gpu", "transformers", "live", "jax"]
# The warm workers a pristine check may fork from (Check.worker).
Worker = Literal["jax"]


@dataclass(frozen=True, kw_only=True)
class CheckContext:
    """Everything a check may look at. Passed to child processes as JSON."""

    machine: Machine
    plan: Plan | None = None
    backend: Backend = "cpu"  # which device path the GPU checks take
    env: Mapping[str, str] = field(default_factory=dict)
    cache_dir: Path = Path(".")
    options: dict[str, Any] = field(default_factory=dict)  # thresholds, sizes, repeats
    fresh: bool = False  # ignore compile caches: every kernel and graph compiles again
    level: int = 1  # the level asked for: a check may run longer at level 3 (compile.correctness)
    # An image build (--image-build, or ROCMKIT_GFX set where no /dev/kfd exists): device
    # nodes, groups and the driver are not applicable, since no GPU is attached to a build.
    image_build: bool = False
    # The checked Python's facts, where it is not the one running the check (--venv, read
    # by its probe); None: read this process's own metadata. Not sent to children: a child
    # runs in the checked Python, whose metadata is its own.
    python: PyEnv | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "machine": self.machine.to_dict(),
            "plan": self.plan.to_dict() if self.plan else None,
            "backend": self.backend,
            "env": dict(self.env),
            "cache_dir": str(self.cache_dir),
            "options": self.options,
            "fresh": self.fresh,
            "level": self.level,
            "image_build": self.image_build,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckContext:
        return cls(
            machine=Machine.from_dict(d["machine"]),
            plan=Plan.from_dict(d["plan"]) if d.get("plan") else None,
            backend=d.get("backend", "cpu"),
            env=dict(d.get("env") or {}),
            cache_dir=Path(d.get("cache_dir", ".")),
            options=dict(d.get("options") or {}),
            fresh=bool(d.get("fresh", False)),
            level=int(d.get("level", 1)),
            image_build=bool(d.get("image_build", False)),
        )


CheckFunc = Callable[[CheckContext], "CheckResult | list[CheckResult]"]


@dataclass(frozen=True, kw_only=True)
class Check:
    name: str  # "env.kfd_access"; the part before the dot is its group
    level: int
    description: str
    func: CheckFunc
    module: str
    needs: frozenset[str] = frozenset()
    isolated: bool = False  # run in a child process with its own timeout
    timeout_s: float = 60.0
    # Needs a process no other code ran in (a fresh interpreter, not a fork of the
    # doctor's warm worker): e.g. one that must import torch under changed
    # *_VISIBLE_DEVICES. Implies isolated.
    pristine: bool = False
    # A pristine check that may fork from a warm worker of its own instead of a fresh
    # interpreter: "jax" is a worker of the checked Python that imported jax alone, with
    # JAX_PLATFORMS set (rocmkit.doctor.run.jax_server); None: spawned, one interpreter each.
    worker: Worker | None = None
    # Runs with no other check beside it: its verdict is a measured speedup or bandwidth
    # that concurrent checks would distort.
    exclusive: bool = False
    # The --set keys this check reads, each with what it sets; a key may be a glob
    # ("models.*"). The CLI warns about a key no selected check declares.
    options: Mapping[str, str] = field(default_factory=dict)
    # The kind of value an option takes (rocmkit.kernels.options.KINDS: "positive_int",
    # "fraction", ...): a value of another kind is a usage error before any check runs.
    option_kinds: Mapping[str, str] = field(default_factory=dict)
    # Reads only facts about the checked Python (ctx.python, or this process's metadata):
    # runs in this process, never in a child, whichever Python is checked.
    python_facts: bool = False
    # Its verdict depends only on the software stack (torch, Triton, inductor settings, GPU
    # arch, driver): a pass is stored and reused while that stack stays (doctor/verdicts.py).
    stack_verdict: bool = False
    # Outlasts the other checks (a real compile): offered a free slot first when checks run
    # concurrently, so the short ones fill the other cores beside it instead of leaving it alone
    # at the end.
    long_running: bool = False


_REGISTRY: dict[str, Check] = {}
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


def check(
    name: str,
    *,
    level: int,
    description: str,
    needs: tuple[Need, ...] = (),
    isolated: bool = False,
    timeout_s: float = 60.0,
    pristine: bool = False,
    worker: Worker | None = None,
    options: Mapping[str, str] | None = None,
    exclusive: bool = False,
    python_facts: bool = False,
    option_kinds: Mapping[str, str] | None = None,
    stack_verdict: bool = False,
    long_running: bool = False,
) -> Callable[[CheckFunc], CheckFunc]:
    """Register a check function under ``name``."""
    if not _NAME.fullmatch(name):
        # The name reaches reports, logs and `scontrol update ... Reason=rocmkit: NAME`.
        raise ValueError(f"check name {name!r} is not letters, digits and . _ - (a site check module?)")

    def deco(func: CheckFunc) -> CheckFunc:
        existing = _REGISTRY.get(name)
        if existing is not None and getattr(existing.func, "__wrapped__", None) is not func:
            raise ValueError(f"check {name!r} registered twice")

        @functools.wraps(func)
        def run(ctx: CheckContext) -> CheckResult | list[CheckResult]:
            with running(chk):
                return _stamp(func(ctx), chk)

        chk = Check(
            name=name,
            level=level,
            description=description,
            func=run,
            module=func.__module__,
            needs=frozenset(needs),
            isolated=isolated or pristine or worker is not None,
            timeout_s=timeout_s,
            pristine=pristine or worker is not None,
            worker=worker,
            options=dict(options or {}),
            option_kinds=dict(option_kinds or {}),
            exclusive=exclusive,
            python_facts=python_facts,
            stack_verdict=stack_verdict,
            long_running=long_running,
        )
        if python_facts and chk.isolated:
            raise ValueError(f"check {name!r}: python_facts runs in-process, isolated in a child; pick one")
        _REGISTRY[name] = chk
        return run

    return deco


_CURRENT: ContextVar[Check | None] = ContextVar("rocmkit_doctor_check", default=None)


@contextlib.contextmanager
def running(chk: Check) -> Iterator[None]:
    """Make ``chk`` the :func:`current_check` for the code inside."""
    token = _CURRENT.set(chk)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_check() -> Check:
    """The check running now in this thread: shared helpers (the kernel harness) name
    their results and remedies after it without each check passing its name along."""
    chk = _CURRENT.get()
    if chk is None:
        raise RuntimeError("no doctor check is running (call the check through its @check function)")
    return chk


def _stamp(value: object, chk: Check) -> CheckResult | list[CheckResult]:
    """Fill in the name and level a result left out, from ``@check``."""

    def one(item: object) -> object:
        if isinstance(item, CheckResult) and (not item.name or item.level < 0):
            return replace(item, name=item.name or chk.name, level=chk.level if item.level < 0 else item.level)
        return item

    if isinstance(value, list):
        return [one(v) for v in value]  # type: ignore[misc]  # normalise reports non-results
    return one(value)  # type: ignore[return-value]  # normalise reports a non-result


def option_keys(checks: Iterable[Check]) -> dict[str, str]:
    """Every --set key the checks declare (globs included), with what it sets."""
    return {k: v for c in checks for k, v in c.options.items()}


def unknown_options(options: Iterable[str], checks: Iterable[Check]) -> list[str]:
    """The keys in ``options`` that no check declares: a misspelt key would otherwise
    leave its threshold at the default without a word."""
    import fnmatch

    known = option_keys(checks)
    return [k for k in options if not any(k == p or fnmatch.fnmatchcase(k, p) for p in known)]


def check_option_values(options: Mapping[str, object], checks: Iterable[Check]) -> None:
    """Refuse (:class:`UsageError`, exit 4) a ``--set`` value of the wrong kind for an option a
    check declares a kind for (``--set shm_min_bytes=abc``), before any check runs."""
    from rocmkit.errors import UsageError
    from rocmkit.kernels.options import Option

    for chk in checks:
        for key, kind in chk.option_kinds.items():
            if key not in options:
                continue
            option = Option(key=key, help=chk.options.get(key, key), kind=kind, gpu=None, interpreter=None)
            try:
                option.parse(options[key], "cpu")
            except UsageError as exc:
                raise UsageError(exc.message.replace("kernel option", "--set", 1), exc.fixes) from None


def check_modules(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """``CHECK_MODULES`` plus any named in ``ROCMKIT_DOCTOR_MODULES`` (comma-separated):
    site-specific checks, and the test suite's crashing and hanging checks."""
    env = os.environ if environ is None else environ
    extra = tuple(m.strip() for m in env.get("ROCMKIT_DOCTOR_MODULES", "").split(",") if m.strip())
    return CHECK_MODULES + tuple(m for m in extra if m not in CHECK_MODULES)


def load_checks(modules: tuple[str, ...] = CHECK_MODULES) -> dict[str, Check]:
    """Import the check modules and return the checks they register, by name, in
    module order then registration order. A module that does not exist is skipped;
    one that exists but fails to import raises."""
    for mod in modules:
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
    order = {m: i for i, m in enumerate(modules)}
    picked = [c for c in _REGISTRY.values() if c.module in order]
    picked.sort(key=lambda c: order[c.module])  # stable: registration order within a module
    return {c.name: c for c in picked}


def list_lines(checks: Mapping[str, Check]) -> list[str]:
    """`rocmkit doctor --list`: one line per check, by level, with the options it reads."""
    rows = sorted(checks.values(), key=lambda c: c.level)
    width = max((len(c.name) for c in rows), default=5)
    out = [f"{'LEVEL':5}  {'CHECK':{width}}  {'RUNS IN':7}  {'NEEDS':18}  DESCRIPTION"]
    for c in rows:
        where = "child" if c.isolated else "process"
        needs = ",".join(sorted(c.needs)) or "-"
        opts = f" [--set {', '.join(sorted(c.options))}]" if c.options else ""
        out.append(f"{c.level:<5}  {c.name:{width}}  {where:7}  {needs:18}  {c.description}{opts}")
    return out
