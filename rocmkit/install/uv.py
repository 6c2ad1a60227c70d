"""uv as an Installer (``uv pip ...`` against the target interpreter)."""

from __future__ import annotations

import re
from collections.abc import Mapping

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
from rocmkit.install.venv import find_uv
from rocmkit.packages import parse_pin
from rocmkit.proc.runner import CommandResult, run
from rocmkit.pyenv import PyEnv

# `--index` / `--default-index` (uv 0.4.23).
MIN_UV = (0, 4, 23)

# " + torch==2.5.1+rocm6.2" / " - torch==2.4.0" in `uv pip install --dry-run` output.
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


class UvInstaller:
    name = "uv"

    def __init__(
        self, target: PyEnv, *, limits: Limits | None = None, environ: Mapping[str, str] | None = None
    ) -> None:
        self.env = base_env(environ)
        uv = find_uv(self.env)
        if uv is None:
            raise ToolError("uv is not installed", ("pip install uv", rerun("--installer", "pip")))
        self.uv = uv
        self._check_version()
        self.target = target
        self.limits = limits or Limits()
        self.env.update(
            {
                "UV_HTTP_TIMEOUT": f"{int(max(1, self.limits.net_timeout_s))}",
                "UV_HTTP_RETRIES": "0",
                "UV_NO_PROGRESS": "1",
            }
        )

    def _check_version(self) -> None:
        result = run([self.uv, "--version"], timeout=30, env=self.env)
        match = re.search(r"(\d+)\.(\d+)\.(\d+)", result.stdout)
        if not result.ok or match is None:
            raise ToolError(f"cannot tell the version of {self.uv}: {result.describe()}", "reinstall uv")
        found = tuple(int(g) for g in match.groups())
        if found < MIN_UV:
            raise ToolError(
                f"uv {match.group(0)} is too old (rocmkit needs {'.'.join(map(str, MIN_UV))} for --index)",
                ("pip install -U uv", rerun("--installer", "pip")),
            )

    @staticmethod
    def _source_args(sources: Sources) -> list[str]:
        """The source options; an index or link with credentials goes in :meth:`_source_env` instead."""
        real, secret = revealed(sources)
        args: list[str] = []
        if real.no_index or real.offline:
            args.append("--no-index")
        elif real.index_urls and not secret:
            # uv ranks --extra-index-url above --index-url and stops at the first index
            # holding a name; the plan's order (torch's index first) must win, so each
            # index is named in order with --index, the last one as the default.
            *ranked, last = real.index_urls
            for url in ranked:
                args += ["--index", url]
            args += ["--default-index", last]
        if real.offline:
            args.append("--offline")
        if not secret:
            for link in real.find_links:
                args += ["--find-links", link]
        return args

    @staticmethod
    def _source_env(sources: Sources) -> dict[str, str]:
        """The sources as uv's variables when a URL holds credentials (never its argv):
        UV_INDEX is --index's (space-separated, earlier ones first), UV_DEFAULT_INDEX
        --default-index's, UV_FIND_LINKS --find-links' (comma-separated)."""
        real, secret = revealed(sources)
        env: dict[str, str] = {}
        if not secret:
            return env
        if real.index_urls and not (real.no_index or real.offline):
            *ranked, last = real.index_urls
            if ranked:
                env["UV_INDEX"] = " ".join(ranked)
            env["UV_DEFAULT_INDEX"] = last
        if real.find_links:
            env["UV_FIND_LINKS"] = ",".join(real.find_links)
        return env

    def _spec_args(self, spec: InstallSpec) -> list[str]:
        build = [a for f in spec.build_constraints for a in ("--build-constraints", str(f))]
        return [
            "--python",
            str(self.target.executable),
            *requirement_args(spec),
            *self._source_args(spec.sources),
            *option_args(spec),
            *build,
        ]

    def _env(self, spec: InstallSpec) -> dict[str, str]:
        return {**self.env, **spec.env, **self._source_env(spec.sources)}

    def install(self, spec: InstallSpec, *, on_line: LineSink = None) -> CommandResult:
        argv = [self.uv, "pip", "install", *self._spec_args(spec)]
        if spec.reinstall:
            argv.append("--reinstall")
        return run(argv, timeout=self.limits.install_timeout_s, env=self._env(spec), on_line=on_line)

    def dry_run(self, spec: InstallSpec) -> tuple[Changes, CommandResult]:
        result = run(
            [self.uv, "pip", "install", "--dry-run", *self._spec_args(spec)],
            timeout=QUERY_TIMEOUT_S,
            env=self._env(spec),
        )
        install: list[tuple[str, str]] = []
        remove: list[tuple[str, str]] = []
        for line in (result.stdout + "\n" + result.stderr).splitlines():
            # " + torch==2.5.1", " - torch==2.4.0", " ~ torch==2.5.1": what uv would change.
            sign, _, rest = line.strip().partition(" ")
            pin = parse_pin(rest) if sign in ("+", "-", "~") else None
            if pin is not None:
                (remove if sign == "-" else install).append((pin.project, pin.version))
        return Changes(install=tuple(install), remove=tuple(remove)), result

    def lock(self, spec: InstallSpec) -> tuple[list[Locked], CommandResult]:
        reqs = "\n".join(spec.requirements) + "\n"
        argv = [
            self.uv,
            "pip",
            "compile",
            "-",
            "--generate-hashes",
            "--no-header",
            "--no-annotate",
            "--quiet",
            *[a for a in self._spec_args(InstallSpec(sources=spec.sources, constraints=spec.constraints))],
        ]
        result = run(argv, timeout=QUERY_TIMEOUT_S, env=self._env(spec), input_text=reqs)
        locked: list[Locked] = []
        if not result.ok:
            return locked, result
        name = version = ""
        hashes: list[str] = []
        for line in result.stdout.splitlines():
            pin = parse_pin(line) if not line[:1].isspace() else None
            if pin:
                if name:
                    locked.append(Locked(name=name, version=version, hashes=tuple(hashes)))
                name, version, hashes = pin.project, pin.version, []
            hashes += _HASH.findall(line)
        if name:
            locked.append(Locked(name=name, version=version, hashes=tuple(hashes)))
        return locked, result

    def closure(
        self, spec: InstallSpec, *, python_version: str | None = None
    ) -> tuple[dict[str, tuple[str, tuple[str, ...]]], CommandResult]:
        """What installing ``spec.requirements`` from ``spec.sources`` would put in, as uv resolves
        it (``uv pip compile``, nothing installed): {project: (version, the projects that pull it in)}.
        ``python_version``: resolve for that Python (a plan's) rather than the target's."""
        args = self._spec_args(InstallSpec(sources=spec.sources, constraints=spec.constraints))
        if python_version is not None:
            args = ["--python-version", python_version, *args[2:]]  # instead of "--python <exe>"
        argv = [self.uv, "pip", "compile", "-", "--no-header", "--quiet", "--annotation-style", "split", *args]
        reqs = "\n".join(spec.requirements) + "\n"
        result = run(argv, timeout=QUERY_TIMEOUT_S, env=self._env(spec), input_text=reqs)
        found: dict[str, tuple[str, tuple[str, ...]]] = {}
        if not result.ok:
            return found, result
        name, version = "", ""
        via: list[str] = []
        for line in result.stdout.splitlines():
            pin = parse_pin(line) if line[:1].strip() else None
            if pin is not None:
                if name:
                    found[name] = (version, tuple(via))
                name, version, via = pin.project, pin.version, []
                continue
            # "    # via timm", or "    # via" then "    #   timm" lines
            text = line.strip().removeprefix("#").strip().removeprefix("via").strip()
            if name and text and not text.startswith("-r"):
                via.append(text.split(" ")[0])
        if name:
            found[name] = (version, tuple(via))
        return found, result

    def uninstall(self, names: tuple[str, ...]) -> CommandResult:
        argv = [self.uv, "pip", "uninstall", "--python", str(self.target.executable), *names]
        return run([*argv, *uninstall_args(self.target)], timeout=QUERY_TIMEOUT_S, env=self.env)
