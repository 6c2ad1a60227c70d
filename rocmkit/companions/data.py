"""``matrices/companions.toml``: the kernel libraries added after torch, read and validated.

One :class:`Companion` per library and one :class:`Build` per way a build is served; the file's
header says what each field means. Every value is checked on load (an unknown key, a bad
version or specifier, an undeclared source, a build of an unknown library are errors naming the
file and the row), so resolve never meets a malformed row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from rocmkit.arch import BACKENDS
from rocmkit.errors import DataError
from rocmkit.matrix.fields import FIX, Row, check_keys, read_sources, read_toml, rows
from rocmkit.packages import canonical
from rocmkit.plan import Backend

FILE = "companions.toml"
KINDS = ("wheel", "source")
INDEXES = ("pytorch", "pypi")
PYPI_SIMPLE = "https://pypi.org/simple"

_COMPANION_KEYS = ("name", "module", "check", "pins_torch")
_BUILD_KEYS = (
    "companion",
    "variant",
    "version",
    "backend",
    "kind",
    "index",
    "backends",
    "rocm",
    "cuda",
    "torch",
    "torch_requires",
    "archs",
    "build_env",
    "run_env",
    "build_requires",
)
_ARCH = re.compile(r"^gfx[0-9]{2,4}[0-9a-f]?\*?$|^gfx[0-9]{2,3}\*$")
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_PLACEHOLDER = re.compile(r"\{([^}]*)\}")
PLACEHOLDERS = ("archs;", "archs,", "max_jobs")


@dataclass(frozen=True, kw_only=True)
class Companion:
    name: str  # canonical distribution name ("flash-attn")
    module: str  # what it imports as ("flash_attn")
    check: str  # its doctor check ("companion.flash_attn")
    pins_torch: bool  # its native code is tied to one torch build: the guard pins it too
    note: str | None
    sources: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Build:
    companion: str
    version: str
    backend: str  # rocm | cuda | cpu
    kind: str  # wheel | source
    index: str  # pytorch | pypi
    variant: str | None = None  # "ck", "triton-amd"
    backends: tuple[str, ...] = ()  # index suffixes serving it (index = pytorch)
    rocm: tuple[str, ...] = ()  # toolkit versions whose library the wheel carries
    cuda: tuple[str, ...] = ()
    torch: str | None = None  # the torch release the native code is compiled against
    torch_requires: str = "*"
    archs: tuple[str, ...] = ()  # () = any arch
    build_env: dict[str, str] = field(default_factory=dict)
    run_env: dict[str, str] = field(default_factory=dict)
    build_requires: tuple[str, ...] = ()
    note: str | None = None
    unconfirmed: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``flash-attn 2.8.3.post2 (triton-amd, source)``."""
        what = ", ".join(x for x in (self.variant, self.kind) if x)
        return f"{self.companion} {self.version} ({what})"

    def torch_allows(self, version: str) -> bool:
        """Whether ``torch_requires`` admits the torch ``version`` (local label ignored)."""
        if self.torch_requires == "*":
            return True
        release = version.split("+", 1)[0]
        return SpecifierSet(self.torch_requires).contains(release, prereleases=True)

    def covers(self, arch: str) -> bool:
        if not self.archs:
            return True
        return any(arch == a or (a.endswith("*") and arch.startswith(a[:-1])) for a in self.archs)


@dataclass(frozen=True, kw_only=True)
class CompanionData:
    companions: dict[str, Companion]
    builds: tuple[Build, ...]
    sources: dict[str, str]

    def builds_of(self, name: str) -> tuple[Build, ...]:
        return tuple(b for b in self.builds if b.companion == name)


def _env(row: Row, key: str) -> dict[str, str]:
    value = row.data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise row.error(f"{key} must be a table of VARIABLE = \"value\", got {value!r}")
    out: dict[str, str] = {}
    for name, text in value.items():
        if not _ENV_NAME.match(name) or not isinstance(text, str):
            raise row.error(f"{key}: {name!r} = {text!r} is not an upper-case variable with a string value")
        for found in _PLACEHOLDER.findall(text):
            if found not in PLACEHOLDERS:
                raise row.error(
                    f"{key}.{name}: unknown placeholder {{{found}}} (known: "
                    + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                    + ")"
                )
        out[name] = text
    return out


def _companion(data: Any, i: int, src: dict[str, str]) -> Companion:
    row = Row(data, file=FILE, where=f"[[companion]] #{i + 1}", keys=_COMPANION_KEYS, sources=src, name_key="name")
    name = row.string("name")
    if canonical(name) != name:
        raise row.error(f"name {name!r} is not the canonical distribution name {canonical(name)!r}")
    module = row.string("module")
    if not module.isidentifier():
        raise row.error(f"module {module!r} is not an importable name")
    check = row.string("check")
    if check != f"companion.{module}":
        raise row.error(f"check {check!r} should be 'companion.{module}' (the doctor names it so)")
    pins = row.opt_bool("pins_torch")
    if pins is None:
        raise row.error("missing required key 'pins_torch'")
    return Companion(
        name=name, module=module, check=check, pins_torch=pins, note=row.opt_string("note"), sources=row.source_keys()
    )


def _choice(row: Row, key: str, choices: tuple[str, ...]) -> str:
    value = row.string(key)
    if value not in choices:
        raise row.error(f"{key} = {value!r} is not one of {', '.join(choices)}")
    return value


def _build(data: Any, i: int, src: dict[str, str], names: set[str]) -> Build:
    row = Row(data, file=FILE, where=f"[[build]] #{i + 1}", keys=_BUILD_KEYS, sources=src)
    companion = row.string("companion")
    if companion not in names:
        raise row.error(f"companion {companion!r} has no [[companion]] row")
    row.where = f"[[build]] #{i + 1} ({companion})"
    backend = _choice(row, "backend", BACKENDS)
    kind = _choice(row, "kind", KINDS)
    index = _choice(row, "index", INDEXES)
    backends = row.strings("backends")
    if index == "pytorch" and not backends:
        raise row.error("index = 'pytorch' needs backends (the index suffixes that serve it)")
    for suffix in backends:
        served = Backend.read(suffix)
        if served is None or served.kind != backend or not served.pytorch_index:
            raise row.error(f"backends lists {suffix!r}, which is not a {backend} index")
    for key in ("rocm", "cuda", "archs"):
        if row.has(key) and not row.strings(key):
            raise row.error(f"{key} is empty; leave it out instead")
    for key in ("rocm", "cuda"):
        for version in row.strings(key):
            if not re.fullmatch(r"[0-9]{1,2}\.[0-9]{1,2}", version):
                raise row.error(f"{key} lists {version!r}, not a version like '7.2'")
    archs = row.strings("archs")
    for arch in archs:
        if not _ARCH.match(arch):
            raise row.error(f"archs lists {arch!r}, not a gfx target (gfx942) or family (gfx110*)")
    if archs and backend != "rocm":
        raise row.error("archs are gfx targets: only rocm builds list them")
    requires = row.opt_string("torch_requires") or "*"
    if requires != "*":
        try:
            SpecifierSet(requires)
        except InvalidSpecifier:
            raise row.error(f"torch_requires = {requires!r} is not a version specifier") from None
    torch = row.opt_pep440("torch")
    build = Build(
        companion=companion,
        version=row.pep440("version"),
        backend=backend,
        kind=kind,
        index=index,
        variant=row.opt_string("variant"),
        backends=backends,
        rocm=row.strings("rocm"),
        cuda=row.strings("cuda"),
        torch=torch,
        torch_requires=requires,
        archs=archs,
        build_env=_env(row, "build_env"),
        run_env=_env(row, "run_env"),
        build_requires=row.strings("build_requires"),
        note=row.opt_string("note"),
        unconfirmed=row.unconfirmed(),
        sources=row.source_keys(),
    )
    if torch is not None and not build.torch_allows(torch):
        raise row.error(f"torch = {torch!r} is outside its own torch_requires {requires!r}")
    if kind == "wheel" and (build.build_env or build.build_requires):
        raise row.error("a wheel is not built here: build_env and build_requires go with kind = 'source'")
    return build


def parse_companions(folder: Path) -> CompanionData:
    """``folder/companions.toml``, validated."""
    doc = read_toml(folder / FILE)
    check_keys(doc, ("schema", "sources", "companion", "build"), file=FILE, where="top level")
    src = read_sources(doc, file=FILE)
    companions: dict[str, Companion] = {}
    for i, data in enumerate(rows(doc, "companion", file=FILE)):
        comp = _companion(data, i, src)
        if comp.name in companions:
            raise DataError(f"{FILE}: [[companion]] {comp.name!r} is listed twice", FIX)
        companions[comp.name] = comp
    builds = tuple(_build(data, i, src, set(companions)) for i, data in enumerate(rows(doc, "build", file=FILE)))
    bare = [name for name in companions if not any(b.companion == name for b in builds)]
    if bare:
        raise DataError(f"{FILE}: [[companion]] {bare[0]!r} has no [[build]] row", FIX)
    return CompanionData(companions=companions, builds=builds, sources=src)


def load_companions() -> CompanionData:
    """The companion data in use (``ROCMKIT_MATRICES_DIR`` or the shipped folder)."""
    from rocmkit.util.paths import matrices_dir

    return parse_companions(matrices_dir())
