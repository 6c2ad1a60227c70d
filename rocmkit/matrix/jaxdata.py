"""``matrices/jax.toml``: the JAX releases and GPU plugins, install routes and known fixes, validated.

One typed, frozen view (:class:`JaxData`) read in the matrix dialect
(:mod:`rocmkit.matrix.fields`): every row names its sources, a typo or a bad
version fails on load naming the file and the row. Resolve (``--framework jax``),
install and the doctor's ``jax.*`` checks read it; the facts about a plugin that
the wheels state about themselves (module, entry point, platform) are kept here
as read from the wheels, never written in code.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from packaging.version import Version

from rocmkit import arch as gfx
from rocmkit.arch import GPU_BACKENDS, GpuBackend
from rocmkit.errors import DataError
from rocmkit.matrix.fields import FIX, Row, check_keys, read_sources, read_toml, table
from rocmkit.matrix.model import Fact, PythonSpan

FILE = "jax.toml"
_TOP = ("schema", "sources", "plugin", "plugin_archs", "route", "fix", "release", "torch_xla", "torch_xla_gpu")

@dataclass(frozen=True, kw_only=True)
class JaxPlugin(Fact):
    family: str  # "rocm7", "cuda13"
    backend: GpuBackend
    major: int  # the ROCm or CUDA major the plugin is built for
    plugin: str  # "jax-rocm7-plugin"
    pjrt: str  # "jax-rocm7-pjrt"
    module: str  # "jax_rocm7_plugin" (importable)
    entry_point: str  # "xla_rocm7 = jax_plugins.xla_rocm7" ([jax_plugins] in the PJRT wheel)
    platform: str  # what jax.devices() reports: "rocm", "cuda"
    extra: str | None = None  # jax's extra: "rocm7-local", "cuda13"
    min_driver: str | None = None  # NVIDIA driver floor ("580")
    min_jaxlib: str | None = None  # the oldest jaxlib that knows this plugin's module name

    @property
    def entry_module(self) -> str:
        return self.entry_point.split("=", 1)[1].strip()


@dataclass(frozen=True, kw_only=True)
class PluginArchs(Fact):
    family: str
    version: str  # the plugin version whose wheel was read
    archs: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Route(Fact):
    name: str  # "pypi", "amd-multi-arch", "amd-find-links"
    backend: GpuBackend
    index: str  # may hold {rocm}
    description: str  # may hold {major}, {gfx}
    needs_local_rocm: bool = True
    first: str | None = None  # what is installed before the plugin ("rocm[libraries,device-{gfx}]")


@dataclass(frozen=True, kw_only=True)
class KnownFix(Fact):
    name: str
    backend: GpuBackend
    problem: str
    remedy: str  # may hold {rocm_path}
    variable: str | None = None
    value: str | None = None
    libraries: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PluginBuild(PythonSpan):
    family: str
    version: str  # "0.10.2" or "0.9.1.post6": the newest build of the release for these Pythons


@dataclass(frozen=True, kw_only=True)
class JaxRelease(Fact, PythonSpan):  # the Pythons of jaxlib's CPython wheels
    version: str  # jax and jaxlib ("0.10.2")
    released: dt.date | None = None
    plugins: tuple[PluginBuild, ...] = ()

    def build(self, family: str, python: str) -> PluginBuild | None:
        """The newest plugin build of ``family`` for this release and Python (rows are newest first)."""
        return next((b for b in self.plugins if b.family == family and b.supports_python(python)), None)


@dataclass(frozen=True, kw_only=True)
class TorchXlaRelease(Fact, PythonSpan):
    version: str


@dataclass(frozen=True, kw_only=True)
class TorchXlaGpu(Fact):
    available: bool
    note: str


@dataclass(frozen=True, kw_only=True)
class JaxData:
    plugins: tuple[JaxPlugin, ...]
    archs: tuple[PluginArchs, ...]
    routes: tuple[Route, ...]
    fixes: tuple[KnownFix, ...]
    releases: tuple[JaxRelease, ...]  # oldest first
    torch_xla: tuple[TorchXlaRelease, ...]  # oldest first
    torch_xla_gpu: TorchXlaGpu
    sources: dict[str, str]

    def plugin(self, family: str) -> JaxPlugin | None:
        return next((p for p in self.plugins if p.family == family), None)

    def of_backend(self, backend: str) -> tuple[JaxPlugin, ...]:
        return tuple(p for p in self.plugins if p.backend == backend)

    def route(self, name: str) -> Route | None:
        return next((r for r in self.routes if r.name == name), None)

    def fix(self, name: str) -> KnownFix | None:
        return next((f for f in self.fixes if f.name == name), None)

    def archs_for(self, family: str, version: str) -> PluginArchs | None:
        """The arch list read from the newest wheel of ``family`` not newer than ``version``
        (else the oldest one read: the nearest fact there is)."""
        mine = sorted((a for a in self.archs if a.family == family), key=lambda a: Version(a.version))
        older = [a for a in mine if Version(a.version) <= Version(version)]
        return older[-1] if older else (mine[0] if mine else None)

    def source_text(self, key: str) -> str:
        return self.sources.get(key, key)


def load_jax(directory: Path | None = None) -> JaxData:
    """``jax.toml`` in ``directory`` (default: the matrices folder in use), loaded once per folder."""
    from rocmkit.util.paths import matrices_dir

    return _cached(str((directory or matrices_dir()).resolve()))


@lru_cache(maxsize=4)
def _cached(directory: str) -> JaxData:
    return parse_jax(Path(directory))


def parse_jax(directory: Path) -> JaxData:
    doc = read_toml(directory / FILE)
    src = read_sources(doc, file=FILE)
    check_keys(doc, _TOP, file=FILE, where="top level")
    plugins = _plugins(doc, src)
    families = {p.family: p for p in plugins}
    return JaxData(
        plugins=plugins,
        archs=_archs(doc, src, families),
        routes=_routes(doc, src),
        fixes=_fixes(doc, src),
        releases=_releases(doc, src, families),
        torch_xla=_torch_xla(doc, src),
        torch_xla_gpu=_torch_xla_gpu(doc, src),
        sources=src,
    )


def _backend(row: Row) -> GpuBackend:
    value = row.string("backend")
    for backend in GPU_BACKENDS:
        if value == backend:
            return backend
    raise row.error(f"backend = {value!r} is not {' or '.join(repr(b) for b in GPU_BACKENDS)}")


def _plugins(doc: dict[str, Any], src: dict[str, str]) -> tuple[JaxPlugin, ...]:
    keys = ("family", "backend", "major", "plugin", "pjrt", "module", "entry_point", "platform", "extra",
            "min_driver", "min_jaxlib")
    out: list[JaxPlugin] = []
    for row in table(doc, "plugin", file=FILE, keys=keys, sources=src, name_key="family"):
        family = row.string("family")
        if any(p.family == family for p in out):
            raise DataError(f"{FILE}: duplicate plugin {family!r}", "keep one row per plugin family")
        major = row.data.get("major")
        if not isinstance(major, int) or isinstance(major, bool) or not 0 < major < 1000:
            raise row.error(f"major must be a positive integer, got {major!r}")
        backend = _backend(row)
        if family != f"{backend}{major}":
            raise row.error(f"family {family!r} must be the backend and major: {backend}{major}")
        entry = row.string("entry_point")
        if "=" not in entry or not entry.split("=", 1)[1].strip():
            raise row.error(f"entry_point = {entry!r} is not 'name = module' as in entry_points.txt")
        min_driver = row.opt_string("min_driver")
        if min_driver is not None and not re.fullmatch(r"[0-9]{2,4}(\.[0-9]{1,3}){0,2}", min_driver):
            raise row.error(f"min_driver = {min_driver!r} is not an NVIDIA driver version like '580' or '525.60.13'")
        if backend == "cuda" and min_driver is None:
            raise row.error("a CUDA plugin names its min_driver (the NVIDIA driver floor)")
        out.append(
            JaxPlugin(
                family=family, backend=backend, major=major, plugin=row.string("plugin"),
                pjrt=row.string("pjrt"), module=row.string("module"), entry_point=entry,
                platform=row.string("platform"), extra=row.opt_string("extra"), min_driver=min_driver,
                min_jaxlib=row.opt_pep440("min_jaxlib"), sources=row.source_keys(),
                unconfirmed=row.unconfirmed(),
            )
        )
    if not out:
        raise DataError(f"{FILE}: no [[plugin]] rows", FIX)
    return tuple(out)


def _family(row: Row, families: dict[str, JaxPlugin]) -> str:
    family = row.string("family")
    if family not in families:
        raise row.error(f"family {family!r} has no [[plugin]] row (known: {', '.join(sorted(families))})")
    return family


def _archs(doc: dict[str, Any], src: dict[str, str], families: dict[str, JaxPlugin]) -> tuple[PluginArchs, ...]:
    out: list[PluginArchs] = []
    for row in table(doc, "plugin_archs", file=FILE, keys=("family", "version", "archs"), sources=src):
        family = _family(row, families)
        if families[family].backend != "rocm":
            raise row.error(f"{family} is not a ROCm plugin; only ROCm plugins carry gfx code objects")
        archs = row.strings("archs", required=True)
        for name in archs:
            if gfx.parse_gfx(name) != name:
                raise row.error(f"archs lists {name!r}, which is not a gfx target like 'gfx90a'")
        out.append(
            PluginArchs(family=family, version=row.pep440("version"), archs=archs, sources=row.source_keys(),
                        unconfirmed=row.unconfirmed())
        )
    return tuple(out)


def _routes(doc: dict[str, Any], src: dict[str, str]) -> tuple[Route, ...]:
    keys = ("name", "backend", "index", "description", "needs_local_rocm", "first")
    out: list[Route] = []
    for row in table(doc, "route", file=FILE, keys=keys, sources=src, name_key="name"):
        index = row.string("index")
        if not index.startswith("https://"):
            raise row.error(f"index {index!r} must be an https:// URL")
        local = row.opt_bool("needs_local_rocm")
        out.append(
            Route(name=row.string("name"), backend=_backend(row), index=index,
                  description=row.string("description"), needs_local_rocm=True if local is None else local,
                  first=row.opt_string("first"), sources=row.source_keys(), unconfirmed=row.unconfirmed())
        )
    return tuple(out)


def _fixes(doc: dict[str, Any], src: dict[str, str]) -> tuple[KnownFix, ...]:
    keys = ("name", "backend", "variable", "value", "libraries", "problem", "remedy")
    out: list[KnownFix] = []
    for row in table(doc, "fix", file=FILE, keys=keys, sources=src, name_key="name"):
        name = row.string("name")
        if any(f.name == name for f in out):
            raise DataError(f"{FILE}: duplicate fix {name!r}", "keep one row per fix")
        variable = row.opt_string("variable")
        libraries = row.strings("libraries")
        if variable is None and not libraries:
            raise row.error("a fix names a variable (with its value) or the libraries to provide")
        if variable is not None and not row.has("value"):
            raise row.error(f"fix {name!r} names variable {variable} without its value")
        out.append(
            KnownFix(name=name, backend=_backend(row), problem=row.string("problem"), remedy=row.string("remedy"),
                     variable=variable, value=row.opt_string("value"),
                     libraries=libraries, sources=row.source_keys(), unconfirmed=row.unconfirmed())
        )
    return tuple(out)


def _python(row: Row, key: str) -> str:
    text = row.release(key)
    if len(text.split(".")) != 2:
        raise row.error(f"{key} = {text!r} is not a Python X.Y")
    return text


def _releases(doc: dict[str, Any], src: dict[str, str], families: dict[str, JaxPlugin]) -> tuple[JaxRelease, ...]:
    keys = ("version", "python_min", "python_max", "released", "plugins")
    out: list[JaxRelease] = []
    for row in table(doc, "release", file=FILE, keys=keys, sources=src, name_key="version"):
        version = row.pep440("version")
        if any(r.version == version for r in out):
            raise DataError(f"{FILE}: duplicate release {version!r}", "keep one row per release")
        released = row.data.get("released")
        if released is not None and not isinstance(released, dt.date):
            raise row.error(f"released must be a date (2026-01-31), got {released!r}")
        builds: list[PluginBuild] = []
        for j, bdata in enumerate(row.data.get("plugins", [])):
            b = Row(bdata, file=FILE, where=f"release {version!r} plugins #{j + 1}",
                    keys=("family", "version", "python_min", "python_max"), sources=src)
            bversion = b.pep440("version")
            if Version(bversion).release != Version(version).release:
                raise b.error(f"plugin version {bversion} is not a build of jax {version}")
            builds.append(PluginBuild(family=_family(b, families), version=bversion,
                                      python_min=_python(b, "python_min"), python_max=_python(b, "python_max")))
        out.append(
            JaxRelease(version=version, python_min=_python(row, "python_min"), python_max=_python(row, "python_max"),
                       released=released, plugins=tuple(builds), sources=row.source_keys(),
                       unconfirmed=row.unconfirmed())
        )
    if not out:
        raise DataError(f"{FILE}: no [[release]] rows", "run `rocmkit matrix refresh --write`")
    return tuple(sorted(out, key=lambda r: Version(r.version)))


def _torch_xla(doc: dict[str, Any], src: dict[str, str]) -> tuple[TorchXlaRelease, ...]:
    out: list[TorchXlaRelease] = []
    for row in table(
        doc,
        "torch_xla",
        file=FILE,
        keys=("version", "python_min", "python_max"),
        sources=src,
        name_key="version",
    ):
        out.append(TorchXlaRelease(version=row.pep440("version"), python_min=_python(row, "python_min"),
                                   python_max=_python(row, "python_max"), sources=row.source_keys(),
                                   unconfirmed=row.unconfirmed()))
    return tuple(sorted(out, key=lambda r: Version(r.version)))


def _torch_xla_gpu(doc: dict[str, Any], src: dict[str, str]) -> TorchXlaGpu:
    row = Row(doc.get("torch_xla_gpu"), file=FILE, where="[torch_xla_gpu]", keys=("available",), sources=src)
    available = row.opt_bool("available")
    if available is None:
        raise row.error("missing required key 'available'")
    return TorchXlaGpu(available=available, note=row.string("note"), sources=row.source_keys(),
                       unconfirmed=row.unconfirmed())
