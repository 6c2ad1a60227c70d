"""The old spellings kept one release, each saying its new one on stderr: install's modes (now
verbs) and the flags folded into an option family (:mod:`rocmkit.cli.folds`).

Apart from :mod:`rocmkit.cli.verbs` (which imports ``install`` and ``resolve`` to copy their
options) so that those two can ask it without a circle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click
from click.core import ParameterSource

EXPORT_FORMATS = ("pylock", "requirements", "uv-project")


def given(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE


SAY = "rocmkit: note: `{old}` is now `{new}` (the old spelling works for one more release)"


def renamed(ctx: click.Context) -> list[str]:
    """The new spelling of each old flag typed on the command line, each said once a run: the
    mode flags (never one a verb set: a verb invokes ``install``/``resolve`` with no command-line
    source for it), and the flags an option family replaced, on this command or on the verb that
    invoked it."""
    seen: set[str] = ctx.find_root().meta.setdefault("rocmkit.renamed", set())
    out = [line for line in (*_modes(ctx), *_folded(ctx)) if line not in seen]
    seen.update(out)
    return out


def _folded(ctx: click.Context) -> list[str]:
    from rocmkit.cli.folds import Renamed

    out: list[str] = []
    here: click.Context | None = ctx
    while here is not None:
        for param in here.command.params:
            if isinstance(param, Renamed) and param.name and given(here, param.name):
                old, new = param.spelling(here.params[param.name])
                out.append(SAY.format(old=old, new=new))
        here = here.parent
    return out


def _modes(ctx: click.Context) -> list[str]:
    params: Mapping[str, Any] = ctx.params
    say = SAY.replace("`{old}`", "`rocmkit {old}`").replace("`{new}`", "`rocmkit {new}`")
    out: list[str] = []
    if ctx.command.name == "install":
        if given(ctx, "lock_file"):
            out.append(say.format(old=f"install --lock {params['lock_file']}", new=f"lock {params['lock_file']}"))
        if given(ctx, "download_only") and params.get("wheelhouse") is not None:
            out.append(say.format(
                old=f"install --download-only --wheelhouse {params['wheelhouse']}", new=f"wheelhouse {params['wheelhouse']}"
            ))
        if given(ctx, "project"):
            out.append(say.format(
                old=f"install --project {params['project']}", new=f"export uv-project --project {params['project']}"
            ))
    elif ctx.command.name == "resolve" and given(ctx, "fmt") and params.get("fmt") in EXPORT_FORMATS:
        out.append(say.format(old=f"resolve --format {params['fmt']}", new=f"export {params['fmt']}"))
    return out
