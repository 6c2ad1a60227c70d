"""The steps of ``rocmkit install``, in order, for every mode (plan, lock, wheelhouse).

Mode by mode:

- install (plan / ``--from-lock`` / ``--wheelhouse``): check the indexes,
  record the state, write the guard, dry-run, back up what will be replaced,
  install, verify; on any failure restore and say so;
- ``--lock FILE``: resolve the closure with hashes and write it (no change);
- ``--download-only --wheelhouse DIR``: download the closure (no change);
- ``--dry-run``: say what would be done (no change).
"""

from __future__ import annotations

import dataclasses
import json
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocmkit.errors import NetworkError, RocmkitError, ToolError, UsageError, rerun, storage_error
from rocmkit.install import guard, journal, lock, wheelhouse, wsl_runtime
from rocmkit.install.base import Changes, Installer, InstallSpec, Limits, LineSink, Sources
from rocmkit.install.conflict import guard_conflict, unresolvable
from rocmkit.install.indexcheck import DEFAULT_PROBE_TIMEOUT_S, decide_sources
from rocmkit.install.installers import InstallerChoice, choose_installer
from rocmkit.install.pip import PipInstaller, pip_available
from rocmkit.install.recover import recover_pending
from rocmkit.install.recover import signals_deferred as _signals_deferred
from rocmkit.install.sourcebuild import build_against_torch
from rocmkit.install.sources_policy import check_source_urls, is_url
from rocmkit.install.state import diff
from rocmkit.install.transaction import Transaction
from rocmkit.install.venv import find_uv
from rocmkit.install.verify import verify
from rocmkit.packages import canonical, parse_pin, requirement_name
from rocmkit.plan import Plan, WithPackage
from rocmkit.proc.runner import CommandResult, on_child_started
from rocmkit.pyenv import PyEnv
from rocmkit.util.atomicio import write_text_atomic
from rocmkit.util.say import Say


@dataclass(frozen=True, kw_only=True)
class Options:
    installer: InstallerChoice = "auto"
    dry_run: bool = False
    with_packages: tuple[str, ...] = ()
    guard: bool = True
    verify: bool = True
    # The check's own imports write the byte code of what they load (as pip compiles at install,
    # whatever PYTHONDONTWRITEBYTECODE says): the first `import torch` compiles about 700
    # modules (2-3 s), and every later import then reads them. False: --no-compile.
    compile_bytecode: bool = True
    break_system_packages: bool = False
    limits: Limits = field(default_factory=Limits)
    probe_timeout_s: float = DEFAULT_PROBE_TIMEOUT_S
    # --fallback-index: a dead planned index may be replaced by the user's own pip sources
    # (the exact build only, said with a WARNING); without it a dead index stops the install.
    fallback_index: bool = False
    show_output: bool = True
    companions: bool = True  # False: --no-companions (torch and Triton only)
    # Plain-http and file:// indexes allowed (warned about): --allow-insecure-index, or
    # ROCMKIT_ALLOW_INSECURE_INDEX=1 as the request read it.
    allow_insecure_index: bool = False


@dataclass(frozen=True, kw_only=True)
class Outcome:
    action: str  # "installed" | "locked" | "downloaded" | "dry-run"
    target: str | None
    installer: str
    plan: Plan | None
    sources: Sources
    messages: tuple[str, ...] = ()
    changes: str = ""
    verification: dict[str, Any] | None = None
    path: str | None = None  # lock file or wheelhouse written
    left_out: tuple[str, ...] = ()  # companions not installed (--no-companions, or no source has them)

    def to_dict(self) -> dict[str, Any]:
        # A report for logs and CI: a mirror's user:token never goes into it.
        from rocmkit.util.redact import redact_text

        return {
            "schema": "rocmkit.install/1",
            "action": self.action,
            "target": self.target,
            "installer": self.installer,
            "backend": str(self.plan.backend) if self.plan else None,
            "requirements": list(self.plan.requirements) if self.plan else [],
            "index_urls": [redact_text(u) for u in self.sources.index_urls],
            "find_links": [redact_text(u) for u in self.sources.find_links],
            "offline": self.sources.offline,
            "messages": [redact_text(m) for m in self.messages],
            "changes": self.changes,
            "verification": self.verification,
            "path": self.path,
            "left_out": list(self.left_out),
        }


def _progress(echo: Say, show: bool) -> LineSink:
    if not show:
        return None
    from rocmkit.util.ticker import current_task

    downloads: dict[str, str] = {}  # name -> its "Downloading torch (182.9MiB)" line, until done
    step: list[str | None] = []  # the step's own phase, as rocmkit named it

    def on_line(line: str) -> None:
        said = line.strip()
        if not said:
            return
        echo(f"  | {line}")
        # On a terminal the status line names what the step waits on: the download still under
        # way (uv says "Downloaded sympy" while torch goes on), else rocmkit's own step. Never
        # the installer's last line: pip's "Successfully uninstalled setuptools" stood there for
        # a minute of unpacking torch, saying something long over.
        word, _, rest = said.partition(" ")
        name = rest.split(" ", 1)[0]
        if word == "Downloading":
            downloads[name] = said
        elif word == "Downloaded":
            downloads.pop(name, None)
        else:
            downloads.clear()
        task = current_task()
        if task is not None:
            if not step:
                step.append(task.phase_text)
            task.set_phase(next(reversed(downloads.values()), step[0]))

    return on_line


HEARTBEAT_S = 30.0


@contextmanager
def _heartbeat(echo: Say, label: str, every: float = HEARTBEAT_S, phase: str | None = None) -> Iterator[None]:
    """While a long step runs: on a terminal the status line (util/ticker.py), redrawn as it
    goes with the step's last output line and the bytes its process has written (uv unpacking
    wheels into its cache, pip saving them); elsewhere a line every ``every`` seconds, since pip
    and uv print nothing between "Downloading torch (4.1 GiB)" and its end."""
    from rocmkit.util.ticker import size_text, waiting, written_bytes

    pids: list[int] = []  # the step's processes, as the runner starts them

    def wrote() -> str | None:
        count = written_bytes(pids) or 0
        return f"{size_text(count)} written" if count >= 10**6 else None

    with on_child_started(pids.append), waiting(label, echo, every=every, phase=phase, detail=wrote):
        yield


# One install per environment at a time (kept under its old name for callers and tests).
_exclusive = journal.exclusive


def _workdir() -> Path:
    # mkdtemp: a fresh folder of mode 0700 in rocmkit's checked, private install folder.
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    return Path(tempfile.mkdtemp(prefix=stamp + "-", dir=journal.install_folder()))


def plan_sources(plan: Plan) -> Sources:
    return Sources(index_urls=plan.index_urls)


def checked_sources(
    sources: Sources,
    requirements: tuple[str, ...],
    target: PyEnv,
    opts: Options,
    echo: Say,
    notes: list[str],
    companions: tuple[str, ...] = (),
) -> tuple[Sources, tuple[str, ...]]:
    """Probe the indexes (short timeout); substitute the user's own sources where needed, saying so.

    Returns the sources and the companions (of ``companions``) that no reachable source holds."""
    check_source_urls(
        (*sources.index_urls, *(u for u in sources.find_links if is_url(u))),
        lambda m: echo(f"rocmkit: {m}"),
        allow=opts.allow_insecure_index,
    )
    decision = decide_sources(
        sources,
        requirements,
        python=target.short_version,
        timeout=opts.probe_timeout_s,
        companions=companions,
        fallback=opts.fallback_index,
    )
    from rocmkit.util.redact import redact_text

    for message in decision.messages:
        echo(f"rocmkit: {redact_text(message)}")
        notes.append(message)
    return decision.sources, decision.left_out


def add_later_command(requirement: str, plan: Plan, target: PyEnv, installer: str) -> str:
    """The command that adds a left-out companion once the plan's index answers. In a guarded
    venv it runs under the guard (pip reads the venv's pip.conf; uv is given the constraints)."""
    import shlex

    index = ["--index-url", plan.index_urls[0]] if plan.index_urls else []
    if installer == "pip":
        # A venv made by rocmkit has no pip of its own: rocmkit's pip drives it then.
        head = [str(target.executable), "-m", "pip"]
        if not target.has_pip:
            head = [sys.executable, "-m", "pip", "--python", str(target.executable)]
        return shlex.join([*head, "install", requirement, *index])
    argv = [find_uv() or "uv", "pip", "install", "--python", str(target.executable), requirement, *index]
    if target.is_venv and guard.pins_for(plan):
        argv += ["--constraint", str(guard.guard_files(target.prefix).constraints)]
    return shlex.join(argv)


def planned_requirements(
    plan: Plan,
    target: PyEnv,
    opts: Options,
    echo: Say,
    notes: list[str],
    installer: str,
    *,
    into: str = "",
) -> tuple[Sources, tuple[str, ...], tuple[str, ...]]:
    """The sources, the requirements to install, and the companions left out (said loudly).

    ``into`` names the lock or wheelhouse being written (then nothing is installed here)."""
    wanted = plan.requirements if opts.companions else plan.required
    dropped = tuple(r for r in plan.requirements if r not in wanted)
    if not opts.companions:
        if dropped:
            echo(f"rocmkit: --skip companions: leaving out {', '.join(dropped)}")
        else:
            echo("rocmkit: --skip companions: the plan marks no companions (made by an older rocmkit?)")
    kept = _kept_sources(plan, wanted, target, opts, echo, notes)
    if kept is not None:
        sources, missing = kept
    else:
        sources, missing = checked_sources(
            plan_sources(plan), wanted, target, opts, echo, notes, companions=plan.companions
        )
    for req in missing:
        why = f"{req} is left out: the planned index did not answer and no fallback source holds it; "
        if into:
            why = f"WARNING: {why}{into} will lack it (make it again once {', '.join(plan.index_urls)} answers)"
            echo(f"rocmkit: {why}")
        else:
            # The warning, with the command that adds it later, is the install's last word (said
            # once: the same warning before and after pip's output read as two problems).
            echo(f"rocmkit: {why}installing the required packages without it (the end says how to add it)")
            why = f"WARNING: {why}installing the required packages without it. Add it later with: " + add_later_command(
                req, plan, target, installer
            )
        notes.append(why)
    keep = tuple(r for r in wanted if r not in missing)
    from rocmkit.install.companions import refuse_unserved_needs

    # Before anything changes: a --with package that needs a companion left out here would pull
    # a build of it for another torch from whatever source has one.
    refuse_unserved_needs(plan, with_requirements(plan, opts), keep, sources, target, missing)
    return sources, keep, (*dropped, *missing)


def _installed(target: PyEnv) -> dict[str, str]:
    """{project: version} of what the environment holds now (its site folders' metadata)."""
    from importlib import metadata

    out: dict[str, str] = {}
    for dist in metadata.distributions(path=[str(p) for p in target.site_dirs]):
        name = dist.metadata["Name"]
        if name:
            out.setdefault(canonical(name), dist.version)
    return out


def _kept_sources(
    plan: Plan, wanted: tuple[str, ...], target: PyEnv, opts: Options, echo: Say, notes: list[str]
) -> tuple[Sources, tuple[str, ...]] | None:
    """A venv that already holds every required pin of the plan (the torch rocmkit installed,
    kept) needs nothing from torch's index: when that index does not answer, the plan's other
    indexes serve what is added (the guard keeps torch), and a companion built for this torch
    that the venv lacks is left out, said. None: the ordinary index check applies."""
    from packaging.version import InvalidVersion, Version

    from rocmkit.install.indexcheck import probe_index

    if not target.is_venv or len(plan.index_urls) < 2 or not plan.required:
        return None
    have = _installed(target)

    def holds(req: str) -> bool:
        pin = parse_pin(req)
        if pin is None:
            return requirement_name(req) in have
        try:
            return pin.project in have and Version(have[pin.project]) == Version(pin.version)
        except InvalidVersion:
            return False

    if not all(holds(r) for r in plan.required):
        return None
    index, rest = plan.index_urls[0], plan.index_urls[1:]
    probe = probe_index(index, "torch", opts.probe_timeout_s)
    if probe.ok:
        return None
    check_source_urls(rest, lambda m: echo(f"rocmkit: {m}"), allow=opts.allow_insecure_index)
    local = f"+{plan.backend}"
    left = tuple(r for r in wanted if not holds(r) and local in r)
    said = (
        f"WARNING: {probe.describe()}; {target.prefix} holds {', '.join(r for r in wanted if holds(r))} already "
        f"(kept), so what is added comes from {', '.join(rest)}"
        + (f"; {', '.join(left)} (built for this torch, only on that index) is left out" if left else "")
    )
    echo(f"rocmkit: {said}")
    notes.append(said)
    return Sources(index_urls=rest), left


def with_requirements(plan: Plan, opts: Options) -> tuple[str, ...]:
    """The ``--with`` packages installed in the main run: those the plan resolved (source
    builds come after, against the installed torch), or the bare names of an older plan."""
    if plan.with_packages:
        return tuple(p.requirement for p in plan.with_packages if p.how != "source")
    return opts.with_packages


def source_builds(plan: Plan) -> tuple[WithPackage, ...]:
    return tuple(p for p in plan.with_packages if p.how == "source")


def check_fits(plan: Plan, target: PyEnv) -> None:
    """A plan resolved for another Python would fail deep inside pip; say so first."""
    if plan.python and plan.python != target.short_version:
        raise UsageError(
            f"the plan is for Python {plan.python}, but {target.executable} is Python {target.short_version}",
            (f"rocmkit resolve --python {target.short_version} --json --output plan.json   # a plan for this Python",
             rerun("--python", plan.python) + "   # a venv of the plan's Python"),
        )


def _say_not_locked(plan: Plan, into: str, echo: Say, notes: list[str]) -> None:
    for package in source_builds(plan):
        why = f"{package.requirement} is built from source against the installed torch: {into} does not hold it"
        echo(f"rocmkit: {why}")
        notes.append(why)


def write_lock(plan: Plan, target: PyEnv, path: Path, opts: Options, echo: Say) -> Outcome:
    check_fits(plan, target)
    if target.is_venv:
        # pip reads it, the guard rewrites it: one that is not an INI file is one line now.
        guard.read_pip_conf(guard.guard_files(target.prefix).pip_conf)
    installer = choose_installer(opts.installer, target, opts.limits)
    notes: list[str] = []
    sources, reqs, left_out = planned_requirements(
        plan, target, opts, echo, notes, installer.name, into=f"the lock {path}"
    )
    _say_not_locked(plan, f"the lock {path}", echo, notes)
    spec = InstallSpec(requirements=(*reqs, *with_requirements(plan, opts)), sources=sources)
    entries, result = installer.lock(spec)
    if not result.ok or not entries:
        raise ToolError(f"could not resolve the lock: {result.describe()}")
    write_text_atomic(path, lock.render(entries, sources, plan))
    echo(f"rocmkit: wrote {path} ({len(entries)} packages, with hashes)")
    echo(f"rocmkit: next: rocmkit install --from-lock {path} --venv V   # here or on any node like this one")
    return Outcome(
        messages=tuple(notes),
        action="locked",
        target=str(target.executable),
        installer=installer.name,
        plan=plan,
        sources=sources,
        path=str(path),
        left_out=left_out,
    )


def download_wheelhouse(plan: Plan, target: PyEnv, folder: Path, opts: Options, echo: Say) -> Outcome:
    if not pip_available(target):
        raise ToolError(
            "--download-only needs pip (uv has no download command)", "`pip install pip` next to rocmkit"
        )
    check_fits(plan, target)
    pip = PipInstaller(target, limits=opts.limits)
    notes: list[str] = []
    try:
        sources, reqs, left_out = planned_requirements(
            plan, target, opts, echo, notes, pip.name, into=f"the wheelhouse {folder}"
        )
    except NetworkError as exc:
        # Its fixes, less "download on a connected node": that is what failed here.
        raise NetworkError(exc.message, tuple(f for f in exc.fixes if not f.startswith("rocmkit wheelhouse "))) from None
    _say_not_locked(plan, f"the wheelhouse {folder}", echo, notes)
    tags = wheelhouse.platform_tags(plan, platform.machine())
    spec = InstallSpec(requirements=(*reqs, *with_requirements(plan, opts)), sources=sources, platforms=tags)
    echo(
        f"rocmkit: downloading {', '.join(spec.requirements)} for Python {target.short_version}"
        + (f" on {plan.platform}" if tags else "")
        + f" into {folder}"
    )
    with _heartbeat(echo, "pip download"):
        lock_path = wheelhouse.download(pip, spec, plan, folder, on_line=_progress(echo, opts.show_output))
    echo(f"rocmkit: wheelhouse ready: {folder}")
    echo(f"rocmkit: next: rocmkit install --wheelhouse {folder} --venv V   # offline, on each node")
    return Outcome(
        messages=tuple(notes),
        action="downloaded",
        target=str(target.executable),
        installer="pip",
        plan=plan,
        sources=sources,
        path=str(lock_path),
        left_out=left_out,
    )


def _failed(step: str, result: CommandResult, spec: InstallSpec | None = None) -> ToolError:
    text = result.stdout + "\n" + result.stderr
    if spec is not None and spec.constraints:
        conflict = guard_conflict(step, text, spec.requirements, spec.constraints)
        if conflict is not None:
            return conflict
    if result.status == "timeout":
        return ToolError(f"{step} did not finish within {result.timeout_s:g} s and was stopped")
    if result.status == "failed":
        own = unresolvable(step, text)
        if own is not None:
            return own
    for needle in ("DO NOT MATCH THE HASHES", "Hash mismatch", "hash mismatch"):
        if needle in text:
            return ToolError(
                f"{step} refused a file whose sha256 does not match the lock",
                "the index serves a different file than the one locked; re-lock only if you trust it",
            )
    return ToolError(f"{step} failed: {result.describe()}")


def install(
    plan: Plan,
    target: PyEnv,
    opts: Options,
    echo: Say,
    *,
    spec: InstallSpec | None = None,
) -> Outcome:
    """Install ``spec`` (default: the plan's requirements from its indexes) transactionally."""
    check_fits(plan, target)
    wsl_runtime.check_ready(plan)  # WSL2: the runtime torch will use must be there first
    if target.is_venv:
        # pip reads it, the guard rewrites it: one that is not an INI file is one line now.
        guard.read_pip_conf(guard.guard_files(target.prefix).pip_conf)
    installer = choose_installer(opts.installer, target, opts.limits)
    notes: list[str] = []
    left_out: tuple[str, ...] = ()
    if spec is None:
        sources, reqs, left_out = planned_requirements(plan, target, opts, echo, notes, installer.name)
        spec = InstallSpec(requirements=(*reqs, *with_requirements(plan, opts)), sources=sources)
    elif not spec.sources.offline:
        # A lock installs its exact list (--require-hashes --no-deps): nothing may be left out.
        pins = tuple(spec.requirements) or tuple(plan.requirements)
        spec = _with_sources(spec, checked_sources(spec.sources, pins, target, opts, echo, notes)[0])
    # The guard pins what this install really puts in: not a companion no reachable source had
    # (that pin would make every later install pulling it unresolvable). Companions dropped on
    # purpose (--no-companions) stay pinned: the plan's index serves them, and a later install
    # must take that build.
    guarded_plan = guard.installed_view(plan, left_out if opts.companions else ())
    if spec.requirement_files:
        # A lock or wheelhouse installs its own list: pin what it holds, not the plan's companions
        # it lacks (a wheelhouse made with --no-companions, or whose source lacked them).
        guarded_plan = guarded_plan.without(_not_locked(guarded_plan, spec))
    guarded = opts.guard and target.is_venv and bool(guard.pins_for(guarded_plan))
    files = guard.guard_files(target.prefix)
    # --no-guard on a venv guarded before: the old pins go (restorable like any change).
    unguard = not guarded and target.is_venv and files.constraints.exists()
    spec = _with_break(spec, opts.break_system_packages)
    if opts.dry_run:
        if journal.present(journal.journal_path(target)):
            echo(
                f"rocmkit: {target.prefix} holds the journal of an interrupted install; the next "
                "install (or doctor) restores it first, and the dry run below does not see that"
            )
        if guarded:
            dry_pins = Path(tempfile.mkdtemp(prefix="rocmkit-dry-")) / guard.CONSTRAINTS_NAME
            write_text_atomic(dry_pins, guard.constraints_text(guarded_plan))
            spec = _with_constraints(spec, dry_pins)
        for package in source_builds(plan):
            echo(f"rocmkit: dry run: would then build {package.requirement} against this torch (no build isolation)")
        if wsl_runtime.applies(plan):
            echo(f"rocmkit: dry run: would then remove torch's bundled {wsl_runtime.PREFIX}* (WSL2 runtime step)")
        outcome = _dry_run(guarded_plan, target, installer, spec, guarded, echo, notes)
        return dataclasses.replace(outcome, left_out=left_out)
    if guarded:
        spec = _with_constraints(spec, files.constraints)

    with _exclusive(target):
        recover_pending(target, installer, echo)
        outcome = _transaction(
            plan, target, opts, echo, installer, spec, guarded, unguard, files, notes, guarded_plan
        )
    return dataclasses.replace(outcome, left_out=left_out)


def _transaction(
    plan: Plan,
    target: PyEnv,
    opts: Options,
    echo: Say,
    installer: Installer,
    spec: InstallSpec,
    guarded: bool,
    unguard: bool,
    files: guard.GuardFiles,
    notes: list[str],
    guarded_plan: Plan,
) -> Outcome:
    try:
        workdir = _workdir()
        intent = (*spec.requirements, *(str(f) for f in spec.requirement_files))
        managed = (*(files.all() if guarded or unguard else ()), *_wsl_files(plan, target))
        tx = Transaction(installer, workdir, managed, intent=intent)
    except OSError as exc:
        # Nothing has changed yet: a full disk or read-only cache is said plainly.
        raise storage_error(exc) or exc from exc
    echo(
        f"rocmkit: recorded the state of {target.prefix} ({len(tx.before.dists)} distributions) in {workdir}"
        f"; journal {tx.journal.path}"
    )
    with on_child_started(tx.journal.child_started):
        return _journaled(plan, target, opts, echo, installer, spec, guarded, unguard, files, notes, tx, guarded_plan)


def _wsl_files(plan: Plan, target: PyEnv) -> tuple[Path, ...]:
    return wsl_runtime.runtime_files(target) if wsl_runtime.applies(plan) else ()


def _journaled(
    plan: Plan,
    target: PyEnv,
    opts: Options,
    echo: Say,
    installer: Installer,
    spec: InstallSpec,
    guarded: bool,
    unguard: bool,
    files: guard.GuardFiles,
    notes: list[str],
    tx: Transaction,
    guarded_plan: Plan,
) -> Outcome:
    workdir = tx.workdir
    try:
        if guarded:
            left = tuple(r for r in plan.requirements if r not in guarded_plan.requirements)
            guard.write_guard(target.prefix, guarded_plan, left)
        elif unguard and guard.remove_guard(target.prefix):
            echo(f"rocmkit: removed the earlier guard of {target.prefix} (--skip guard)")
        if tx.before.dists:
            # The dry run names what the install would replace, so it is backed up first.
            with _heartbeat(echo, f"{installer.name} dry run", phase="finding what the install would replace"):
                changes, result = installer.dry_run(spec)
            if not result.ok:
                raise _failed(f"{installer.name} (resolving)", result, spec)
        else:
            # An empty environment has nothing to replace or back up: the resolver's dry run
            # (half a second with uv) would only repeat the install's own resolution, and a
            # failure there restores the same empty state.
            changes = Changes(install=(), remove=())
        # Re-zipping an installed torch is a copy of about a GB: seconds.
        with _heartbeat(echo, "backing up", phase="copying what the install may replace into a wheel"):
            backup = tx.backup(_forced_changes(spec, changes))
        if backup.wheels:
            echo(f"rocmkit: backed up {', '.join(sorted(backup.wheels))} (may be replaced)")
        echo(f"rocmkit: installing with {installer.name}: {' '.join(spec.requirements) or '(lock file)'}")
        tx.journal.at("installing")
        with _heartbeat(echo, f"{installer.name} install", phase="installing the plan's packages"):
            result = installer.install(spec, on_line=_progress(echo, opts.show_output))
        if not result.ok:
            raise _failed(installer.name, result, spec)
        for package in source_builds(plan):
            with _heartbeat(echo, f"building {package.name}"):
                build_against_torch(
                    package, target, installer, spec, echo, _progress(echo, opts.show_output), _failed
                )
        if wsl_runtime.applies(plan):
            # AMD's WSL step: journaled first (as absent, for files the install just added), then done.
            tx.manage(wsl_runtime.runtime_files(target))
            gone = wsl_runtime.remove_bundled(target)
            echo(
                f"rocmkit: WSL2: removed torch's bundled {', '.join(p.name for p in gone) or 'runtime (none found)'}"
                f"; torch uses {wsl_runtime.SYSTEM_LIB}'s WSL runtime"
            )
        verification = None
        tx.journal.at("verifying")
        if opts.verify:
            with _heartbeat(echo, "verifying", phase="importing torch in a child process of the target Python"):
                checked = verify(target, plan, compile_bytecode=opts.compile_bytecode)
            if not checked.ok:
                where = ", ".join(spec.sources.index_urls or spec.sources.find_links) or "the sources"
                raise ToolError(
                    checked.summary(),
                    f"{where} served another build than the plan names; check the index "
                    "(--index-base) or re-run `rocmkit resolve`",
                )
            echo(f"rocmkit: {checked.summary()}")
            verification = {"ok": True, **checked.facts}
    except BaseException as exc:
        # Whatever stopped the install (an error, Ctrl-C, a bug), the environment goes back.
        echo(
            f"rocmkit: {'interrupted' if isinstance(exc, KeyboardInterrupt) else 'install failed'}; restoring"
        )
        with _signals_deferred(echo, reraise=False):
            report = tx.restore()
        for step in report.steps:
            echo(f"rocmkit:   {step}")
        echo(f"rocmkit: {report.describe()}")
        if report.restored:
            tx.discard_backups()
        else:
            echo(
                f"rocmkit: backups and the recorded state are kept in {workdir}; "
                f"the journal {tx.journal.path} stays, so the next run tries the restore again"
            )
        if not isinstance(exc, RocmkitError):
            raise
        message = exc.message + (
            "; environment restored exactly" if report.exact else "; " + report.describe()
        )
        raise type(exc)(message, exc.fixes) from exc
    after = tx.after_state()
    changed = diff(tx.before, after)
    tx.commit()
    tx.discard_backups()
    write_text_atomic(workdir / "state-after.json", json.dumps(after.to_dict(), indent=2) + "\n")
    if guarded:
        echo(
            f"rocmkit: guarded {', '.join(guard.pins_for(guarded_plan))} against later pip/uv installs "
            f"({files.constraints})"
        )
    return Outcome(
        messages=tuple(notes),
        action="installed",
        target=str(target.prefix),
        installer=installer.name,
        plan=plan,
        sources=spec.sources,
        changes=changed.describe(),
        verification=verification,
    )


def _dry_run(
    plan: Plan,
    target: PyEnv,
    installer: Installer,
    spec: InstallSpec,
    guarded: bool,
    echo: Say,
    notes: list[str],
) -> Outcome:
    changes, result = installer.dry_run(spec)
    if not result.ok:
        raise _failed(f"{installer.name} (dry run)", result, spec)
    lines = [f"+ {n}=={v}" for n, v in changes.install] + [f"- {n}=={v}" for n, v in changes.remove]
    echo(
        f"rocmkit: dry run with {installer.name} into {target.prefix}: "
        + (", ".join(lines) or "nothing to change")
    )
    if guarded:
        echo(f"rocmkit: would guard {', '.join(guard.pins_for(plan))}")
    return Outcome(
        messages=tuple(notes),
        action="dry-run",
        target=str(target.prefix),
        installer=installer.name,
        plan=plan,
        sources=spec.sources,
        changes=", ".join(lines),
    )


def _with_sources(spec: InstallSpec, sources: Sources) -> InstallSpec:
    return _replace(spec, sources=sources)


def _with_constraints(spec: InstallSpec, constraints: Path) -> InstallSpec:
    # The guard's pins hold for any sdist built in this run too: its isolated build environment
    # gets this torch or none, never another.
    return _replace(
        spec,
        constraints=(*spec.constraints, constraints),
        build_constraints=(*spec.build_constraints, constraints),
    )


def _with_break(spec: InstallSpec, flag: bool) -> InstallSpec:
    return _replace(spec, break_system_packages=flag)


def _replace(spec: InstallSpec, **changes: Any) -> InstallSpec:
    return dataclasses.replace(spec, **changes)


def locked_spec(parsed: lock.LockFile, workdir: Path, extra: tuple[str, ...] = ()) -> InstallSpec:
    """An install of exactly the locked pins with hash checking."""
    if extra:
        raise UsageError("--with cannot add packages to a lock", "lock them together: --lock FILE --with PKG")
    req = workdir / "locked-requirements.txt"
    write_text_atomic(req, parsed.requirements_text())
    # reinstall: pip and uv check hashes only of what they download, and skip what is
    # installed already; a lock whose every hash is wrong would then "succeed". Forcing
    # the reinstall makes every locked file go through the hash check.
    return InstallSpec(
        requirement_files=(req,), sources=parsed.sources, no_deps=True, require_hashes=True, reinstall=True
    )


def _not_locked(plan: Plan, spec: InstallSpec) -> tuple[str, ...]:
    """The plan's requirements whose project the locked list of ``spec`` does not hold."""
    held = {canonical(n) for f in spec.requirement_files for n, _ in lock.pins_in(f.read_text())}
    return tuple(r for r in plan.requirements if (p := parse_pin(r)) is not None and p.project not in held)


def _forced_changes(spec: InstallSpec, changes: Changes) -> Changes:
    """With a forced reinstall every named pin is replaced: back up those installed too."""
    if not spec.reinstall:
        return changes
    named = [(canonical(n), v) for f in spec.requirement_files for n, v in lock.pins_in(f.read_text())]
    named += [(p.project, p.version) for r in spec.requirements if (p := parse_pin(r)) is not None]
    seen = {n for n, _ in changes.install}
    return dataclasses.replace(changes, install=(*changes.install, *(p for p in named if p[0] not in seen)))
