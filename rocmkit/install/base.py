"""One interface for pip and uv: what to install, from where, and what it would change."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rocmkit.install.venv import Target
from rocmkit.runner import CommandResult

# Per-request network timeout handed to pip/uv: a dead index fails in seconds,
# never in pip's default 15 s x 5 retries per file.
DEFAULT_NET_TIMEOUT_S = 15.0
# Overall limit of one pip/uv run (a real ROCm torch wheel is ~4 GB).
DEFAULT_INSTALL_TIMEOUT_S = 3600.0
# Limit of a query run (dry run, report, compile, uninstall).
QUERY_TIMEOUT_S = 600.0

# Variables a user's shell may carry that would change what pip/uv do behind
# rocmkit's back (an old guard from another venv, a forced index).
_DROPPED_ENV = ("PIP_CONSTRAINT", "UV_CONSTRAINT", "PIP_REQUIRE_VIRTUALENV", "PYTHONPATH")


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
    target: Target

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
    return args


def uninstall_args(target: Target) -> list[str]:
    # pip and uv refuse to uninstall from a PEP 668 Python without it; rocmkit only
    # reaches an uninstall there after the user allowed changing it.
    return ["--break-system-packages"] if target.externally_managed is not None else []


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def base_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if environ is None else environ)
    for var in _DROPPED_ENV:
        env.pop(var, None)
    return env
