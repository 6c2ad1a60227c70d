"""What ``rocmkit install`` was asked to do: one frozen request, checked here (not in the CLI),
and :func:`carry_out`, which picks the target and the plan and runs the install, lock,
download or dry run it asks for.

Messages go to the ``say`` callback (the CLI's stderr); the outcome is returned (its data).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rocmkit.errors import DataError, UsageError

if TYPE_CHECKING:
    from rocmkit.install.flow import Options, Outcome
    from rocmkit.plan import Plan
    from rocmkit.pyenv import PyEnv

Say = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class InstallRequest:
    venv: Path | None = None
    venv_base: str | None = None  # the Python a missing --venv is made from
    interpreter: Path | None = None
    plan_file: Path | None = None
    capture: Path | None = None
    torch: str | None = None
    rocm: str | None = None
    channel: str = "stable"
    cpu: bool = False
    strict_data: bool = False  # resolve only confirmed builds
    index_base: str | None = None
    installer: str = "auto"
    with_packages: tuple[str, ...] = ()
    no_companions: bool = False
    dry_run: bool = False
    lock_file: Path | None = None
    from_lock: Path | None = None
    download_only: bool = False
    wheelhouse: Path | None = None
    no_guard: bool = False
    no_verify: bool = False
    break_system_packages: bool = False
    net_timeout: float = 15.0
    install_timeout: float = 3600.0
    probe_timeout: float = 5.0
    allow_env: tuple[str, ...] = ()
    allow_insecure_index: bool = False
    fallback_index: bool = False
    quiet: bool = False
    as_json: bool = False

    def __post_init__(self) -> None:
        if self.installer not in ("auto", "uv", "pip"):
            raise UsageError(f"--installer {self.installer!r} is not auto, uv or pip", "pick one")
        given = [
            n
            for n, v in (
                ("--plan", self.plan_file),
                ("--from-lock", self.from_lock),
                ("--wheelhouse", self.wheelhouse if not self.download_only else None),
            )
            if v
        ]
        if len(given) > 1:
            raise UsageError(f"{' and '.join(given)} both say what to install", "pass only one of them")
        if self.download_only and self.wheelhouse is None:
            raise UsageError("--download-only needs --wheelhouse DIR", "add --wheelhouse DIR")
        if self.lock_file and (self.from_lock or self.wheelhouse or self.download_only):
            raise UsageError(
                "--lock writes a lock from a plan; it does not combine with --from-lock/--wheelhouse"
            )
        resolving = self.torch or self.rocm or self.cpu or self.capture
        if self.installs_exact_list and resolving:
            raise UsageError("a lock or wheelhouse fixes the builds; --torch/--rocm/--cpu/--capture do not apply")
        for name, seconds in (
            ("--net-timeout", self.net_timeout),
            ("--timeout", self.install_timeout),
            ("--probe-timeout", self.probe_timeout),
        ):
            if not seconds > 0:
                raise UsageError(
                    f"{name} {seconds:g} is not a positive number of seconds", f"give {name} a value above 0"
                )
        if self.venv is not None and self.interpreter is not None:
            raise UsageError("--venv and --interpreter name two targets", "pass only one of them")
        if self.plan_file and resolving:
            # Silently installing the saved plan would ignore what the user asked for.
            raise UsageError(
                "a plan file fixes the builds; --torch/--rocm/--cpu/--capture do not apply",
                "drop them, or drop --plan to resolve afresh",
            )
        if self.no_companions and self.installs_exact_list:
            raise UsageError(
                "a lock or wheelhouse installs its exact list; --no-companions does not apply",
                "make the lock or wheelhouse with --no-companions instead",
            )
        if self.venv is not None:
            check_venv_path(self.venv)
        if self.venv_base is not None:
            check_base_python(self.venv_base)
        from rocmkit.install.companions import with_packages_of

        object.__setattr__(
            self, "with_packages", with_packages_of(self.with_packages, companions=not self.no_companions)
        )

    @property
    def installs_exact_list(self) -> bool:
        """A lock or a wheelhouse says exactly what to install (no resolving)."""
        return bool(self.from_lock or (self.wheelhouse and not self.download_only))

    @property
    def read_only(self) -> bool:
        """Locking and downloading change no environment."""
        return bool(self.lock_file or self.download_only)

    @property
    def allowed_env(self) -> frozenset[str]:
        return frozenset(self.allow_env)

    def options(self) -> Options:
        from rocmkit.install import flow
        from rocmkit.install.base import Limits

        return flow.Options(
            installer=cast("flow.InstallerChoice", self.installer),
            dry_run=self.dry_run,
            with_packages=self.with_packages,
            guard=not self.no_guard,
            verify=not self.no_verify,
            break_system_packages=self.break_system_packages,
            limits=Limits(net_timeout_s=self.net_timeout, install_timeout_s=self.install_timeout),
            probe_timeout_s=self.probe_timeout,
            show_output=not self.quiet,
            companions=not self.no_companions,
            fallback_index=self.fallback_index,
        )


# Kernel and device file systems: nothing can be made there, whatever the permissions say
# (root may "write" to /proc's folders as far as access(2) is concerned).
_VIRTUAL_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))


def check_venv_path(venv: Path) -> None:
    """``--venv`` can be a virtual environment: an existing folder, or a path whose nearest
    existing parent is a folder on a real file system (checked before a dry run says it
    "would create" it, and before a real run tries)."""
    path = venv.absolute()
    resolved = path.resolve()
    if any(resolved == root or resolved.is_relative_to(root) for root in _VIRTUAL_ROOTS):
        raise UsageError(
            f"--venv {venv} is under {next(r for r in _VIRTUAL_ROOTS if resolved.is_relative_to(r))}, "
            "a kernel file system: no environment can be made there",
            "pass a folder on a disk, e.g. --venv ~/venvs/torch",
        )
    if path.exists() and not path.is_dir():
        raise UsageError(f"--venv {venv} is a file, not a folder", "pass a folder (made if missing)")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise UsageError(f"--venv {venv}: {parent} is a file, not a folder", "pass a path under a folder")


def check_base_python(value: str) -> None:
    """``--python``: an interpreter's path, or a CPython 3 version uv can find (3.12, 3.12.4)."""
    import re

    if "/" in value:
        path = Path(value)
        if not path.is_file() or not os.access(path, os.X_OK):
            raise UsageError(f"--python {value}: no Python interpreter there", "pass an existing python, or a version like 3.12")
        return
    if not re.fullmatch(r"3\.[0-9]{1,3}(\.[0-9]{1,3})?", value):
        raise UsageError(
            f"--python {value!r} is neither a path nor a Python 3 version",
            "pass a version like 3.12, or the path of a python",
        )


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


def check_inputs(req: InstallRequest, say: Say) -> None:
    """What can fail before anything is created: the index base, and the plan, lock or wheelhouse."""
    from rocmkit.install.sources_policy import ALLOW_ENV, check_source_urls

    if req.allow_insecure_index:
        # Read where the URLs are used (flow.checked_sources), as the environment variable is.
        os.environ[ALLOW_ENV] = "1"
    if req.index_base:
        from rocmkit.util.redact import check_url, conceal

        check_source_urls([check_url("--index-base", req.index_base)], say)
        conceal(req.index_base)  # its credentials, for the lock or wheelhouse URLs that mask them
    if req.plan_file is not None:
        load_plan_file(req.plan_file, req.index_base, req.allowed_env)
    if req.from_lock is not None:
        from rocmkit.install import lock as lockmod

        lockmod.parse(req.from_lock, allow_env=req.allowed_env)
    elif req.wheelhouse is not None and not req.download_only:
        from rocmkit.install import wheelhouse as whmod

        whmod.open_wheelhouse(req.wheelhouse)


def carry_out(req: InstallRequest, say: Say) -> Outcome:
    """Check the inputs, pick the target (making a missing venv), run; a venv this run made is
    removed again when anything fails."""
    from rocmkit.install.venv import select_target
    from rocmkit.pyenv import probe, venv_interpreter

    check_inputs(req, say)
    created = False
    would_create: Path | None = None
    no_target = req.venv is None and req.interpreter is None and not os.environ.get("VIRTUAL_ENV")
    if req.read_only and no_target:
        # Locking and downloading change nothing: rocmkit's own Python gives the tags.
        target = probe(Path(sys.executable))
    elif req.dry_run and req.venv is not None and not venv_interpreter(req.venv.absolute()).exists():
        # Nothing to dry-run against: plan for the Python the venv would be made from.
        from rocmkit.install.venv import base_interpreter

        target = probe(base_interpreter(req.venv_base))
        would_create = req.venv.absolute()
    else:
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
    try:
        return _run(req, target, would_create, say)
    except BaseException:
        if created:
            # It did not exist before this run: "exactly as before" means gone.
            import shutil

            shutil.rmtree(target.prefix, ignore_errors=True)
            say(f"rocmkit: removed the virtual environment {target.prefix} made by this run")
        raise


def _plan(req: InstallRequest, target: PyEnv, say: Say) -> tuple[Plan, Options, object]:
    """The plan to carry out, the options (a lock without a plan turns guard and checks off), and
    the locked install spec when a lock or wheelhouse says exactly what to install."""
    from rocmkit.install import flow
    from rocmkit.plan import Plan

    opts = req.options()
    if req.installs_exact_list:
        import tempfile

        from rocmkit.install import lock as lockmod
        from rocmkit.install import wheelhouse as whmod

        parsed = (
            whmod.open_wheelhouse(req.wheelhouse)
            if req.wheelhouse
            else lockmod.parse(cast(Path, req.from_lock), allow_env=req.allowed_env)
        )
        plan = parsed.plan
        if plan is None:
            plan = Plan(backend="unknown", requirements=tuple(f"{e.name}=={e.version}" for e in parsed.entries))
            opts = dataclasses.replace(opts, verify=False, guard=False)
            say("rocmkit: the lock carries no rocmkit plan; installing it without guard or verification")
        spec = flow.locked_spec(parsed, Path(tempfile.mkdtemp(prefix="rocmkit-lock-")), req.with_packages)
        return plan, opts, spec
    if req.plan_file:
        return _held(load_plan_file(req.plan_file, req.index_base, req.allowed_env), say), opts, None
    from rocmkit.detect import load_machine
    from rocmkit.resolve import Constraints, resolve

    constraints = Constraints(
        torch=req.torch,
        rocm=req.rocm,
        python=target.short_version,
        channel=req.channel,
        cpu=req.cpu,
        index_base=req.index_base,
        strict_data=req.strict_data,
    )
    machine = load_machine(req.capture)
    plan = resolve(machine, constraints)
    from rocmkit.resolve.live import check_plan, offline_requested, seen_lines

    if offline_requested():
        return _held(plan, say), opts, None
    from rocmkit.install.indexcheck import PYPI_SIMPLE, read_pip_config
    from rocmkit.matrix import load_matrix

    # Where pip will look when the planned index does not answer: the user's own sources, only
    # with --fallback-index (without it, a dead index stops the install at the index check).
    fallbacks: list[tuple[str, bool]] = []
    if req.fallback_index:
        user = read_pip_config()
        fallbacks = [(link, False) for link in user.find_links]
        indexes = dict.fromkeys((user.index_url or PYPI_SIMPLE, *user.extra_index_urls))
        fallbacks += [(url, True) for url in indexes]
    checked = check_plan(plan, machine, constraints, load_matrix(), fallbacks=fallbacks)
    for seen in seen_lines(checked):
        say(f"rocmkit: {seen}")
    return _held(checked, say), opts, None


def _held(plan: Plan, say: Say) -> Plan:
    """A planned build known only from build lists, which its index answers without: its fallback."""
    from rocmkit.install.fallback import hold_to_index

    held, message = hold_to_index(plan)
    if message:
        say(f"rocmkit: {message}")
    return held


def _run(req: InstallRequest, target: PyEnv, would_create: Path | None, say: Say) -> Outcome:
    from rocmkit.install import flow
    from rocmkit.util.redact import redact_text

    plan, opts, spec = _plan(req, target, say)
    if req.with_packages:
        from rocmkit.install.companions import check_against_plan

        check_against_plan(req.with_packages, plan)
    urls = f" from {redact_text(', '.join(plan.index_urls))}" if plan.index_urls else ""
    say(f"rocmkit: plan {plan.backend}: {' '.join(plan.requirements)}{urls}")
    for warning in plan.warnings:
        say(f"rocmkit: warning: {warning}")
    if would_create is not None:
        return _dry_run_new_venv(req, plan, opts, would_create, say)
    if req.lock_file:
        return flow.write_lock(plan, target, req.lock_file, opts, say)
    if req.download_only:
        assert req.wheelhouse is not None  # checked by the request
        return flow.download_wheelhouse(plan, target, req.wheelhouse, opts, say)
    outcome = flow.install(plan, target, opts, say, spec=spec)  # type: ignore[arg-type]
    if outcome.action == "installed":
        env = " ".join(f"{k}={v}" for k, v in plan.env.items())
        say(f"rocmkit: installed into {outcome.target} with {outcome.installer}: {outcome.changes}")
        if env:
            say(f"rocmkit: set {env} when running (the plan says why: `rocmkit resolve`)")
        # Said again at the end: the first warning scrolled away under pip's output.
        for req_line in outcome.left_out:
            add = flow.add_later_command(req_line, plan, target, outcome.installer)
            say(f"rocmkit: WARNING: {req_line} was not installed; add it later with: {add}")
    return outcome


def _dry_run_new_venv(req: InstallRequest, plan: Plan, opts: Options, venv: Path, say: Say) -> Outcome:
    from rocmkit.install import flow
    from rocmkit.install.venv import find_uv

    shown = plan if opts.companions else dataclasses.replace(plan, requirements=plan.required)
    say(f"rocmkit: dry run: would create the virtual environment {venv}, then run:")
    say(f"rocmkit:   {shown.uv_command() if find_uv() else shown.pip_command()}")
    if req.with_packages:
        # The real install adds them to the same run, under the guard.
        say(f"rocmkit: together with --with: {' '.join(req.with_packages)}")
    return flow.Outcome(
        action="dry-run",
        target=str(venv),
        installer="uv" if find_uv() else "pip",
        plan=plan,
        sources=flow.plan_sources(plan),
        left_out=tuple(r for r in plan.requirements if r not in shown.requirements),
    )
