"""A Plan: what resolve decided, as data.

Printable, serialisable (``rocmkit.plan/1``), installable by pip or uv, and
reusable on other nodes. Resolve makes it; install, build, docker and doctor
consume it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from rocmkit.arch import BackendKind
from rocmkit.errors import DataError

SCHEMA = "rocmkit.plan/1"

# Whose builds a backend names: PyTorch's indexes (their names are also the torch wheels' local
# labels: 2.5.1+rocm6.2), a JAX plugin family, AMD's own channels, TheRock's per-family indexes
# (plans from older rocmkits), or a lock that carries no rocmkit plan (what it holds is not said).
BackendSource = Literal["pytorch", "jax", "amd", "therock", "lock"]

# rocm6.2, rocm6.2.4: PyTorch's index; a bare "rocm" is a source build whose torch.version.hip said no release.
_PYTORCH_ROCM = re.compile(r"rocm([0-9]+(?:\.[0-9]+)+)?")
_PYTORCH_CUDA = re.compile(r"cu([0-9]+)([0-9])")  # cu128: CUDA 12.8
_JAX_FAMILY = re.compile(r"(rocm|cuda)([0-9]+)")  # rocm7, cuda13: a JAX plugin family (a major only)
_AMD = re.compile(r"amd-([A-Za-z0-9_.]+)-(.+)")  # amd-nightly-gfx942-gfx1100, amd-rc-all, amd-nightly-3-targets
_THEROCK = re.compile(r"therock(?:-(.+))?")  # therock-gfx1151, therock-gfx94X-dcgpu
_UNKNOWN = "unknown"


@dataclass(frozen=True, kw_only=True)
class Backend:
    """What a plan's builds run on: parsed once from its tag where a plan is made or read back
    (:meth:`parse`), printed once as that same tag (``str``), so plan files, locks, pylock and
    JSON output keep the strings they always had. Code reads the fields, never the tag.

    Tags: PyTorch's indexes ``rocm6.2`` ``cu128`` ``cpu`` ``xpu``; a JAX plugin family ``rocm7``
    ``cuda13``; AMD's channels ``amd-<stream>-<targets>`` (``amd-nightly-gfx942-gfx1100``,
    ``amd-nightly-all``, ``amd-nightly-3-targets``); TheRock's ``therock-gfx1151``; ``unknown``
    (a lock without a rocmkit plan)."""

    kind: BackendKind | None  # None: not said (a lock without a rocmkit plan)
    # The ROCm or CUDA release the builds are made with: "6.2.4", "12.8"; a JAX plugin family's
    # major alone ("7"); None for CPU, xpu, and AMD's channels (whose ROCm is a pin, not the tag).
    toolkit: str | None = None
    source: BackendSource = "pytorch"
    channel: str | None = None  # AMD's release stream: "nightly", "rc", "stable"
    # AMD's channels: the targets ("gfx942-gfx1100", "all", "3-targets"); TheRock: the gfx family.
    variant: str | None = None

    @classmethod
    def parse(cls, tag: str) -> Backend:
        """The backend a tag names; ValueError when it names none rocmkit knows."""
        found = cls.read(tag)
        if found is None:
            raise ValueError(f"{tag[:64]!r} is not a backend rocmkit knows (rocm6.2, cu128, cpu, amd-nightly-gfx942, ...)")
        return found

    @classmethod
    def read(cls, tag: str) -> Backend | None:
        """:meth:`parse` for text that may be no tag at all (a wheel's local label, ``+git1a2b``): None."""
        return _read(tag)

    def __str__(self) -> str:
        if self.kind is None:
            return _UNKNOWN
        if self.source == "amd":
            return f"amd-{self.channel}-{self.variant}"
        if self.source == "therock":
            return f"therock-{self.variant}" if self.variant else "therock"
        if self.source == "jax":
            return f"{self.kind}{self.toolkit}"
        if self.kind == "rocm":
            return f"rocm{self.toolkit or ''}"
        if self.kind == "cuda":
            return "cu" + (self.toolkit or "").replace(".", "")
        return self.kind

    @property
    def tag(self) -> str:
        return str(self)

    @property
    def pytorch_index(self) -> bool:
        """One of PyTorch's own wheel indexes (``rocm6.2``, ``cu128``, ``cpu``): the tag is the
        index's name and the torch wheel's local label."""
        return self.source == "pytorch" and self.kind is not None

    @property
    def rocm(self) -> str | None:
        """The ROCm release the tag names ("6.2", a JAX family's "7"); None for AMD's channels."""
        return self.toolkit if self.kind == "rocm" else None

    @property
    def cuda(self) -> str | None:
        """The CUDA release the tag names ("12.8", a JAX family's "13")."""
        return self.toolkit if self.kind == "cuda" else None

    @classmethod
    def rocm_index(cls, version: str) -> Backend:
        """PyTorch's index for ROCm ``version`` ("6.2" -> rocm6.2)."""
        return cls(kind="rocm", toolkit=version)

    @classmethod
    def cuda_index(cls, version: str) -> Backend:
        """PyTorch's index for CUDA ``version`` ("12.8" -> cu128)."""
        return cls(kind="cuda", toolkit=version)

    @classmethod
    def amd_channel(cls, stream: str, targets: str) -> Backend:
        """AMD's channel ``stream`` with the device packages of ``targets`` ("gfx942-gfx1100", "all")."""
        return cls(kind="rocm", source="amd", channel=stream, variant=targets)


CPU = Backend(kind="cpu")


@functools.lru_cache(maxsize=512)
def _read(tag: str) -> Backend | None:
    # Cached: the data's index names are read again and again while one plan is ranked, and a
    # Backend is immutable.
    if tag == "cpu":
        return CPU
    if tag == "xpu":
        return Backend(kind="xpu")
    if tag == _UNKNOWN:
        return Backend(kind=None, source="lock")
    if m := _PYTORCH_ROCM.fullmatch(tag):
        return Backend(kind="rocm", toolkit=m.group(1))
    if m := _PYTORCH_CUDA.fullmatch(tag):
        return Backend(kind="cuda", toolkit=f"{m.group(1)}.{m.group(2)}")
    if m := _JAX_FAMILY.fullmatch(tag):
        return Backend(kind="rocm" if m.group(1) == "rocm" else "cuda", toolkit=m.group(2), source="jax")
    if m := _AMD.fullmatch(tag):
        return Backend(kind="rocm", source="amd", channel=m.group(1), variant=m.group(2))
    if m := _THEROCK.fullmatch(tag):
        return Backend(kind="rocm", source="therock", variant=m.group(1))
    return None


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
    backend: Backend  # printed "rocm6.2", "cu128", "cpu", "amd-nightly-gfx942", "therock-gfx1151"
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
        data["backend"] = str(self.backend)  # the tag, as plan files have always had it
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
        from rocmkit.planschema import FIX, check_plan_dict

        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise DataError(f"not a {SCHEMA} object", "pass the output of `rocmkit resolve --json`")
        fields = check_plan_dict(data, allow_env)
        fields["with_packages"] = tuple(WithPackage(**item) for item in fields["with_packages"])
        # The same parser that made it reads it back: a tag is never kept as a string.
        backend = Backend.read(fields["backend"])
        if backend is None:
            raise DataError(f"plan field 'backend' names no backend rocmkit knows: {fields['backend'][:40]!r}", FIX)
        fields["backend"] = backend
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
