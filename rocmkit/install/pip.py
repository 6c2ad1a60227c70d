"""pip as an Installer.

pip runs from rocmkit's own interpreter with ``--python TARGET`` when that pip
is new enough (its version is known without starting a process), which re-runs
pip inside the target, so the target's own ``pip.conf`` still applies; else
from the target's own pip. Options rocmkit relies on: ``--python`` (22.3),
``--dry-run --report`` (22.2), ``--break-system-packages`` (23.0.1).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rocmkit.errors import ToolError, rerun
from rocmkit.install.base import (
    QUERY_TIMEOUT_S,
    Changes,
    InstallSpec,
    Limits,
    LineSink,
    Locked,
    Sources,
    base_env,
    option_args,
    requirement_args,
    revealed,
    uninstall_args,
)
from rocmkit.packages import canonical
from rocmkit.proc.runner import CommandResult, run
from rocmkit.pyenv import PyEnv

MIN_OWN_PIP = (22, 3)


def own_pip_usable() -> bool:
    """rocmkit's interpreter has a pip that understands ``--python``."""
    if importlib.util.find_spec("pip") is None:
        return False
    from importlib.metadata import PackageNotFoundError, version

    try:
        parts = version("pip").split(".")
        return (int(parts[0]), int(parts[1]) if len(parts) > 1 else 0) >= MIN_OWN_PIP
    except (PackageNotFoundError, ValueError):
        return False


def pip_available(target: PyEnv) -> bool:
    return target.has_pip or own_pip_usable()


class PipInstaller:
    name = "pip"

    def __init__(
        self, target: PyEnv, *, limits: Limits | None = None, environ: Mapping[str, str] | None = None
    ) -> None:
        if not pip_available(target):
            raise ToolError(
                f"pip is not available for {target.executable} nor for rocmkit's Python",
                (rerun("--installer", "uv"), f"{target.executable} -m ensurepip   # pip into the target"),
            )
        self.target = target
        self.own = own_pip_usable()
        self.limits = limits or Limits()
        self.env = base_env(environ)
        # PIP_CONSTRAINT outranks the venv's pip.conf: rocmkit's own runs use only the
        # constraints it passes (a stale guard must not block the install that replaces it).
        self.env.update(
            {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "PIP_CONSTRAINT": os.devnull}
        )

    def _pip(self, *args: str) -> list[str]:
        if self.own:
            head = [sys.executable, "-m", "pip", "--python", str(self.target.executable)]
        else:
            head = [str(self.target.executable), "-m", "pip"]
        return [*head, *args, "--timeout", f"{self.limits.net_timeout_s:g}", "--retries", "0"]

    @staticmethod
    def _source_args(sources: Sources) -> list[str]:
        """The source options; an index or link with credentials goes in :meth:`_source_env` instead."""
        real, secret = revealed(sources)
        args: list[str] = []
        if real.no_index or real.offline:
            args.append("--no-index")
        elif real.index_urls and not secret:
            args += ["--index-url", real.index_urls[0]]
            for url in real.index_urls[1:]:
                args += ["--extra-index-url", url]
        if not secret:
            for link in real.find_links:
                args += ["--find-links", link]
        return args

    @staticmethod
    def _source_env(sources: Sources) -> dict[str, str]:
        """The sources as pip's variables when a URL holds credentials (never its argv, which
        any user reads in ``ps`` and rocmkit quotes when a run fails); pip reads PIP_<OPTION>
        like the option itself, several values space-separated."""
        real, secret = revealed(sources)
        env: dict[str, str] = {}
        if not secret:
            return env
        if real.index_urls and not (real.no_index or real.offline):
            env["PIP_INDEX_URL"] = real.index_urls[0]
            if real.index_urls[1:]:
                env["PIP_EXTRA_INDEX_URL"] = " ".join(real.index_urls[1:])
        if real.find_links:
            env["PIP_FIND_LINKS"] = " ".join(real.find_links)
        return env

    def _spec_args(self, spec: InstallSpec) -> list[str]:
        return [*requirement_args(spec), *self._source_args(spec.sources), *option_args(spec)]

    def _env(self, spec: InstallSpec) -> dict[str, str]:
        env = {**self.env, **spec.env, **self._source_env(spec.sources)}
        if spec.build_constraints:
            # pip (before 25.3's --build-constraint) has no option for the isolated build
            # environment; that inner pip inherits the environment, so PIP_CONSTRAINT reaches it.
            env["PIP_CONSTRAINT"] = " ".join(str(f) for f in spec.build_constraints)
        return env

    def install(self, spec: InstallSpec, *, on_line: LineSink = None) -> CommandResult:
        args = ["install", *self._spec_args(spec)]
        if spec.reinstall:
            args.append("--force-reinstall")
        return run(self._pip(*args), timeout=self.limits.install_timeout_s, env=self._env(spec), on_line=on_line)

    def _report(self, spec: InstallSpec, *extra: str) -> tuple[list[dict[str, Any]], CommandResult]:
        with tempfile.TemporaryDirectory(prefix="rocmkit-pip-") as tmp:
            report = Path(tmp) / "report.json"
            argv = self._pip("install", "--dry-run", "--quiet", "--report", str(report), *extra)
            argv += self._spec_args(spec)
            result = run(argv, timeout=QUERY_TIMEOUT_S, env=self._env(spec))
            if not result.ok or not report.is_file():
                return [], result
            items = json.loads(report.read_text()).get("install", [])
        return list(items), result

    def dry_run(self, spec: InstallSpec) -> tuple[Changes, CommandResult]:
        items, result = self._report(spec)
        install = tuple((canonical(str(i["metadata"]["name"])), str(i["metadata"]["version"])) for i in items)
        return Changes(install=install), result

    def lock(self, spec: InstallSpec) -> tuple[list[Locked], CommandResult]:
        # --ignore-installed: the lock names the whole closure, whatever this venv holds now.
        items, result = self._report(spec, "--ignore-installed")
        locked: list[Locked] = []
        for item in items:
            meta = item["metadata"]
            info = item.get("download_info") or {}
            archive = info.get("archive_info") or {}
            hashes = archive.get("hashes") or {}
            if "sha256" not in hashes and str(archive.get("hash", "")).startswith("sha256="):
                hashes = {"sha256": str(archive["hash"]).split("=", 1)[1]}
            locked.append(
                Locked(
                    name=canonical(str(meta["name"])),
                    version=str(meta["version"]),
                    hashes=(str(hashes["sha256"]),) if "sha256" in hashes else (),
                )
            )
        return locked, result

    def uninstall(self, names: tuple[str, ...]) -> CommandResult:
        argv = self._pip("uninstall", "--yes", *names, *uninstall_args(self.target))
        return run(argv, timeout=QUERY_TIMEOUT_S, env=self.env)

    def download(self, spec: InstallSpec, dest: Path, *, on_line: LineSink = None) -> CommandResult:
        tags = [a for tag in spec.platforms for a in ("--platform", tag)]
        argv = self._pip("download", "--dest", str(dest), "--only-binary", ":all:", *tags, *self._spec_args(spec))
        return run(argv, timeout=self.limits.install_timeout_s, env=self._env(spec), on_line=on_line)
