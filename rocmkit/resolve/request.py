"""What ``rocmkit resolve`` was asked to do: the constraints, the machine, the output; one frozen
request, checked here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rocmkit.errors import UsageError
from rocmkit.resolve.constraints import Constraints

FORMATS = ("summary", "json", "requirements", "pylock", "uv-project")


@dataclass(frozen=True, kw_only=True)
class ResolveRequest:
    capture: Path | None = None
    torch_version: str | None = None
    rocm: str | None = None
    cuda: str | None = None
    cpu: bool = False
    python: str | None = None
    channel: str = "stable"
    index_base: str | None = None
    offline: bool = False  # plan from the data alone; do not ask the index what it serves now
    strict_data: bool = False  # only confirmed builds (not those known only from build lists)
    as_json: bool = False
    fmt: str = "summary"  # one of FORMATS
    fresh: bool = False  # ignore the cached detection and output
    framework: str = "torch"  # torch | jax | torch-xla | torch,jax
    jax_version: str | None = None
    # --with: packages resolved into the plan (xformers, flash-attn, bitsandbytes: matrices/companions.toml)
    with_packages: tuple[str, ...] = ()
    # As install takes them, so that resolve says what install will do: the user's pip sources
    # when the planned index does not answer, and the venv whose Python (and whose rocmkit torch,
    # with --with, unless --upgrade) the plan is for.
    fallback_index: bool = False
    venv: Path | None = None
    upgrade: bool = False
    closure: bool = False  # --closure: also the whole closure, as uv resolves it from the sources
    build: tuple[str, ...] = ()  # --build: --with packages built from source rather than paired by wheel
    allow_redirect: tuple[str, ...] = ()  # hosts the live index check may follow a redirect to
    output: Path | None = None  # --output FILE: the plan written there, whole or not at all

    def __post_init__(self) -> None:
        if self.fmt not in FORMATS:
            raise UsageError(f"--format {self.fmt!r} is not one of {', '.join(FORMATS)}", "pick one")
        if self.closure and self.fmt in ("pylock", "uv-project"):
            raise UsageError(f"--closure and --format {self.fmt} ask for two outputs", "pass only one of them")
        if self.as_json and self.fmt not in ("summary", "json"):
            # One of the two would be silently ignored.
            raise UsageError(f"--json and --format {self.fmt} ask for two outputs", "pass only one of them")
        from rocmkit.companions.wanted import requirements_of

        object.__setattr__(self, "with_packages", requirements_of(self.with_packages))
        from rocmkit.companions.wanted import build_names

        object.__setattr__(self, "build", build_names(self.build, self.with_packages))
        cons = self.constraints()
        if self.with_packages and "torch" not in cons.frameworks:
            raise UsageError("--with resolves packages beside torch", "add torch to --framework (torch,jax)")

    def constraints(self) -> Constraints:
        return Constraints(
            torch=self.torch_version,
            rocm=self.rocm,
            python=self.python,
            channel=self.channel,
            cuda=self.cuda,
            index_base=self.index_base or None,
            cpu=self.cpu,
            strict_data=self.strict_data,
            framework=self.framework,
            jax=self.jax_version,
        ).validated()
