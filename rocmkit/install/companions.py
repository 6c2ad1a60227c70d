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
