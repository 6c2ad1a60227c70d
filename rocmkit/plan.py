"""A Plan: what resolve decided, as data.

Printable, serialisable (``rocmkit.plan/1``), installable by pip or uv, and
reusable on other nodes. Resolve makes it; install, build, docker and doctor
consume it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from rocmkit.errors import DataError

SCHEMA = "rocmkit.plan/1"


@dataclass(frozen=True, kw_only=True)
class WithPackage:
    """A package asked for with ``--with``, as resolved for this plan.

    ``how``: "wheel" (a prebuilt build for this torch and GPU, from ``index_url``), "source"
    (built here against the environment's own torch: no build isolation, ``build_requires``
    installed first, ``build_env`` set), or "index" (a plain package, e.g. transformers, from the
    plan's indexes under the guard)."""

    name: str  # canonical distribution name
    requirement: str  # "xformers==0.0.35"
    how: str = "index"
    index_url: str | None = None
    build_env: dict[str, str] = field(default_factory=dict)
    build_requires: tuple[str, ...] = ()
    pins_torch: bool = False  # its native code is tied to this torch build: the guard pins it too


@dataclass(frozen=True, kw_only=True)
class Plan:
    backend: str  # "rocm6.2", "cu128", "cpu", "therock-gfx1151"
    channel: str = "stable"  # stable | nightly | therock
    torch_version: str | None = None  # "2.5.1+rocm6.2"
    triton: str | None = None  # "pytorch-triton-rocm==3.1.0", or None where torch pins none
    requirements: tuple[str, ...] = ()  # "torch==2.5.1+rocm6.2", ...
    index_urls: tuple[str, ...] = ()  # the first is --index-url, the rest --extra-index-url
    env: dict[str, str] = field(default_factory=dict)  # e.g. {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}
    warnings: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    python: str | None = None  # "3.11"
    target_archs: tuple[str, ...] = ()  # archs the chosen wheel must run on ("gfx1030")
    unsupported_gpus: tuple[str, ...] = ()  # "GPU 1 (gfx90c, AMD Radeon Graphics): ..."
    # Which of ``requirements`` are optional companions (torchvision, torchaudio): install
    # may leave them out (--no-companions, or a fallback source lacking them); torch and
    # its Triton pin never are. Empty (plans from older rocmkits): every requirement is required.
    companions: tuple[str, ...] = ()
    # When the planned build is known only from upstream's build lists (not yet seen on an
    # index): the requirements of the newest confirmed build on the *same* index, which
    # install uses (loudly) when that index answers without the planned one. Empty: none.
    fallback: tuple[str, ...] = ()
    # Companions the plan named but left out because the source that will serve it answered
    # without them (an empty or partial torchvision page): nothing may pull them from elsewhere
    # (a ``--with`` package needing one is refused: another source's build is for another torch).
    unserved: tuple[str, ...] = ()
    # What the plan installs: "torch" (the default, and plans from older rocmkits), "jax",
    # "torch-xla", or "torch+jax" (one venv with both, both pinned and guarded).
    framework: str = "torch"
    jax_version: str | None = None  # "0.10.2": jax, jaxlib and the plugin's release
    # ``--with`` packages as resolved (``rocmkit resolve --with``); their reasons and warnings are
    # among ``reasons`` and ``warnings``, the variables they read at import among ``env``.
    with_packages: tuple[WithPackage, ...] = ()
    # Where the plan's wheels run (docs/platforms.md): None on x86_64 Linux (plans from older
    # rocmkits too), else "linux-aarch64" or "wsl2-x86_64"; on WSL2 install also puts the WSL
    # runtime in place of the wheel's bundled one.
    platform: str | None = None

    @property
    def required(self) -> tuple[str, ...]:
        """``requirements`` without the companions: what an install cannot do without."""
        return tuple(r for r in self.requirements if r not in self.companions)

    def without(self, left_out: Collection[str]) -> Plan:
        """This plan with the requirements ``left_out`` gone from ``requirements`` and
        ``companions`` (itself when there are none)."""
        if not left_out:
            return self
        return replace(
            self,
            requirements=tuple(r for r in self.requirements if r not in left_out),
            companions=tuple(c for c in self.companions if c not in left_out),
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {
            "schema": SCHEMA,
            **data,
            "pip_command": self.pip_command(),
            "uv_command": self.uv_command(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, allow_env: frozenset[str] = frozenset()) -> Plan:
        """A plan from its JSON form, every field checked (a plan may come from anyone):
        see :mod:`rocmkit.planschema`. ``allow_env``: variable names the user allowed
        beyond the allow-list (``install --allow-env NAME``)."""
        from rocmkit.planschema import check_plan_dict

        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise DataError(f"not a {SCHEMA} object", "pass the output of `rocmkit resolve --json`")
        fields = check_plan_dict(data, allow_env)
        fields["with_packages"] = tuple(WithPackage(**item) for item in fields["with_packages"])
        return cls(**fields)

    def _index_args(self) -> list[str]:
        args: list[str] = []
        if self.index_urls:
            args += ["--index-url", self.index_urls[0]]
            for url in self.index_urls[1:]:
                args += ["--extra-index-url", url]
        return args

    def pip_argv(self) -> list[str]:
        return ["pip", "install", *self.requirements, *self._index_args()]

    def uv_argv(self) -> list[str]:
        # uv ranks --extra-index-url above --index-url (the reverse of pip), so the
        # order pip means is spelled with --index (in priority order) and the last
        # URL as --default-index, which also keeps PyPI out as pip's form does.
        if len(self.index_urls) <= 1:
            return ["uv", "pip", "install", *self.requirements, *self._index_args()]
        args: list[str] = []
        for url in self.index_urls[:-1]:
            args += ["--index", url]
        args += ["--default-index", self.index_urls[-1]]
        return ["uv", "pip", "install", *self.requirements, *args]

    def pip_command(self) -> str:
        import shlex

        return shlex.join(self.pip_argv())

    def uv_command(self) -> str:
        import shlex

        return shlex.join(self.uv_argv())
