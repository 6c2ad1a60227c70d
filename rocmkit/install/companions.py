"""``--with``: the companion packages installed beside torch under the guard, checked before
anything is installed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rocmkit.errors import UsageError

if TYPE_CHECKING:
    from rocmkit.install.base import Sources
    from rocmkit.plan import Plan
    from rocmkit.pyenv import PyEnv

# Companions that import torchvision: from PyPI beside a ROCm (or CPU) torch they would pull a
# torchvision built for another torch, whose C++ ops do not load ("operator torchvision::nms does
# not exist"). The plan's own torchvision, built for its torch, must be there to satisfy them.
NEEDS_TORCHVISION = frozenset({"timm"})


def with_packages_of(values: tuple[str, ...], *, companions: bool) -> tuple[str, ...]:
    """``--with a,b --with c`` as requirements, each checked (PEP 508) before anything is installed."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    from rocmkit.companions.wanted import requirements_of

    out = requirements_of(values)
    for item in out:
        req = Requirement(item)
        if canonicalize_name(req.name) in NEEDS_TORCHVISION and not companions:
            raise UsageError(
                f"--with {req.name} needs torchvision, and --skip companions leaves it out: pip would fetch "
                "a torchvision built for another torch",
                "drop --skip companions so the torchvision built for this torch is installed",
            )
    return out


def check_against_plan(with_packages: tuple[str, ...], plan: Plan) -> None:
    """Refuse a ``--with`` requirement that contradicts a pin of the plan (``--with torch==1.0``
    beside torch==2.13.0; ``--with triton==0.0.1`` beside the Triton torch pins): the install
    could only fail, or quietly replace the build the plan chose."""
    from packaging.requirements import Requirement

    from rocmkit.packages import canonical, is_triton, parse_pin

    pins = {p.project: p for r in (*plan.requirements, plan.triton or "") if (p := parse_pin(r)) is not None}
    triton = parse_pin(plan.triton) if plan.triton else None
    for item in with_packages:
        req = Requirement(item)  # checked by with_packages_of
        name = canonical(req.name)
        pin = pins.get(name)
        if pin is None and triton is not None and is_triton(name):
            raise UsageError(
                f"--with {item}: the plan's Triton is {triton}, and {req.name} would install a second "
                "`triton` module over it",
                f"drop {req.name} from --with (torch {plan.torch_version} needs its own Triton)",
            )
        if pin is not None and req.specifier and not req.specifier.contains(pin.version, prereleases=True):
            raise UsageError(
                f"--with {item} contradicts the plan's {pin}",
                ("drop it from --with", "resolve another plan (e.g. --torch) that fits it"),
            )


# A companion a --with package needs that no source serves: (project, the planned requirement,
# the --with packages that pull it in, the version another source would give, or None).
Need = tuple[str, str, tuple[str, ...], str | None]


def unserved_need(
    plan: Plan,
    with_reqs: tuple[str, ...],
    installing: tuple[str, ...],
    sources: Sources,
    target: PyEnv | str,
    left_out: tuple[str, ...] = (),
) -> Need | None:
    """The first companion this install leaves out (``left_out``, or the plan's ``unserved``) that a
    ``with_reqs`` package needs. The closure is uv's (``uv pip compile`` against the sources the
    install really uses); without uv, or when uv cannot resolve it, the packages known to import
    torchvision."""
    from rocmkit.install.closure import closure_of
    from rocmkit.packages import canonical, requirement_name

    missing = {str(name): r for r in (*left_out, *plan.unserved) if (name := requirement_name(r)) is not None}
    if not missing or not with_reqs:
        return None
    wanted = {canonical(requirement_name(r) or r) for r in with_reqs}
    closure, _ = closure_of(installing + with_reqs, sources, target)
    for project, build in missing.items():
        if closure is not None and project in closure:
            version, via = closure[project]
            return project, build, tuple(v for v in via if v in wanted) or tuple(sorted(wanted)), version
        known = tuple(sorted(wanted & NEEDS_TORCHVISION))
        if closure is None and project == "torchvision" and known:
            return project, build, known, None
    return None


def refuse_unserved_needs(
    plan: Plan,
    with_reqs: tuple[str, ...],
    installing: tuple[str, ...],
    sources: Sources,
    target: PyEnv | str,
    left_out: tuple[str, ...],
) -> None:
    """Refuse, before anything changes, a ``--with`` package that needs a companion this install
    leaves out (no source it uses serves the build for this torch): installed anyway, it would pull
    that companion from another source, built for another torch (PyPI's CUDA torchvision beside a
    CPU torch: ``operator torchvision::nms does not exist``), and every import of it would fail."""
    from rocmkit.errors import NoPlanError

    need = unserved_need(plan, with_reqs, installing, sources, target, left_out)
    if need is None:
        return
    project, build, via, found = need
    where = ", ".join((*sources.index_urls, *sources.find_links)) or "the sources"
    other = f"; {where} would give {project} {found}, a build for another torch" if found else ""
    asked = ",".join(via)
    raise NoPlanError(
        f"--with {asked} needs {project}, and no source the install uses serves {build}{other}",
        (
            f"serve {build} from one of {where}"
            + (f" (the plan's index {plan.index_urls[0]} has it when it answers)" if plan.index_urls else ""),
            f"install without --with {asked}",
        ),
    )


def refuse_unserved_in_plan(plan: Plan, with_reqs: tuple[str, ...], fallbacks: Sequence[tuple[str, bool]]) -> None:
    """``resolve``'s side of :func:`refuse_unserved_needs`: the same refusal, from the sources that
    answer now (the plan's indexes, else the user's pip sources under --fallback-index)."""
    from rocmkit.install.closure import sources_now

    if not plan.unserved or not with_reqs or not plan.python:
        return
    refuse_unserved_needs(plan, with_reqs, plan.requirements, sources_now(plan, fallbacks), plan.python, ())
