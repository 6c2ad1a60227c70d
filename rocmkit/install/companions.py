"""``--with``: the companion packages installed beside torch under the guard, checked before
anything is installed."""

from __future__ import annotations

from rocmkit.errors import UsageError

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
