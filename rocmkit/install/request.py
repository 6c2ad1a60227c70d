"""What ``rocmkit install`` was asked to do: one frozen request, checked here (not in the CLI),
checked here; :mod:`rocmkit.install.prepare` reads its inputs once and picks the target and the
plan, and :mod:`rocmkit.install.carry` carries it out.

Messages go to the ``say`` callback (the CLI's stderr); the outcome is returned (its data).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rocmkit.errors import UsageError

if TYPE_CHECKING:
    from rocmkit.install.flow import Options
    from rocmkit.install.installers import InstallerChoice


@dataclass(frozen=True, kw_only=True)
class InstallRequest:
    venv: Path | None = None
    venv_base: str | None = None  # the Python a missing --venv is made from
    interpreter: Path | None = None
    plan_file: Path | None = None
    capture: Path | None = None
    torch: str | None = None
    rocm: str | None = None
    cuda: str | None = None  # "12.8" or "cu128": a CUDA build whatever the GPUs (an image build)
    channel: str = "stable"
    cpu: bool = False
    framework: str = "torch"  # torch | jax | torch-xla | torch,jax
    jax_version: str | None = None
    strict_data: bool = False  # resolve only confirmed builds
    index_base: str | None = None
    installer: str = "auto"
    with_packages: tuple[str, ...] = ()
    no_companions: bool = False
    dry_run: bool = False
    project: Path | None = None  # --project DIR: write the plan into DIR/pyproject.toml
    lock_file: Path | None = None
    from_lock: Path | None = None
    download_only: bool = False
    wheelhouse: Path | None = None
    no_guard: bool = False
    no_verify: bool = False
    no_compile: bool = False
    break_system_packages: bool = False
    net_timeout: float = 15.0
    install_timeout: float = 3600.0
    probe_timeout: float = 5.0
    allow_env: tuple[str, ...] = ()
    allow_insecure_index: bool = False
    fallback_index: bool = False
    # --upgrade: plan afresh even where the venv holds a torch rocmkit installed (else kept)
    upgrade: bool = False
    build: tuple[str, ...] = ()  # --build: --with packages built from source rather than paired by wheel
    allow_redirect: tuple[str, ...] = ()  # hosts the live index check may follow a redirect to
    quiet: bool = False
    as_json: bool = False

    def __post_init__(self) -> None:
        if self.installer not in ("auto", "uv", "pip"):
            raise UsageError(f"--installer {self.installer!r} is not auto, uv or pip", "pick one")
        given = [
            n
            for n, v in (
                ("--plan", self.plan_file),
                ("--from-lock", self.from_lock),
                ("--wheelhouse", self.wheelhouse if not self.download_only else None),
            )
            if v
        ]
        if len(given) > 1:
            raise UsageError(f"{' and '.join(given)} both say what to install", "pass only one of them")
        if self.download_only and self.wheelhouse is None:
            raise UsageError("--download-only needs --wheelhouse DIR", "add --wheelhouse DIR")
        if self.project is not None and (
            self.lock_file or self.from_lock or self.wheelhouse or self.download_only or self.venv or self.interpreter
        ):
            raise UsageError(
                "--project writes a plan into a pyproject.toml; it does not combine with an install target, "
                "a lock or a wheelhouse",
                "run it on its own: rocmkit export uv-project --project DIR [--with PKG] [--dry-run]",
            )
        if self.project is not None and not (self.project / "pyproject.toml").is_file():
            raise UsageError(f"--project {self.project}: no pyproject.toml there", "name the folder of a uv project")
        if self.lock_file and (self.from_lock or self.wheelhouse or self.download_only):
            raise UsageError(
                "--lock writes a lock from a plan; it does not combine with --from-lock/--wheelhouse"
            )
        resolving = (
            self.torch or self.rocm or self.cuda or self.cpu or self.capture or self.strict_data
            or self.framework != "torch" or self.jax_version
        )
        if self.installs_exact_list and resolving:
            raise UsageError(
                "a lock or wheelhouse fixes the builds; --torch/--backend/--strict-data/--capture do not apply"
                " (nor --framework)"
            )
        for name, seconds in (
            ("--net-timeout", self.net_timeout),
            ("--timeout", self.install_timeout),
            ("--probe-timeout", self.probe_timeout),
        ):
            if not seconds > 0:
                raise UsageError(
                    f"{name} {seconds:g} is not a positive number of seconds", f"give {name} a value above 0"
                )
        if self.venv is not None and self.interpreter is not None:
            raise UsageError("--venv and --interpreter name two targets", "pass only one of them")
        if self.plan_file and resolving:
            # Silently installing the saved plan would ignore what the user asked for.
            raise UsageError(
                "a plan file fixes the builds; --torch/--backend/--strict-data/--capture do not apply"
                " (nor --framework)",
                ("drop them", "drop --plan to resolve afresh"),
            )
        if self.no_companions and self.installs_exact_list:
            raise UsageError(
                "a lock or wheelhouse installs its exact list; --skip companions does not apply",
                "make the lock or wheelhouse with --skip companions instead",
            )
        if self.venv is not None:
            check_venv_path(self.venv)
        if self.venv_base is not None:
            check_base_python(self.venv_base)
        from rocmkit.install.companions import with_packages_of

        object.__setattr__(
            self, "with_packages", with_packages_of(self.with_packages, companions=not self.no_companions)
        )
        from rocmkit.companions.wanted import build_names

        object.__setattr__(self, "build", build_names(self.build, self.with_packages))

    @property
    def installs_exact_list(self) -> bool:
        """A lock or a wheelhouse says exactly what to install (no resolving)."""
        return bool(self.from_lock or (self.wheelhouse and not self.download_only))

    @property
    def read_only(self) -> bool:
        """Locking, downloading and writing a project change no environment."""
        return bool(self.lock_file or self.download_only or self.project)

    @property
    def allowed_env(self) -> frozenset[str]:
        return frozenset(self.allow_env)

    def options(self, environ: Mapping[str, str] | None = None) -> Options:
        """The options record the install runs with; ``environ`` (the session's) supplies
        ``ROCMKIT_ALLOW_INSECURE_INDEX`` where the flag is not given."""
        from rocmkit.install import flow
        from rocmkit.install.base import Limits
        from rocmkit.install.sources_policy import ALLOW_ENV

        return flow.Options(
            installer=cast("InstallerChoice", self.installer),
            dry_run=self.dry_run,
            with_packages=self.with_packages,
            guard=not self.no_guard,
            verify=not self.no_verify,
            compile_bytecode=not self.no_compile,
            break_system_packages=self.break_system_packages,
            limits=Limits(net_timeout_s=self.net_timeout, install_timeout_s=self.install_timeout),
            probe_timeout_s=self.probe_timeout,
            show_output=not self.quiet,
            companions=not self.no_companions,
            allow_insecure_index=self.allow_insecure_index
            or (environ or os.environ).get(ALLOW_ENV, "") not in ("", "0"),
            fallback_index=self.fallback_index,
        )


# Kernel and device file systems: nothing can be made there, whatever the permissions say
# (root may "write" to /proc's folders as far as access(2) is concerned).
_VIRTUAL_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))


def check_venv_path(venv: Path) -> None:
    """``--venv`` can be a virtual environment: an existing folder, or a path whose nearest
    existing parent is a folder on a real file system (checked before a dry run says it
    "would create" it, and before a real run tries)."""
    path = venv.absolute()
    resolved = path.resolve()
    under = next((root for root in _VIRTUAL_ROOTS if resolved == root or resolved.is_relative_to(root)), None)
    if under is not None:
        raise UsageError(
            f"--venv {venv} is under {under}, a kernel file system: no environment can be made there",
            "pass a folder on a disk, e.g. --venv ~/venvs/torch",
        )
    if path.exists() and not path.is_dir():
        raise UsageError(f"--venv {venv} is a file, not a folder", "pass a folder (made if missing)")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise UsageError(f"--venv {venv}: {parent} is a file, not a folder", "pass a path under a folder")


def check_base_python(value: str) -> None:
    """``--python``: an interpreter's path, or a CPython 3 version uv can find (3.12, 3.12.4)."""
    import re

    if "/" in value:
        path = Path(value)
        if not path.is_file() or not os.access(path, os.X_OK):
            raise UsageError(
                f"--python {value}: no Python interpreter there", "pass an existing python, or a version like 3.12"
            )
        return
    if not re.fullmatch(r"3\.[0-9]{1,3}(\.[0-9]{1,3})?", value):
        raise UsageError(
            f"--python {value!r} is neither a path nor a Python 3 version",
            "pass a version like 3.12, or the path of a python",
        )
