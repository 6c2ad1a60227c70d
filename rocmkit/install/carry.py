"""``rocmkit install`` carried out: :func:`carry_out` prepares the request
(:func:`rocmkit.install.prepare.prepare`: the inputs read once, the target, the plan) and runs the
install, lock, download, project export or dry run it asks for.

Messages go to the ``say`` callback (the CLI's stderr); the outcome is returned (its data).
Three modules, one direction: the request (what was asked) <- prepare (what it reads) <- carry
(what it does).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.util.say import Say

if TYPE_CHECKING:
    from rocmkit.install.flow import Options, Outcome
    from rocmkit.install.prepare import Prepared
    from rocmkit.install.request import InstallRequest
    from rocmkit.plan import Plan
    from rocmkit.session import Session


def carry_out(req: InstallRequest, say: Say, session: Session | None = None) -> Outcome:
    """Prepare (read the inputs once, pick the target, making a missing venv; plan), then run;
    a venv this run made is removed again when anything fails."""
    from rocmkit.install.prepare import prepare, session_for
    from rocmkit.util.ticker import shared

    # Detection, resolve and the live index check take seconds before the plan is said: the
    # status line (a "still running" line off a terminal) says so, instead of a silence.
    with shared().task("install", phase="detecting this machine and resolving the plan"):
        prepared = prepare(req, session or session_for(req), say)
    try:
        return _run(req, prepared, say)
    except BaseException:
        prepared.discard(say)
        raise


def _run(req: InstallRequest, prepared: Prepared, say: Say) -> Outcome:
    from rocmkit.install import flow
    from rocmkit.util.redact import redact_text

    plan, opts, target = prepared.plan, prepared.options, prepared.target
    if req.with_packages:
        from rocmkit.install.companions import check_against_plan

        check_against_plan(req.with_packages, plan)
    urls = f" from {redact_text(', '.join(plan.index_urls))}" if plan.index_urls else ""
    say(f"rocmkit: plan {plan.backend}: {' '.join(plan.requirements)}{urls}")
    how = {"wheel": "prebuilt wheel", "source": "built here against this torch", "index": "from the indexes"}
    for package in plan.with_packages:
        say(f"rocmkit: with {package.requirement} ({how.get(package.how, package.how)})")
    for warning in plan.warnings:
        say(f"rocmkit: warning: {warning}")
    if prepared.would_create is not None:
        return _dry_run_new_venv(req, plan, opts, prepared.would_create, say)
    if req.project is not None:
        return _write_project(req.project, plan, req.dry_run, say)
    if req.lock_file:
        return flow.write_lock(plan, target, req.lock_file, opts, say)
    if req.download_only:
        assert req.wheelhouse is not None  # checked by the request
        return flow.download_wheelhouse(plan, target, req.wheelhouse, opts, say)
    outcome = flow.install(plan, target, opts, say, spec=prepared.spec)
    if outcome.action == "installed":
        env = " ".join(f"{k}={v}" for k, v in plan.env.items())
        say(f"rocmkit: installed into {outcome.target} with {outcome.installer}: {outcome.changes}")
        if env:
            say(f"rocmkit: set {env} when running (the plan says why: `rocmkit resolve`)")
        # Said again at the end: the first warning scrolled away under pip's output.
        for req_line in outcome.left_out:
            add = flow.add_later_command(req_line, plan, target, outcome.installer)
            say(f"rocmkit: WARNING: {req_line} was not installed; add it later with: {add}")
        say(f"rocmkit: next: {doctor_command(target.venv, target.executable, plan.framework)}")
    return outcome


def doctor_command(venv: Path | None, python: Path, framework: str) -> str:
    """The check that proves an install: the next command to run after it."""
    import shlex

    where = f"--venv {shlex.quote(str(venv))}" if venv is not None else f"--python {shlex.quote(str(python))}"
    framework_opt = f" --framework {framework}" if framework != "torch" else ""
    return f"rocmkit doctor {where}{framework_opt} --level 2"


# A uv project's pyproject.toml is a few KiB; one far larger is not one to edit.
MAX_PYPROJECT = 1024 * 1024


def read_pyproject(path: Path) -> str:
    """The text of ``path`` to rewrite: a regular file, UTF-8, at most 1 MiB, valid TOML; else
    one :class:`DataError` line (exit 5) saying which."""
    from rocmkit.errors import DataError
    from rocmkit.util.safeload import loads_toml, read_text

    fix = f"fix {path} (UTF-8 TOML, at most {MAX_PYPROJECT // 1024} KiB, as uv reads it), then run again"
    try:
        text = read_text(path, str(path), max_bytes=MAX_PYPROJECT)
        loads_toml(text, str(path), max_bytes=MAX_PYPROJECT)
    except DataError as exc:
        raise DataError(exc.message, fix) from None
    return text


def _write_project(folder: Path, plan: Plan, dry_run: bool, say: Say) -> Outcome:
    """The plan's index and sources written into ``folder/pyproject.toml`` (a diff on a dry run)."""
    import difflib
    import shlex

    from rocmkit.companions.export import apply_to_pyproject
    from rocmkit.install import flow
    from rocmkit.util.atomicio import write_text_atomic

    path = folder / "pyproject.toml"
    before = read_pyproject(path)
    after = apply_to_pyproject(before, plan)
    diff = "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path.name}", f"b/{path.name}"
        )
    )
    if dry_run:
        say(f"rocmkit: dry run: would change {path}:" if diff else f"rocmkit: {path} already holds the plan")
        for line in diff.splitlines():
            say(line)
    elif diff:
        write_text_atomic(path, after)
        say(f"rocmkit: wrote the plan's index and sources into {path}")
        say(f"rocmkit: next: cd {shlex.quote(str(folder))} && uv lock && uv sync")
    else:
        say(f"rocmkit: {path} already holds the plan")
    for package in plan.with_packages:
        if package.how == "source":
            say(
                f"rocmkit: {package.requirement} is built from source against the project's torch: after "
                f"`uv sync`, run `rocmkit install --venv .venv --with {package.name}`"
            )
    return flow.Outcome(
        action="dry-run" if dry_run else "project",
        target=str(path),
        installer="uv",
        plan=plan,
        sources=flow.plan_sources(plan),
        changes=diff,
        path=str(path),
    )


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
