"""``--with a,b --with c``: the packages asked for beside torch, as PEP 508 requirements, checked
before anything is resolved or installed (``rocmkit resolve --with`` and ``rocmkit install --with``)."""

from __future__ import annotations

from rocmkit.errors import UsageError


def requirements_of(values: tuple[str, ...]) -> tuple[str, ...]:
    """Each comma-separated item as a requirement string, in order, without repeats."""
    from packaging.requirements import InvalidRequirement, Requirement

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
            out.append(str(req))
    return tuple(dict.fromkeys(out))


def build_names(values: tuple[str, ...], wanted: tuple[str, ...]) -> tuple[str, ...]:
    """``--build a,b``: canonical names, each one of the ``--with`` packages (else it would do nothing)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    asked = {str(canonicalize_name(Requirement(w).name)) for w in wanted}
    out: list[str] = []
    for value in values:
        for item in (v.strip() for v in value.split(",")):
            if not item:
                continue
            name = str(canonicalize_name(item))
            if name not in asked:
                raise UsageError(
                    f"--build {item}: it is not among the --with packages", f"add --with {item}, or drop --build {item}"
                )
            out.append(name)
    return tuple(dict.fromkeys(out))
