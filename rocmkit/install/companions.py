"""``--with``: the companion packages installed beside torch under the guard, checked before
anything is installed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocmkit.errors import UsageError

if TYPE_CHECKING:
    from rocmkit.plan import Plan

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
                f"--with {req.name} needs torchvision, and --no-companions leaves it out: pip would fetch "
                "a torchvision built for another torch",
                "drop --no-companions so the torchvision built for this torch is installed",
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
                "drop it from --with, or resolve another plan (e.g. --torch) that fits it",
            )
