"""``rocmkit install``: carry out a plan in a venv, with uv or pip, safely."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from rocmkit.errors import DataError, UsageError

if TYPE_CHECKING:
    from rocmkit.install.flow import Options
    from rocmkit.install.venv import Target
    from rocmkit.plan import Plan

PYTORCH_WHL = "https://download.pytorch.org/whl"


# Companions that import torchvision: from PyPI beside a ROCm (or CPU) torch they would pull a
# torchvision built for another torch, whose C++ ops do not load ("operator torchvision::nms does
# not exist"). The plan's own torchvision, built for its torch, must be there to satisfy them.
NEEDS_TORCHVISION = frozenset({"timm"})


def with_packages_of(values: tuple[str, ...], *, companions: bool) -> tuple[str, ...]:
    """``--with a,b --with c`` as requirements, each checked (PEP 508) before anything is installed."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    out: list[str] = []
    for value in values:
        for item in (v.strip() for v in value.split(",")):
            if not item:
                continue
            try:
                req = Requirement(item)
            except InvalidRequirement as exc:
                raise UsageError(
                    f"--with {item!r} is not a package requirement: {exc}", "e.g. --with transformers,timm"
                ) from None
            if req.url:
                raise UsageError(f"--with {item!r}: a URL requirement is not allowed", "name a package from the index")
            if canonicalize_name(req.name) in NEEDS_TORCHVISION and not companions:
                raise UsageError(
                    f"--with {req.name} needs torchvision, and --no-companions leaves it out: pip would fetch "
                    "a torchvision built for another torch",
                    "drop --no-companions so the torchvision built for this torch is installed",
                )
            out.append(str(req))
    return tuple(dict.fromkeys(out))


def _echo(message: str) -> None:
    click.echo(message, err=True)


def _load_plan_file(path: Path, index_base: str | None, allow_env: frozenset[str] = frozenset()) -> Plan:
    from rocmkit.plan import Plan
    from rocmkit.safeload import load_json_file

    try:
        data = load_json_file(path, f"plan {path}", max_bytes=4 * 1024 * 1024)
    except DataError as exc:
        raise DataError(exc.message, "pass the output of `rocmkit resolve --json`") from exc
    plan = Plan.from_dict(data, allow_env=allow_env)
    if index_base:
        import dataclasses

        base = index_base.rstrip("/")
        urls = tuple(
            base + u[len(PYTORCH_WHL) :] if u.startswith(PYTORCH_WHL) else u for u in plan.index_urls
        )
        plan = dataclasses.replace(plan, index_urls=urls)
    return plan


def _resolve(
    capture: Path | None,
    python: str,
    torch: str | None,
    rocm: str | None,
    channel: str,
    cpu: bool,
    index_base: str | None,
) -> Plan:
    from rocmkit.detect import load_machine
    from rocmkit.resolve import Constraints, resolve

    machine = load_machine(capture)
    constraints = Constraints(
        torch=torch, rocm=rocm, python=python, channel=channel, cpu=cpu, index_base=index_base
    )
    return resolve(machine, constraints)


@click.command("install")
@click.option(
    "--venv",
    "venv",
    type=click.Path(path_type=Path),
    help="Virtual environment to install into (made if missing).",
)
@click.option(
    "--python",
    "venv_base",
    metavar="VERSION|PATH",
    help="Python to make a missing --venv from (uv finds it by version); default: rocmkit's own.",
)
@click.option(
    "--interpreter", type=click.Path(path_type=Path), help="Install into this Python instead of a venv."
)
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A plan from `rocmkit resolve --json`.",
)
@click.option(
    "--capture",
    type=click.Path(path_type=Path, file_okay=False),
    help="Resolve for a captured machine instead of this one.",
)
@click.option("--torch", help="Torch release to resolve (e.g. 2.5).")
@click.option("--rocm", help="ROCm version to resolve for (e.g. 6.2).")
@click.option(
    "--channel", type=click.Choice(["stable", "nightly", "therock"]), default="stable", show_default=True
)
@click.option("--cpu", is_flag=True, help="Resolve CPU wheels whatever the machine has.")
@click.option(
    "--index-base",
    envvar="ROCMKIT_INDEX_BASE",
    help="Replace https://download.pytorch.org/whl in index URLs (mirror).",
)
@click.option("--installer", type=click.Choice(["auto", "uv", "pip"]), default="auto", show_default=True)
@click.option(
    "--with",
    "with_packages",
    multiple=True,
    metavar="PKG",
    help="Companion packages, comma-separated or repeated (transformers,timm), installed under the guard.",
)
@click.option(
    "--no-companions",
    is_flag=True,
    help="Install torch and its Triton only: leave out torchvision/torchaudio (minimal images).",
)
@click.option("--dry-run", is_flag=True, help="Say what would change; change nothing.")
@click.option(
    "--lock",
    "lock_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the pinned closure with hashes to FILE (installs nothing).",
)
@click.option(
    "--from-lock",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Install a lock file with hash checking.",
)
@click.option(
    "--download-only", is_flag=True, help="With --wheelhouse: download the closure, install nothing."
)
@click.option(
    "--wheelhouse",
    type=click.Path(path_type=Path, file_okay=False),
    help="Wheelhouse folder to fill (--download-only) or install from, offline.",
)
@click.option("--no-guard", is_flag=True, help="Do not pin torch against later pip/uv installs.")
@click.option("--no-verify", is_flag=True, help="Skip the check in a child process after installing.")
@click.option(
    "--break-system-packages", is_flag=True, help="Allow modifying an externally managed (PEP 668) Python."
)
@click.option(
    "--net-timeout",
    type=float,
    default=15.0,
    show_default=True,
    help="Per-request network timeout for pip/uv (s).",
)
@click.option(
    "--timeout",
    "install_timeout",
    type=float,
    default=3600.0,
    show_default=True,
    help="Overall limit per pip/uv run (s).",
)
@click.option(
    "--probe-timeout",
    type=float,
    default=5.0,
    show_default=True,
    help="Index reachability check timeout (s).",
)
@click.option(
    "--allow-env",
    "allow_env",
    multiple=True,
    metavar="NAME",
    help="Let a plan or lock set NAME in bin/activate (beyond HSA_OVERRIDE_GFX_VERSION, *_VISIBLE_DEVICES).",
)
@click.option(
    "--allow-insecure-index",
    is_flag=True,
    help="Allow plain-http and file:// indexes (warned about). Env: ROCMKIT_ALLOW_INSECURE_INDEX=1.",
)
@click.option("--quiet", "-q", is_flag=True, help="Do not stream pip/uv output.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the outcome as JSON (rocmkit.install/1) on stdout."
)
def cli(
    venv: Path | None,
    venv_base: str | None,
    interpreter: Path | None,
    plan_file: Path | None,
    capture: Path | None,
    torch: str | None,
    rocm: str | None,
    channel: str,
    cpu: bool,
    index_base: str | None,
    installer: str,
    with_packages: tuple[str, ...],
    no_companions: bool,
    dry_run: bool,
    lock_file: Path | None,
    from_lock: Path | None,
    download_only: bool,
    wheelhouse: Path | None,
    no_guard: bool,
    no_verify: bool,
    break_system_packages: bool,
    net_timeout: float,
    install_timeout: float,
    probe_timeout: float,
    quiet: bool,
    as_json: bool,
    allow_env: tuple[str, ...] = (),
    allow_insecure_index: bool = False,
) -> None:
    """Install the resolved torch/triton builds into a virtual environment.

    \b
    Records the environment first and restores it exactly if any step fails;
    guards torch against later `pip install`s; verifies the result.
    \b
    rocmkit install --venv ~/venvs/rocm            resolve for this machine, install
    rocmkit install --plan plan.json --venv V      install a saved plan
    rocmkit install --lock torch.lock --venv V     write a hashed lock (no install)
    rocmkit install --from-lock torch.lock --venv V
    rocmkit install --download-only --wheelhouse /shared/wh
    rocmkit install --wheelhouse /shared/wh --venv V   (offline)
    """

    from rocmkit.install import flow
    from rocmkit.install.base import Limits
    from rocmkit.install.sources_policy import ALLOW_ENV, check_source_urls

    if allow_insecure_index:
        # Read where the URLs are used (flow.checked_sources), as the environment variable is.
        os.environ[ALLOW_ENV] = "1"
    if index_base:
        check_source_urls([index_base], _echo)
    allowed_env = frozenset(allow_env)
    from rocmkit.install.venv import inspect_python, select_target, venv_python

    sources_given = [
        n
        for n, v in (
            ("--plan", plan_file),
            ("--from-lock", from_lock),
            ("--wheelhouse", wheelhouse if not download_only else None),
        )
        if v
    ]
    if len(sources_given) > 1:
        raise UsageError(f"{' and '.join(sources_given)} both say what to install", "pass only one of them")
    if download_only and wheelhouse is None:
        raise UsageError("--download-only needs --wheelhouse DIR", "add --wheelhouse DIR")
    if lock_file and (from_lock or wheelhouse or download_only):
        raise UsageError(
            "--lock writes a lock from a plan; it does not combine with --from-lock/--wheelhouse"
        )
    if (from_lock or (wheelhouse and not download_only)) and (torch or rocm or cpu or capture):
        raise UsageError("a lock or wheelhouse fixes the builds; --torch/--rocm/--cpu/--capture do not apply")
    for name, seconds in (
        ("--net-timeout", net_timeout),
        ("--timeout", install_timeout),
        ("--probe-timeout", probe_timeout),
    ):
        if not seconds > 0:
            raise UsageError(
                f"{name} {seconds:g} is not a positive number of seconds", f"give {name} a value above 0"
            )
    if venv is not None and interpreter is not None:
        # Checked here too: the dry-run and lock paths never reach select_target.
        raise UsageError("--venv and --interpreter name two targets", "pass only one of them")
    if plan_file and (torch or rocm or cpu or capture):
        # Silently installing the saved plan would ignore what the user asked for.
        raise UsageError(
            "a plan file fixes the builds; --torch/--rocm/--cpu/--capture do not apply",
            "drop them, or drop --plan to resolve afresh",
        )
    if no_companions and (from_lock or (wheelhouse and not download_only)):
        raise UsageError(
            "a lock or wheelhouse installs its exact list; --no-companions does not apply",
            "make the lock or wheelhouse with --no-companions instead",
        )

    with_packages = with_packages_of(with_packages, companions=not no_companions)
    opts = flow.Options(
        installer=cast("flow.InstallerChoice", installer),
        dry_run=dry_run,
        with_packages=with_packages,
        guard=not no_guard,
        verify=not no_verify,
        break_system_packages=break_system_packages,
        limits=Limits(net_timeout_s=net_timeout, install_timeout_s=install_timeout),
        probe_timeout_s=probe_timeout,
        show_output=not quiet,
        companions=not no_companions,
    )
    if plan_file is not None:
        # A plan file that cannot be used is an error before anything is created.
        _load_plan_file(plan_file, index_base, allowed_env)
    if from_lock is not None:
        # Likewise a lock file or wheelhouse that does not parse.
        from rocmkit.install import lock as lockmod

        lockmod.parse(from_lock, allow_env=allowed_env)
    elif wheelhouse is not None and not download_only:
        from rocmkit.install import wheelhouse as whmod

        whmod.open_wheelhouse(wheelhouse)
    read_only = bool(lock_file or download_only)
    created = False
    would_create: Path | None = None
    if read_only and venv is None and interpreter is None and not os.environ.get("VIRTUAL_ENV"):
        # Locking and downloading change nothing: rocmkit's own Python gives the tags.
        target = inspect_python(Path(sys.executable))
    elif dry_run and venv is not None and not venv_python(venv.absolute()).exists():
        # Nothing to dry-run against: plan for the Python the venv would be made from.
        target = inspect_python(Path(sys.executable))
        would_create = venv.absolute()
    else:
        target, created = select_target(
            venv=venv,
            python=interpreter,
            environ=os.environ,
            break_system_packages=break_system_packages or read_only,
            create=not (dry_run or read_only),
            base_python=venv_base,
        )
        if created:
            _echo(f"rocmkit: created the virtual environment {target.prefix} (Python {target.version})")

    try:
        _carry_out(
            target, opts, plan_file, from_lock, wheelhouse, download_only, lock_file, with_packages,
            capture, torch, rocm, channel, cpu, index_base, as_json, would_create, allowed_env,
        )  # fmt: skip
    except BaseException:
        if created:
            # It did not exist before this run: "exactly as before" means gone.
            import shutil

            shutil.rmtree(target.prefix, ignore_errors=True)
            _echo(f"rocmkit: removed the virtual environment {target.prefix} made by this run")
        raise


def _carry_out(
    target: Target,
    opts: Options,
    plan_file: Path | None,
    from_lock: Path | None,
    wheelhouse: Path | None,
    download_only: bool,
    lock_file: Path | None,
    with_packages: tuple[str, ...],
    capture: Path | None,
    torch: str | None,
    rocm: str | None,
    channel: str,
    cpu: bool,
    index_base: str | None,
    as_json: bool,
    would_create: Path | None,
    allowed_env: frozenset[str] = frozenset(),
) -> None:
    import dataclasses

    from rocmkit.install import flow
    from rocmkit.install import lock as lockmod
    from rocmkit.install import wheelhouse as whmod
    from rocmkit.install.venv import find_uv
    from rocmkit.plan import Plan

    spec = None
    if from_lock or (wheelhouse and not download_only):
        parsed = (
            whmod.open_wheelhouse(wheelhouse)
            if wheelhouse
            else lockmod.parse(from_lock, allow_env=allowed_env)  # type: ignore[arg-type]
        )
        if parsed.plan is None:
            pins = tuple(f"{e.name}=={e.version}" for e in parsed.entries)
            plan = Plan(backend="unknown", requirements=pins)
            opts = dataclasses.replace(opts, verify=False, guard=False)
            _echo("rocmkit: the lock carries no rocmkit plan; installing it without guard or verification")
        else:
            plan = parsed.plan
        import tempfile

        spec = flow.locked_spec(parsed, Path(tempfile.mkdtemp(prefix="rocmkit-lock-")), with_packages)
    elif plan_file:
        plan = _load_plan_file(plan_file, index_base, allowed_env)
    else:
        plan = _resolve(capture, target.short_version, torch, rocm, channel, cpu, index_base)

    from rocmkit.redact import redact_text

    _echo(
        f"rocmkit: plan {plan.backend}: {' '.join(plan.requirements)}"
        + (f" from {redact_text(', '.join(plan.index_urls))}" if plan.index_urls else "")
    )
    for warning in plan.warnings:
        _echo(f"rocmkit: warning: {warning}")

    if would_create is not None:
        shown = plan if opts.companions else dataclasses.replace(plan, requirements=plan.required)
        _echo(f"rocmkit: dry run: would create the virtual environment {would_create}, then run:")
        _echo(f"rocmkit:   {shown.uv_command() if find_uv() else shown.pip_command()}")
        if with_packages:
            # The real install adds them to the same run, under the guard.
            _echo(f"rocmkit: together with --with: {' '.join(with_packages)}")
        outcome = flow.Outcome(
            action="dry-run",
            target=str(would_create),
            installer="uv" if find_uv() else "pip",
            plan=plan,
            sources=flow.plan_sources(plan),
            left_out=tuple(r for r in plan.requirements if r not in shown.requirements),
        )
    elif lock_file:
        outcome = flow.write_lock(plan, target, lock_file, opts, _echo)
    elif download_only:
        assert wheelhouse is not None
        outcome = flow.download_wheelhouse(plan, target, wheelhouse, opts, _echo)
    else:
        outcome = flow.install(plan, target, opts, _echo, spec=spec)
        if outcome.action == "installed":
            env = " ".join(f"{k}={v}" for k, v in plan.env.items())
            _echo(f"rocmkit: installed into {outcome.target} with {outcome.installer}: {outcome.changes}")
            if env:
                _echo(f"rocmkit: set {env} when running (the plan says why: `rocmkit resolve`)")
            # Said again at the end: the first warning scrolled away under pip's output.
            for req in outcome.left_out:
                add = flow.add_later_command(req, plan, target, outcome.installer)
                _echo(f"rocmkit: WARNING: {req} was not installed; add it later with: {add}")
    if as_json:
        click.echo(json.dumps(outcome.to_dict(), indent=2))
