"""``--with`` packages built from source against the environment's own torch.

pip and uv build an sdist in an isolated environment by default, and an sdist that needs torch
to build (flash-attn imports it in setup.py) then gets whatever torch the index offers: PyPI's
CUDA build, built against and sometimes installed over the ROCm one. Here the build runs without
isolation, in the target environment, after its build requirements are installed there (under
the guard's constraints, so they cannot move torch either), and torch's version and files are
compared before and after: a build that changed torch fails, and the install is restored.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rocmkit.errors import ToolError
from rocmkit.install.base import Installer, InstallSpec, LineSink
from rocmkit.plan import WithPackage
from rocmkit.proc.runner import CommandResult
from rocmkit.pyenv import PyEnv
from rocmkit.util.say import Say


@dataclass(frozen=True, kw_only=True)
class TorchStamp:
    """torch as installed: its version, and every file its RECORD lists (size and mtime)."""

    version: str | None
    files: str  # sha256 over (path, size, mtime_ns) of each listed file, "" when not installed
    count: int

    def describe(self) -> str:
        return f"torch {self.version} ({self.count} files)" if self.version else "no torch"


def torch_stamp(target: PyEnv) -> TorchStamp:
    """Read from the target's site directories (torch is never imported here): a file
    rewritten or replaced changes its size or modification time."""
    for site in target.site_dirs:
        for info in sorted(Path(site).glob("torch-*.dist-info")):
            record = info / "RECORD"
            meta = info / "METADATA"
            if not record.is_file() or not meta.is_file():
                continue
            version = next(
                (line.split(":", 1)[1].strip() for line in meta.read_text(errors="replace").splitlines()
                 if line.startswith("Version:")),
                None,
            )
            digest = hashlib.sha256()
            count = 0
            for line in record.read_text(errors="replace").splitlines():
                rel = line.rsplit(",", 2)[0]
                if not rel:
                    continue
                path = Path(site) / rel
                try:
                    st = os.stat(path)
                except OSError:
                    digest.update(f"{rel}\0missing\n".encode())
                    continue
                digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
                count += 1
            return TorchStamp(version=version, files=digest.hexdigest(), count=count)
    return TorchStamp(version=None, files="", count=0)


def build_against_torch(
    package: WithPackage,
    target: PyEnv,
    installer: Installer,
    base: InstallSpec,
    echo: Say,
    on_line: LineSink,
    failed: Callable[[str, CommandResult], ToolError],
) -> None:
    """Install ``package``'s build requirements, then build and install it without isolation.
    ``base`` gives the sources and the guard's constraints."""
    before = torch_stamp(target)
    if before.version is None:
        raise ToolError(
            f"{package.name} is built against this environment's torch, and it has none",
            "install torch first (rocmkit install without --no-...)",
        )
    # The sources and the guard's constraints of the main install; nothing else of it.
    common = InstallSpec(
        sources=base.sources, constraints=base.constraints, break_system_packages=base.break_system_packages
    )
    if package.build_requires:
        echo(f"rocmkit: {package.name}: installing what its build imports: {' '.join(package.build_requires)}")
        result = installer.install(dataclasses.replace(common, requirements=package.build_requires), on_line=on_line)
        if not result.ok:
            raise failed(f"{installer.name} (build requirements of {package.name})", result)
    settings = " ".join(f"{k}={v}" for k, v in package.build_env.items())
    echo(
        f"rocmkit: building {package.requirement} against this environment's {before.describe()}, "
        f"without build isolation{f' ({settings})' if settings else ''}"
    )
    spec = dataclasses.replace(
        common, requirements=(package.requirement,), no_build_isolation=True, env=package.build_env
    )
    result = installer.install(spec, on_line=on_line)
    if not result.ok:
        raise failed(f"{installer.name} (building {package.name})", result)
    after = torch_stamp(target)
    if after != before:
        raise ToolError(
            f"building {package.name} changed torch: {before.describe()} before, {after.describe()} after",
            f"the build of {package.name} installed another torch; report it with the output above",
        )
    echo(f"rocmkit: {package.name} built against {after.describe()}; torch's version and files are unchanged")
