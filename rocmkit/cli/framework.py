"""``--framework NAME[=VERSION][,NAME…]``: what to plan, and JAX's release with it
(``--framework jax=0.10``, ``--framework torch,jax=0.10.2``), in place of ``--framework jax
--jax 0.10``.

A JAX release was a second option that meant nothing without the first ("--jax goes with
--framework jax"); written on the framework it names, it cannot be given alone. It sets the
request fields the two options set (``framework``: the names as typed, comma-joined;
``jax_version``), so the requests and the resolver are unchanged; the names and the release
are checked where they always were (:meth:`rocmkit.resolve.constraints.Constraints.validated`).
``--jax X.Y`` stays one release, hidden, saying the new spelling once. torch's release stays
``--torch X.Y`` (the option used most).
"""

from __future__ import annotations

from typing import Any

import click

from rocmkit.cli.folds import Folded, Renamed, renamed_value
from rocmkit.errors import UsageError

METAVAR = "torch|jax[=X.Y]|torch-xla|torch,jax"


class Frameworks(click.ParamType[Folded, Any]):
    """Comma-separated framework names, jax's with an optional ``=VERSION``."""

    name = "framework"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Folded:
        if isinstance(value, Folded):
            return value
        names: list[str] = []
        pairs: list[tuple[str, Any]] = []
        for item in (part.strip() for part in str(value).split(",")):
            name, eq, version = item.partition("=")
            name = name.strip()
            if eq and name != "jax":
                fix = f"give torch's release with --torch {version}" if name == "torch" else f"write --framework {name}"
                raise UsageError(f"--framework {item}: only jax takes =VERSION here", fix)
            if eq and not version.strip():
                raise UsageError(f"--framework {item}: no JAX release after =", "write --framework jax=X.Y, e.g. jax=0.10")
            if eq:
                pairs.append(("jax_version", version.strip()))
            names.append(name)
        # The names as typed (an empty or unknown one is refused with the others by the request's check).
        return Folded((("framework", ",".join(names)), *pairs))


def framework_option(help: str) -> click.Option:
    return click.Option(
        ["--framework", "framework"], type=Frameworks(), default="torch", show_default=True, metavar=METAVAR, help=help
    )


def _new(version: Any) -> str:
    # The frameworks given beside the old --jax, with jax's release on jax ("--framework
    # torch,jax --jax 0.10" -> "--framework torch,jax=0.10"): the spelling to type instead.
    ctx = click.get_current_context(silent=True)
    folded = ctx.params.get("framework") if ctx is not None else None
    named = dict(folded or ()).get("framework", "jax") if isinstance(folded, Folded) else "jax"
    names = [n for n in str(named).split(",") if n] or ["jax"]
    if "jax" not in names:
        names = ["jax"] if names == ["torch"] else [*names, "jax"]
    return "--framework " + ",".join(f"jax={version}" if n == "jax" else n for n in names)


def renamed_jax() -> Renamed:
    """``--jax X.Y``, kept one release (hidden; it says ``--framework jax=X.Y``)."""
    return renamed_value("--jax", _new, field="jax_version", metavar="X.Y[.Z]")
