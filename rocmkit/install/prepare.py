"""Everything an install reads before it changes anything, read once: :func:`prepare`.

The plan file, lock or wheelhouse is loaded one time (it used to be loaded once to check it
and again to use it), before a missing venv is made, so a bad input fails with nothing
created; then the target is picked (made if missing) and the plan made for its Python through
the command's :class:`~rocmkit.session.Session` (the one reader of ``--index-base`` and the
environment). Options travel in the :class:`~rocmkit.install.flow.Options` record, never
through ``os.environ``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.errors import DataError
from rocmkit.util.say import Say

if TYPE_CHECKING:
    from rocmkit.install.base import InstallSpec
    from rocmkit.install.flow import Options
    from rocmkit.install.lock import LockFile
    from rocmkit.install.request import InstallRequest
    from rocmkit.machine import Machine
    from rocmkit.plan import Plan
    from rocmkit.pyenv import PyEnv
    from rocmkit.session import Session


@dataclass(frozen=True, kw_only=True)
class Prepared:
    """An install ready to run: what to install, from where, into what, how."""

    plan: Plan
    spec: InstallSpec | None  # the exact locked install, for a lock or wheelhouse; else the plan's
    target: PyEnv
    options: Options
    created: bool = False  # this run made the venv: a failure removes it again
    would_create: Path | None = None  # a dry run for a venv that does not exist yet

    def discard(self, say: Say) -> None:
        """Undo what preparing made (the venv this run created)."""
        _discard(self.target, self.created, say)


def _discard(target: PyEnv, created: bool, say: Say) -> None:
    # It did not exist before this run: "exactly as before" means gone.
    if created:
        import shutil

        shutil.rmtree(target.prefix, ignore_errors=True)
        say(f"rocmkit: removed the virtual environment {target.prefix} made by this run")


@dataclass(frozen=True)
class _Inputs:
    """The plan file, lock or wheelhouse, as read (at most one of them is given)."""

    plan: Plan | None = None
    locked: LockFile | None = None


def session_for(req: InstallRequest) -> Session:
    """The session an install request plans through (its capture and index base)."""
    from rocmkit.session import Session

    return Session(capture=req.capture, index_base=req.index_base, allow_redirect=req.allow_redirect)


def load_plan_file(path: Path, index_base: str | None, allow_env: frozenset[str] = frozenset()) -> Plan:
    """A saved plan (``rocmkit resolve --json``), its PyTorch indexes moved to ``index_base``."""
    from rocmkit.matrix import load_matrix
    from rocmkit.plan import Plan
    from rocmkit.util.safeload import load_json_file

    try:
        data = load_json_file(path, f"plan {path}", max_bytes=4 * 1024 * 1024)
    except DataError as exc:
        raise DataError(exc.message, "pass the output of `rocmkit resolve --json`") from exc
    plan = Plan.from_dict(data, allow_env=allow_env)
    from rocmkit.util.redact import conceal

    # A hand-written plan may carry a mirror's token: kept in memory, masked everywhere else.
    urls = tuple(conceal(u) for u in plan.index_urls)
    if index_base:
        m = load_matrix()
        urls = tuple(m.rebase(u, conceal(index_base)) for u in urls)
    return plan if urls == plan.index_urls else dataclasses.replace(plan, index_urls=urls)


def _read_inputs(req: InstallRequest, session: Session, options: Options, say: Say) -> _Inputs:
    """What can fail before anything is created: the index base, and the plan, lock or wheelhouse."""
    from rocmkit.install.sources_policy import check_source_urls

    if session.index_base:
        check_source_urls([session.index_base], say, allow=options.allow_insecure_index)
    if req.plan_file is not None:
        return _Inputs(plan=load_plan_file(req.plan_file, session.index_base, req.allowed_env))
    if req.from_lock is not None:
        from rocmkit.install import lock as lockmod

        return _Inputs(locked=lockmod.parse(req.from_lock, allow_env=req.allowed_env))
    if req.wheelhouse is not None and not req.download_only:
        from rocmkit.install import wheelhouse as whmod

        return _Inputs(locked=whmod.open_wheelhouse(req.wheelhouse))
    return _Inputs()


def _target(req: InstallRequest, say: Say) -> tuple[PyEnv, bool, Path | None]:
    """The Python to install into, whether this run made it, and the venv a dry run would make."""
    from rocmkit.install.venv import select_target
    from rocmkit.pyenv import probe, venv_interpreter

    no_target = req.venv is None and req.interpreter is None and not os.environ.get("VIRTUAL_ENV")
    if req.read_only and no_target:
        # Locking and downloading change nothing: rocmkit's own Python gives the tags.
        return probe(Path(sys.executable)), False, None
    if req.dry_run and req.venv is not None and not venv_interpreter(req.venv.absolute()).exists():
        # Nothing to dry-run against: plan for the Python the venv would be made from.
        from rocmkit.install.venv import base_interpreter

        return probe(base_interpreter(req.venv_base)), False, req.venv.absolute()
    target, created = select_target(
        venv=req.venv,
        python=req.interpreter,
        environ=os.environ,
        break_system_packages=req.break_system_packages or req.read_only,
        create=not (req.dry_run or req.read_only),
        base_python=req.venv_base,
    )
    if created:
        say(f"rocmkit: created the virtual environment {target.prefix} (Python {target.version})")
    return target, created, None


def prepare(req: InstallRequest, session: Session, say: Say) -> Prepared:
    """Read the inputs (once), pick the target (making a missing venv), and make the plan:
    from the plan file, lock or wheelhouse, or resolved for the target's Python through
    ``session`` (held to what the index serves, or to the user's own pip sources when it
    does not answer, unless offline). A failure after the venv was made removes it."""
    options = req.options(session.environ)
    inputs = _read_inputs(req, session, options, say)
    target, created, would_create = _target(req, say)
    try:
        plan, options, spec = _plan(req, inputs, session, target, options, say)
        if req.with_packages and inputs.locked is None:
            plan = _with_resolved(plan, req, session.machine() if inputs.plan is None else _this_host())
    except BaseException:
        _discard(target, created, say)
        raise
    return Prepared(
        plan=plan, spec=spec, target=target, options=options, created=created, would_create=would_create
    )


def _with_resolved(plan: Plan, req: InstallRequest, machine: Machine) -> Plan:
    """The --with packages resolved into the plan: the build of each that fits (or exit 6)."""
    from rocmkit.companions.data import load_companions
    from rocmkit.companions.resolve import resolve_with
    from rocmkit.install.indexcheck import PYPI_SIMPLE, read_pip_config

    pypi = read_pip_config().index_url or PYPI_SIMPLE
    return resolve_with(plan, machine, req.with_packages, load_companions(), pypi=pypi, build=req.build)


def _this_host() -> Machine:
    """The build host's cores and memory (MAX_JOBS of a source build) without detecting GPUs:
    a saved plan already names them."""
    from rocmkit.machine import Host, Machine

    try:
        memory: int | None = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        memory = None
    return Machine(host=Host(cpu_cores=os.cpu_count(), memory_bytes=memory))


def _plan(
    req: InstallRequest, inputs: _Inputs, session: Session, target: PyEnv, options: Options, say: Say
) -> tuple[Plan, Options, InstallSpec | None]:
    """The plan to carry out, the options (a lock without a plan turns guard and checks off), and
    the locked install spec when a lock or wheelhouse says exactly what to install."""
    from rocmkit.install import flow
    from rocmkit.plan import Backend, Plan

    if inputs.locked is not None:
        import tempfile

        plan = inputs.locked.plan
        if plan is None:
            plan = Plan(
                backend=Backend(kind=None, source="lock"), requirements=tuple(f"{e.name}=={e.version}" for e in inputs.locked.entries)
            )
            options = dataclasses.replace(options, verify=False, guard=False)
            say("rocmkit: the lock carries no rocmkit plan; installing it without guard or verification")
        spec = flow.locked_spec(inputs.locked, Path(tempfile.mkdtemp(prefix="rocmkit-lock-")), req.with_packages)
        return plan, options, spec
    if inputs.plan is not None:
        return _held(inputs.plan, say), options, None
    from rocmkit.resolve.constraints import Constraints

    constraints = Constraints(
        torch=req.torch,
        rocm=req.rocm,
        cuda=req.cuda,
        python=target.short_version,
        channel=req.channel,
        cpu=req.cpu,
        strict_data=req.strict_data,
        framework=req.framework,
        jax=req.jax_version,
    )
    from rocmkit.install.decision import decide
    from rocmkit.resolve.live import seen_lines

    # Where pip will look when the planned index does not answer: the user's own sources, only
    # with --fallback-index (without it, a dead index stops the install at the index check).
    plan = decide(
        session,
        constraints,
        target.prefix if target.is_venv else None,
        with_packages=bool(req.with_packages),
        upgrade=req.upgrade,
        fallback_index=req.fallback_index,
        hold=lambda plan: _held(plan, say),
        say=lambda text: say(f"rocmkit: {text}"),
        wanted=req.with_packages,
        build=req.build,
    )
    for seen in seen_lines(plan):
        say(f"rocmkit: {seen}")
    return plan, options, None


def _held(plan: Plan, say: Say) -> Plan:
    """A planned build known only from build lists, which its index answers without: its fallback."""
    from rocmkit.install.fallback import hold_to_index

    held, message = hold_to_index(plan)
    if message:
        say(f"rocmkit: {message}")
    return held
