"""``--backend TAG``: which builds to plan or render, as one tag (``rocm7.1``, ``cu128``, ``cpu``)
in place of ``--rocm X.Y``, ``--cuda X.Y`` and ``--cpu``.

The tag is read by plan.py's one parser (:meth:`rocmkit.plan.Backend.read`, the same that reads
a plan's ``backend`` back), never by a grammar of its own here. It sets the request fields the
three old options set (``rocm``, ``cuda``, ``cpu``), with the values they held: ``rocm7.1`` is
``rocm="7.1"`` as ``--rocm 7.1`` was, ``cu128`` is ``cuda="12.8"`` as ``--cuda 12.8`` was,
``cpu`` is ``cpu=True``; so the requests, and the resolver behind them, are unchanged. The old
options stay one release, hidden, each saying its ``--backend`` spelling once
(:class:`rocmkit.cli.folds.Renamed`).
"""

from __future__ import annotations

from typing import Any

import click

from rocmkit.cli.folds import Folded, Renamed, renamed_flag, renamed_value
from rocmkit.errors import RocmkitError, UsageError
from rocmkit.plan import Backend

FORMS = "rocmX.Y or rocmX.Y.Z (PyTorch's ROCm wheels: rocm7.1), cuXYZ (CUDA XY.Z: cu128 is 12.8) or cpu"


def known_tags() -> list[str]:
    """The PyTorch index names rocmkit's data knows (matrices/torch.toml), ROCm, CUDA, CPU; none
    when the data cannot be read (the error being said is another)."""
    from rocmkit.matrix import load_matrix

    try:
        variants = {v.backend for r in load_matrix().torch_releases for v in r.variants}
    except RocmkitError:  # bad data: the hint is left out, the usage error still said
        return []
    order = {"rocm": 0, "cuda": 1, "cpu": 2}

    def key(b: Backend) -> tuple[int, tuple[int, ...]]:
        return order.get(b.kind or "", 3), tuple(int(p) for p in (b.toolkit or "0").split(".") if p.isdigit())

    return [str(b) for b in sorted(variants, key=key)]


def refused(text: str) -> UsageError:
    """The one error line for a tag ``--backend`` does not take, with the forms and the known tags."""
    named = Backend.read(text)
    fixes = [f"give --backend {FORMS}"]
    if named is not None and named.source in ("amd", "therock"):
        fixes.append("AMD's own builds are a channel: --channel amd, amd-rc or amd-nightly (with --backend rocmX.Y)")
    tags = known_tags()
    if tags:
        fixes.append(f"the tags rocmkit's data knows: {', '.join(tags)}")
    return UsageError(f"--backend {text[:64]!r} is not a ROCm, CUDA or CPU tag", tuple(fixes))


def fields(named: Backend) -> tuple[tuple[str, Any], ...]:
    """The request fields a backend sets, as ``--rocm``/``--cuda``/``--cpu`` set them."""
    if named.kind == "cpu":
        return (("cpu", True),)
    return ((named.kind or "", named.toolkit),)


class BackendTag(click.ParamType[Folded, Any]):
    """A PyTorch index tag of a ROCm, CUDA or CPU build, read as the (field, value) pairs it sets."""

    name = "backend"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Folded:
        if isinstance(value, Folded):
            return value
        text = str(value).strip()
        named = Backend.read(text)
        if named is None or not named.pytorch_index or named.kind not in ("rocm", "cuda", "cpu") or (
            named.kind != "cpu" and not named.toolkit
        ):
            raise refused(text)
        return Folded(fields(named))


def backend_option(help: str) -> click.Option:
    return click.Option(["--backend", "backend"], type=BackendTag(), metavar="TAG", help=help)


def _tag(kind: str, value: Any) -> str:
    # What the old value names, as a tag ("6.2" and "rocm6.2" -> rocm6.2; "12.8" and "cu128" -> cu128).
    text = str(value)
    named = Backend.read(text)
    if named is not None and named.kind == kind:
        return str(named)
    return str(Backend.rocm_index(text) if kind == "rocm" else Backend.cuda_index(text))


def renamed_backend() -> tuple[Renamed, ...]:
    """``--rocm X.Y``, ``--cuda X.Y`` and ``--cpu``, kept one release (hidden; each says its tag)."""
    return (
        renamed_value("--rocm", lambda v: f"--backend {_tag('rocm', v)}", field="rocm", metavar="X.Y"),
        renamed_value("--cuda", lambda v: f"--backend {_tag('cuda', v)}", field="cuda", metavar="X.Y"),
        renamed_flag("--cpu", "--backend cpu"),
    )
