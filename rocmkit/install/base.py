"""One interface for pip and uv: what to install, from where, and what it would change."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from rocmkit.proc.runner import CommandResult
from rocmkit.pyenv import PyEnv

# Per-request network timeout handed to pip/uv: a dead index fails in seconds,
# never in pip's default 15 s x 5 retries per file.
DEFAULT_NET_TIMEOUT_S = 15.0
# Overall limit of one pip/uv run (a real ROCm torch wheel is ~4 GB).
DEFAULT_INSTALL_TIMEOUT_S = 3600.0
# Limit of a query run (dry run, report, compile, uninstall).
QUERY_TIMEOUT_S = 600.0

# Variables a user's shell may carry that would change what pip/uv do behind
# rocmkit's back (an old guard from another venv, a forced index).
_DROPPED_ENV = ("PIP_CONSTRAINT", "UV_CONSTRAINT", "UV_BUILD_CONSTRAINT", "PIP_REQUIRE_VIRTUALENV", "PYTHONPATH")


@dataclass(frozen=True, kw_only=True)
class Sources:
    """Where packages come from. The first index is the main one, the rest extras."""

    index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    no_index: bool = False
    offline: bool = False  # never touch the network (wheelhouse installs, restores)


@dataclass(frozen=True, kw_only=True)
class InstallSpec:
    requirements: tuple[str, ...] = ()
    requirement_files: tuple[Path, ...] = ()
    sources: Sources = Sources()
    constraints: tuple[Path, ...] = ()
    no_deps: bool = False
    require_hashes: bool = False
    reinstall: bool = False
    break_system_packages: bool = False
    # A source build sees only this torch: either no build isolation (its build requirements
    # installed first), or an isolated build whose torch these constraint files pin.
    no_build_isolation: bool = False
    build_constraints: tuple[Path, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # set for this run only (GPU_ARCHS, MAX_JOBS)
    # `pip download --platform` tags: a wheelhouse for nodes of another CPU than this one.
    platforms: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Changes:
    """What an install would do: distributions added/upgraded, and removed."""

    install: tuple[tuple[str, str], ...] = ()  # (canonical name, version)
    remove: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
class Locked:
    """One pinned requirement with the sha256 hashes of its acceptable files."""

    name: str
    version: str
    hashes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Limits:
    net_timeout_s: float = DEFAULT_NET_TIMEOUT_S
    install_timeout_s: float = DEFAULT_INSTALL_TIMEOUT_S


LineSink = Callable[[str], None] | None


class Installer(Protocol):
    """pip or uv, driving one target environment."""

    name: str
    target: PyEnv

    def dry_run(self, spec: InstallSpec) -> tuple[Changes, CommandResult]: ...

    def install(self, spec: InstallSpec, *, on_line: LineSink = None) -> CommandResult: ...

    def uninstall(self, names: tuple[str, ...]) -> CommandResult: ...

    def lock(self, spec: InstallSpec) -> tuple[list[Locked], CommandResult]: ...


def requirement_args(spec: InstallSpec) -> list[str]:
    """What to install, as pip and uv both spell it."""
    args = [*spec.requirements]
    for req_file in spec.requirement_files:
        args += ["-r", str(req_file)]
    return args


def option_args(spec: InstallSpec) -> list[str]:
    """The install options pip and uv spell alike (the sources are not among them)."""
    args: list[str] = []
    for constraint in spec.constraints:
        args += ["--constraint", str(constraint)]
    if spec.no_deps:
        args.append("--no-deps")
    if spec.require_hashes:
        args.append("--require-hashes")
    if spec.break_system_packages:
        args.append("--break-system-packages")
    if spec.no_build_isolation:
        args.append("--no-build-isolation")
    return args


def revealed(sources: Sources) -> tuple[Sources, bool]:
    """The sources with their real URLs (masked credentials put back, :func:`rocmkit.util.redact.reveal`),
    and whether any URL carries credentials: then the installer takes the URLs from its
    environment (``PIP_INDEX_URL``, ``UV_INDEX``), never from its argument list, which every
    user of the machine can read in ``ps`` and which rocmkit prints when a run fails."""
    from rocmkit.util.redact import has_credentials, reveal

    real = Sources(
        index_urls=tuple(reveal(u) for u in sources.index_urls),
        find_links=tuple(reveal(u) for u in sources.find_links),
        no_index=sources.no_index,
        offline=sources.offline,
    )
    secret = any(has_credentials(u) for u in (*real.index_urls, *real.find_links))
    return real, secret


def uninstall_args(target: PyEnv) -> list[str]:
    # pip and uv refuse to uninstall from a PEP 668 Python without it; rocmkit only
    # reaches an uninstall there after the user allowed changing it.
    return ["--break-system-packages"] if target.externally_managed is not None else []




# Where pip and uv would find packages on their own (environment or config files).
# rocmkit passes every source on the command line, after checking it
# (indexcheck.decide_sources, which names any substitute loudly). Left in place,
# these would add an index behind that check: an unreachable --index-base mirror
# would be silently replaced by the index in the user's pip configuration.
_SOURCE_ENV = (
    "PIP_INDEX_URL",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_INDEX",
    "UV_DEFAULT_INDEX",
    "UV_FIND_LINKS",
)
# Set to a blank: an environment value outranks pip's config files, and a blank
# splits to no URL at all (pip appends the command line's --extra-index-url to
# it; an empty string would be ignored). Find-links stay: a local wheel of the
# exact pinned version is the same build, and a lock checks its hash.
_BLANKED_ENV = ("PIP_EXTRA_INDEX_URL",)


def base_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if environ is None else environ)
    for var in (*_DROPPED_ENV, *_SOURCE_ENV):
        env.pop(var, None)
    for var in _BLANKED_ENV:
        env[var] = " "
    # uv.toml / pyproject [tool.uv] may name indexes too; rocmkit passes its own.
    env["UV_NO_CONFIG"] = "1"
    return env
