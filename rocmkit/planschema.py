"""The schema of a plan file (``rocmkit.plan/1``), checked field by field on load.

A plan (``--plan``, the ``# rocmkit-plan:`` line of a lock, a doctor report's
plan) may come from another person. What it may carry is narrow:

- ``requirements`` (and ``triton``, ``companions``): PEP 508 strings, read with
  ``packaging``; never pip options (``--index-url ...``, ``-e``), and a direct
  URL reference only over https;
- ``index_urls``: http(s) or file URLs, checked again for https before use
  (:func:`rocmkit.install.sources_policy.check_source_urls`);
- ``env``: names from :data:`ENV_ALLOW` (what resolve itself emits) unless the
  user names more with ``--allow env=NAME``, always shell identifiers, and values
  without control characters. They are exported by ``<venv>/bin/activate``:
  ``LD_PRELOAD`` or ``PATH`` from a stranger's plan would run their code.

Every error is one :class:`DataError` line naming the field.
"""

from __future__ import annotations

import re
from typing import Any

from rocmkit.errors import DataError

FIX = "regenerate it with `rocmkit resolve --json`"

# What resolve emits, and the visibility variables of every runtime.
ENV_ALLOW_EXACT = frozenset(
    {"HSA_OVERRIDE_GFX_VERSION", "FLASH_ATTENTION_TRITON_AMD_ENABLE", "HSA_ENABLE_DXG_DETECTION"}
)
# What a ``--with`` source build may set for its compiler (matrices/companions.toml's build_env):
# a plan's build_env runs in the build, so ``LD_PRELOAD`` from a stranger's plan would run code.
BUILD_ENV_ALLOW = frozenset(
    {"GPU_ARCHS", "PYTORCH_ROCM_ARCH", "MAX_JOBS", "FLASH_ATTENTION_TRITON_AMD_ENABLE", "TORCH_CUDA_ARCH_LIST"}
)
WITH_HOW = ("wheel", "source", "index")
ENV_ALLOW_PATTERN = re.compile(r"^[A-Z][A-Z0-9_]*_VISIBLE_DEVICES$")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# No way a value could need these; newlines and NULs only serve to break out of a file.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_ITEMS = 256
MAX_TEXT = 4096


def env_name_allowed(name: str, allow: frozenset[str] = frozenset()) -> bool:
    return bool(IDENTIFIER.match(name)) and (
        name in ENV_ALLOW_EXACT or bool(ENV_ALLOW_PATTERN.match(name)) or name in allow
    )


def _text(value: Any, field: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise DataError(f"plan field {field!r} must be a string, not {type(value).__name__}", FIX)
    if len(value) > MAX_TEXT or _CONTROL.search(value):
        raise DataError(f"plan field {field!r} holds control characters or is too long", FIX)
    return value


def _texts(value: Any, field: str, *, free: bool = False) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or len(value) > MAX_ITEMS:
        raise DataError(f"plan field {field!r} must be a list of at most {MAX_ITEMS} strings", FIX)
    out = []
    for i, item in enumerate(value):
        if free and isinstance(item, str) and len(item) <= MAX_TEXT * 4:
            out.append(item)  # prose (reasons, warnings): shown, never executed
            continue
        text = _text(item, f"{field}[{i}]")
        assert text is not None
        out.append(text)
    return tuple(out)


def check_requirement(text: str, field: str) -> str:
    """A PEP 508 requirement, not a pip option; a URL reference only over https."""
    from packaging.requirements import InvalidRequirement, Requirement

    if text.lstrip().startswith("-"):
        raise DataError(f"plan field {field!r} is a pip option ({text[:60]!r}), not a requirement", FIX)
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise DataError(
            f"plan field {field!r}: {text[:60]!r} is not a PEP 508 requirement ({exc})", FIX
        ) from exc
    if req.url is not None and not req.url.startswith("https://"):
        raise DataError(f"plan field {field!r}: {text[:60]!r} points at a non-https URL", FIX)
    return text


def check_url(url: str, field: str) -> str:
    if not re.match(r"^(https?|file)://[^\s]+$", url):
        raise DataError(f"plan field {field!r}: {url[:80]!r} is not an http(s) or file URL", FIX)
    return url


def check_env(value: Any, allow: frozenset[str]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_ITEMS:
        raise DataError("plan field 'env' must be an object of variable names to strings", FIX)
    env: dict[str, str] = {}
    for name, val in value.items():
        if not isinstance(name, str) or not IDENTIFIER.match(name):
            raise DataError(
                f"plan field 'env' has a key that is not a variable name: {str(name)[:60]!r}", FIX
            )
        if not env_name_allowed(name, allow):
            raise DataError(
                f"plan field 'env' sets {name}, which rocmkit does not set from a plan "
                "(only HSA_OVERRIDE_GFX_VERSION and *_VISIBLE_DEVICES)",
                f"if you trust this plan, pass --allow env={name}",
            )
        text = _text(val, f"env.{name}")
        assert text is not None
        env[name] = text
    return env


def check_with_packages(value: Any, allow: frozenset[str]) -> list[dict[str, Any]]:
    """``with_packages``: each item's fields checked; their build_env names from
    :data:`BUILD_ENV_ALLOW` (or ``--allow env=NAME``)."""
    if value is None:
        return []
    if not isinstance(value, list | tuple) or len(value) > MAX_ITEMS:
        raise DataError(f"plan field 'with_packages' must be a list of at most {MAX_ITEMS} objects", FIX)
    keys = {"name", "requirement", "how", "index_url", "build_env", "build_requires", "pins_torch"}
    out: list[dict[str, Any]] = []
    for i, item in enumerate(value):
        where = f"with_packages[{i}]"
        if not isinstance(item, dict) or not set(item) <= keys or "name" not in item or "requirement" not in item:
            raise DataError(f"plan field {where!r} must be an object with name and requirement", FIX)
        how = item.get("how", "index")
        if how not in WITH_HOW:
            raise DataError(f"plan field '{where}.how' is {str(how)[:20]!r}, not one of {', '.join(WITH_HOW)}", FIX)
        index_url = _text(item.get("index_url"), f"{where}.index_url", optional=True)
        build_env = item.get("build_env") or {}
        if not isinstance(build_env, dict) or len(build_env) > MAX_ITEMS:
            raise DataError(f"plan field '{where}.build_env' must be an object of names to strings", FIX)
        for name in build_env:
            if not isinstance(name, str) or not IDENTIFIER.match(name) or (
                name not in BUILD_ENV_ALLOW and name not in allow
            ):
                raise DataError(
                    f"plan field '{where}.build_env' sets {str(name)[:60]!r}, which rocmkit does not set for a build",
                    f"if you trust this plan, pass --allow env={str(name)[:60]}",
                )
            _text(build_env[name], f"{where}.build_env.{name}")
        pins = item.get("pins_torch", False)
        if not isinstance(pins, bool):
            raise DataError(f"plan field '{where}.pins_torch' must be true or false", FIX)
        out.append(
            {
                "name": _text(item["name"], f"{where}.name"),
                "requirement": check_requirement(str(_text(item["requirement"], f"{where}.requirement")), where),
                "how": how,
                "index_url": check_url(index_url, f"{where}.index_url") if index_url else None,
                "build_env": dict(build_env),
                "build_requires": tuple(
                    check_requirement(r, f"{where}.build_requires[{j}]")
                    for j, r in enumerate(_texts(item.get("build_requires"), f"{where}.build_requires"))
                ),
                "pins_torch": pins,
            }
        )
    return out


def check_plan_dict(data: dict[str, Any], allow_env: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The keyword arguments of :class:`rocmkit.plan.Plan`, checked."""
    if "backend" not in data:
        raise DataError("plan field 'backend' is missing", FIX)
    requirements = tuple(
        check_requirement(r, f"requirements[{i}]")
        for i, r in enumerate(_texts(data.get("requirements"), "requirements"))
    )
    triton = _text(data.get("triton"), "triton", optional=True)
    if triton is not None:
        check_requirement(triton, "triton")
    companions = _texts(data.get("companions"), "companions")
    stray = [c for c in companions if c not in requirements]
    if stray:
        raise DataError(f"plan field 'companions' names {stray[0]!r}, which is not in 'requirements'", FIX)
    backend = _text(data["backend"], "backend")
    if backend is None or not re.match(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$", backend):
        raise DataError(f"plan field 'backend' is not a backend name: {str(backend)[:40]!r}", FIX)
    return {
        "backend": backend,
        "channel": _text(data.get("channel", "stable"), "channel"),
        "torch_version": _text(data.get("torch_version"), "torch_version", optional=True),
        "triton": triton,
        "requirements": requirements,
        "index_urls": tuple(
            check_url(u, f"index_urls[{i}]")
            for i, u in enumerate(_texts(data.get("index_urls"), "index_urls"))
        ),
        "env": check_env(data.get("env"), allow_env),
        "warnings": _texts(data.get("warnings"), "warnings", free=True),
        "reasons": _texts(data.get("reasons"), "reasons", free=True),
        "python": _text(data.get("python"), "python", optional=True),
        "target_archs": _texts(data.get("target_archs"), "target_archs"),
        "unsupported_gpus": _texts(data.get("unsupported_gpus"), "unsupported_gpus", free=True),
        "companions": companions,
        "fallback": tuple(
            check_requirement(r, f"fallback[{i}]") for i, r in enumerate(_texts(data.get("fallback"), "fallback"))
        ),
        "unserved": tuple(
            check_requirement(r, f"unserved[{i}]") for i, r in enumerate(_texts(data.get("unserved"), "unserved"))
        ),
        "framework": _framework(data.get("framework", "torch")),
        "jax_version": _text(data.get("jax_version"), "jax_version", optional=True),
        "with_packages": check_with_packages(data.get("with_packages"), allow_env),
        "platform": _platform(data.get("platform")),
    }


PLATFORMS = ("linux-x86_64", "linux-aarch64", "wsl2-x86_64", "wsl2-aarch64")


def _platform(value: Any) -> str | None:
    if value is not None and value not in PLATFORMS:
        raise DataError(f"plan field 'platform' is not one of {', '.join(PLATFORMS)}: {str(value)[:40]!r}", FIX)
    return None if value is None else str(value)


FRAMEWORKS = ("torch", "jax", "torch-xla", "torch+jax")


def _framework(value: Any) -> str:
    if value not in FRAMEWORKS:
        raise DataError(f"plan field 'framework' is not one of {', '.join(FRAMEWORKS)}: {str(value)[:40]!r}", FIX)
    return str(value)
