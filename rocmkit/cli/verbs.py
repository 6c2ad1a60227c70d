"""Install's modes as verbs: ``rocmkit lock``, ``rocmkit wheelhouse``, ``rocmkit export
pylock|requirements|uv-project``, as hatch and uv give each action its own command.

Each verb is thin: its options are the ones ``install`` (or ``resolve``) already has, less the
modes, and it invokes that command with its mode set, so the request, its checks, the session
and the carrying out are the very code paths the old flags take. The old spellings
(``install --lock``, ``install --download-only --wheelhouse``, ``install --project``,
``resolve --format pylock|requirements|uv-project``) still work for one release, and say the new
one on stderr (:mod:`rocmkit.cli.renamed`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from rocmkit.cli.folds import allow_option, skip_option
from rocmkit.cli.renamed import EXPORT_FORMATS, given
from rocmkit.cli.sections import INSTALL_SECTIONS, SectionedCommand, Sections
from rocmkit.errors import UsageError

# install's options that choose a mode, or act on an installed environment: a verb that writes a
# lock or fills a wheelhouse takes none of them (and its --skip and --allow only the words that
# apply before an install: _NOT_INSTALLING).
_INSTALL_MODES = (
    "dry_run", "project", "lock_file", "from_lock", "download_only", "wheelhouse",
    "no_guard", "no_verify", "no_compile", "break_system_packages", "allow_env", "skip", "allow",
)


def _not_installing() -> list[click.Parameter]:
    return [
        skip_option("companions"),
        allow_option("insecure-index", "redirect"),
    ]


def derived(
    name: str,
    base: click.Command,
    *,
    drop: Iterable[str],
    extra: Iterable[click.Parameter] = (),
    callback: Callable[..., None],
) -> SectionedCommand:
    """A command with ``base``'s options less ``drop``, plus ``extra`` (first); its help is the
    callback's docstring, its sections ``base``'s (install's) unless set after."""
    dropped = set(drop)
    params = [*extra, *(p for p in base.params if p.name not in dropped)]
    sections = base.sections if isinstance(base, SectionedCommand) else INSTALL_SECTIONS
    return SectionedCommand(
        name, params=params, callback=callback, sections=sections, help=inspect.getdoc(callback),
        context_settings={"help_option_names": ["-h", "--help"]},
    )


def _install() -> click.Command:
    from rocmkit.cli.install import cli

    return cli


def _resolve() -> click.Command:
    from rocmkit.cli.resolve import cli

    return cli


def _lock(lock_file: Path, **params: Any) -> None:
    """Write the plan's pinned closure with hashes to FILE; install nothing.

    \b
    rocmkit lock torch.lock --venv V            resolve for this machine, lock for V's Python
    rocmkit lock torch.lock --plan plan.json    lock a saved plan
    rocmkit install --from-lock torch.lock --venv V   install it (hashes checked)
    """
    click.get_current_context().invoke(_install(), lock_file=lock_file, **params)


def _wheelhouse(folder: Path, **params: Any) -> None:
    """Download the plan's closure into DIR (a wheelhouse); install nothing.

    \b
    rocmkit wheelhouse /shared/wh --plan plan.json
    rocmkit install --wheelhouse /shared/wh --venv V   install from it, offline
    """
    click.get_current_context().invoke(_install(), download_only=True, wheelhouse=folder, **params)


lock = derived(
    "lock",
    _install(),
    drop=_INSTALL_MODES,
    extra=[
        click.Argument(["lock_file"], type=click.Path(path_type=Path, dir_okay=False), metavar="FILE"),
        *_not_installing(),
    ],
    callback=_lock,
)

wheelhouse = derived(
    "wheelhouse",
    _install(),
    drop=_INSTALL_MODES,
    extra=[
        click.Argument(["folder"], type=click.Path(path_type=Path, file_okay=False), metavar="DIR"),
        *_not_installing(),
    ],
    callback=_wheelhouse,
)


# resolve's options that choose an output: an export verb is the output.
_RESOLVE_OUTPUTS = ("fmt", "as_json")
# resolve's option names where install's differ.
_INSTALL_NAME = {"torch_version": "torch"}


def _export(fmt: str) -> Callable[..., None]:
    def run(**params: Any) -> None:
        ctx = click.get_current_context()
        project = params.pop("project", None)
        dry_run = params.pop("dry_run", False)
        if project is None:
            if dry_run:
                raise UsageError("--dry-run goes with --project DIR", "add --project DIR, or drop --dry-run")
            ctx.invoke(_resolve(), fmt=fmt, **params)
            return
        # resolve's options install has no use for here (the pyproject is the target): said when
        # given, else left out; found from the two commands, so a new option of either is covered.
        takes = {p.name for p in _install().params}
        mapped: dict[str, Any] = {}
        for name, value in params.items():
            if _INSTALL_NAME.get(name, name) in takes:
                mapped[_INSTALL_NAME.get(name, name)] = value
            elif given(ctx, name):
                flag = "--" + name.replace("_", "-")
                raise UsageError(
                    f"{flag} does not apply to --project (the project's pyproject.toml is written)",
                    f"drop {flag}",
                )
        ctx.invoke(_install(), project=project, dry_run=dry_run, quiet=True, **mapped)

    run.__doc__ = _HELP[fmt]
    return run


_RESOLVE_SECTIONS: Sections = {
    "What to plan": (
        "capture", "torch_version", "backend", "framework", "python", "channel",
        "strict_data", "with_packages", "build", "venv", "upgrade", "closure",
    ),
    "Sources": ("index_base", "offline", "fresh", "fallback_index", "allow"),
    "Project": ("project", "dry_run"),
    "Output": ("output",),
}

_HELP = {
    "pylock": "The plan as a PEP 751 pylock.toml on stdout: the closure with wheel URLs and hashes (asks the index).",
    "requirements": "The plan as a requirements file with its --index-url lines, on stdout (--closure: every pin).",
    "uv-project": "The plan's [tool.uv] index and sources tables on stdout, or written into DIR/pyproject.toml "
    "with --project DIR (formatting kept; with --dry-run, the diff).",
}


def _export_command(fmt: str) -> click.Command:
    extra: list[click.Parameter] = []
    drop = list(_RESOLVE_OUTPUTS)
    if fmt == "pylock":
        drop.append("closure")  # the pylock is the closure already
    if fmt == "uv-project":
        drop.append("closure")
        extra = [
            click.Option(["--project"], type=click.Path(path_type=Path, file_okay=False), metavar="DIR",
                help="Write the tables into DIR/pyproject.toml (a uv project) instead of printing them."),
            click.Option(["--dry-run"], is_flag=True, help="With --project: print the diff; change nothing."),
        ]
    command = derived(fmt, _resolve(), drop=drop, extra=extra, callback=_export(fmt))
    command.sections = _RESOLVE_SECTIONS
    return command


@click.group("export", context_settings={"help_option_names": ["-h", "--help"]})
def export() -> None:
    """The plan in another tool's format: pylock (PEP 751), requirements, uv-project."""


for _fmt in EXPORT_FORMATS:
    export.add_command(_export_command(_fmt))
