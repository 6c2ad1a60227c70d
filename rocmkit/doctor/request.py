"""What ``rocmkit doctor`` was asked to do: one frozen request, checked here, not in the CLI."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.arch import BACKENDS
from rocmkit.errors import UsageError

if TYPE_CHECKING:
    from rocmkit.arch import Backend
    from rocmkit.doctor.run import Isolation, RunOptions

FORMATS = ("table", "json", "npd")
WARM_CHECKS = ("env.caches", "compile.cache_speed", "triton.codegen")


@dataclass(frozen=True, kw_only=True)
class DoctorRequest:
    level: int = 1
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    as_json: bool = False
    junit: Path | None = None
    prom: Path | None = None
    output: Path | None = None  # the report (table, JSON or npd line) written here, not on stdout
    capture: Path | None = None
    venv: Path | None = None
    python_path: str | None = None
    allow_untrusted_python: bool = False  # as root: run a --venv/--python another user can change
    # Typed as the run's literals; click hands in plain strings, which __post_init__ checks.
    backend: Backend | None = None
    timeout_scale: float = 1.0
    settings: tuple[str, ...] = ()  # KEY=VALUE, as given; see .options
    isolation: Isolation = "fork"  # fork: one warm worker forks each check; spawn: a fresh Python per check
    jobs: int | None = None
    fresh: bool = False
    list_only: bool = False
    verbose: bool = False
    quiet: bool = False  # no progress lines, status line or heartbeat: the report only
    output_format: str = "table"  # table, json, npd (node-problem-detector's plugin protocol)
    strict: bool = False  # warnings (a figure below its floor) fail
    image_build: bool = False  # device nodes, groups and driver are not applicable
    framework: str | None = None  # torch, jax or torch,jax; default: what the checked Python has
    warm_caches: bool = False  # fill the jobs' compile caches (image build or prolog)

    def __post_init__(self) -> None:
        if not 0 <= self.level <= 3:
            raise UsageError(f"--level {self.level} is not 0, 1, 2 or 3", "pick one")
        if self.backend is not None and self.backend not in BACKENDS:
            raise UsageError(f"--backend {self.backend!r} is not one of {', '.join(BACKENDS)}", "pick one")
        if self.isolation not in ("fork", "spawn"):
            raise UsageError(f"--isolation {self.isolation!r} is not fork or spawn", "pick one")
        if not (math.isfinite(self.timeout_scale) and self.timeout_scale > 0):
            raise UsageError(
                f"--timeout-scale {self.timeout_scale} is not a positive number", "give e.g. 2 (twice the time)"
            )
        if self.output_format not in FORMATS:
            raise UsageError(f"--format {self.output_format!r} is not one of {', '.join(FORMATS)}", "pick one")
        if self.output_format != "table" and self.as_json:
            raise UsageError("--json and --format are two ways to say one thing", "give one of them")
        if self.framework is not None and (
            not self.frameworks or any(f not in ("torch", "jax") for f in self.frameworks)
        ):
            raise UsageError(f"--framework {self.framework!r} is not torch, jax or torch,jax", "pick one")
        if self.jobs is not None and self.jobs < 1:
            raise UsageError(f"--jobs {self.jobs} is not a positive count", "give e.g. 2")
        if self.list_only:
            return
        for path in self.reports:
            if not path.parent.is_dir():
                raise UsageError(
                    f"folder {path.parent} does not exist", f"create it or write {path.name} elsewhere"
                )
        parse_settings(self.settings)  # a malformed --set fails now, not after detection

    @property
    def frameworks(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f.strip() for f in (self.framework or "").split(",") if f.strip()))

    @property
    def selection(self) -> tuple[str, ...]:
        """``--only``, plus what ``--warm-caches`` runs: the cache checks and the Triton AOT builds."""
        return (*self.only, *WARM_CHECKS) if self.warm_caches else self.only

    @property
    def fmt(self) -> str:
        return "json" if self.as_json else self.output_format

    @property
    def reports(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.junit, self.prom, self.output) if p is not None)

    @property
    def options(self) -> dict[str, object]:
        return parse_settings(self.settings)

    def run_options(self) -> RunOptions:
        """What :func:`rocmkit.doctor.run.doctor` runs, from this request: the engine's part of it
        (the request also holds what is reported where, and which Python), as install's
        request makes ``flow.Options``."""
        from rocmkit.doctor.run import RunOptions

        options = {**self.options, "caches.warm": True} if self.warm_caches else self.options
        return RunOptions(
            level=self.level,
            only=self.selection,
            skip=self.skip,
            backend=self.backend,
            timeout_scale=self.timeout_scale,
            options=options,
            isolation=self.isolation,
            jobs=self.jobs,
            fresh=self.fresh,
            image_build=self.image_build,
            frameworks=self.frameworks,
        )


def parse_settings(settings: tuple[str, ...]) -> dict[str, object]:
    """``KEY=VALUE`` pairs; values that read as JSON (numbers, true/false) become those."""
    from rocmkit.errors import DataError
    from rocmkit.util.safeload import loads_json

    out: dict[str, object] = {}
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {item!r} is not KEY=VALUE", "write it like --set repeats=5")
        try:
            # Bounded: NaN, 1e400 or [[[[... would reach a check as a number it cannot use.
            out[key.strip()] = loads_json(value, f"--set {key.strip()}", max_depth=8)
        except DataError as exc:
            if "is not valid JSON" not in exc.message:
                raise UsageError(exc.message, "give a finite number, true/false or plain text") from exc
            out[key.strip()] = value
    return out
