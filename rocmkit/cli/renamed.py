"""The old spellings of install's modes, kept one release: each says its new one on stderr.

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


def renamed(ctx: click.Context) -> list[str]:
    """The new spelling of an old mode flag typed on the command line (never of one a verb set:
    a verb invokes ``install``/``resolve`` with no command-line source for it)."""
    params: Mapping[str, Any] = ctx.params
    say = "rocmkit: note: `rocmkit {old}` is now `rocmkit {new}` (the old spelling works for one more release)"
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
