"""Read and validate ``matrices/*.toml`` into a :class:`Matrix` (cached per folder)."""

from __future__ import annotations

import datetime as dt
import re
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

from packaging.version import Version

from rocmkit import arch as gfx
from rocmkit.arch import Backend
from rocmkit.errors import DataError
from rocmkit.matrix.fields import (
    FIX,
    Row,
    check_keys,
    did_you_mean,
    parse_release,
    read_sources,
    read_toml,
    table,
)
from rocmkit.matrix.model import (
    Channel,
    CudaToolkit,
    FamilyIndex,
    GfxArch,
    Matrix,
    NvidiaGpu,
    PciDevice,
    RocmIndex,
    RocmRelease,
    TorchRelease,
    TorchVariant,
    normalize_pci_id,
    release_key,
)
from rocmkit.packages import parse_pin
from rocmkit.plan import Backend as PlanBackend
from rocmkit.util.paths import matrices_dir

FILES = ("gfx.toml", "nvidia.toml", "torch.toml", "rocm.toml", "channels.toml")

_PCI = re.compile(r"^0x[0-9a-f]{4}$")
_INDEX = re.compile(r"^(rocm\d+(\.\d+){1,2}|cu\d{3}|cpu)$")


def load_matrix(directory: Path | None = None) -> Matrix:
    """The matrix in ``directory`` (default: :func:`rocmkit.util.paths.matrices_dir`), loaded once."""
    return _load_cached(str((directory or matrices_dir()).resolve()))


@lru_cache(maxsize=4)
def _load_cached(directory: str) -> Matrix:
    return parse_matrix(Path(directory))


def clear_cache() -> None:
    _load_cached.cache_clear()


def parse_matrix(directory: Path) -> Matrix:
    docs = {name: read_toml(directory / name) for name in FILES}
    sources = {name: read_sources(doc, file=name) for name, doc in docs.items()}
    for name, doc in docs.items():
        check_keys(doc, ("schema", "sources", *_TOP_KEYS[name]), file=name, where="top level")

    archs = _parse_archs(docs["gfx.toml"], sources["gfx.toml"])
    pci = _parse_pci(docs["gfx.toml"], sources["gfx.toml"], archs)
    nvidia_gpus = _parse_nvidia_gpus(docs["nvidia.toml"], sources["nvidia.toml"])
    cuda = _parse_cuda(docs["nvidia.toml"], sources["nvidia.toml"])
    rocm_indexes = _parse_rocm_indexes(docs["torch.toml"], sources["torch.toml"], archs)
    releases = _parse_releases(docs["torch.toml"], sources["torch.toml"], rocm_indexes, cuda)
    rocm_releases = _parse_rocm_releases(docs["rocm.toml"], sources["rocm.toml"], archs)
    channels, base, pypi = _parse_channels(docs["channels.toml"], sources["channels.toml"], archs)
    families = _parse_family_indexes(docs["channels.toml"], sources["channels.toml"], archs)
    return Matrix(
        pci=pci,
        archs=archs,
        nvidia_gpus=nvidia_gpus,
        cuda_toolkits=cuda,
        rocm_indexes=rocm_indexes,
        torch_releases=releases,
        rocm_releases=rocm_releases,
        channels=channels,
        pytorch_base=base,
        pypi_url=pypi,
        sources=sources,
        family_indexes=families,
        files=tuple(str(directory / n) for n in FILES),
    )


_TOP_KEYS: dict[str, tuple[str, ...]] = {
    "gfx.toml": ("arch", "pci"),
    "nvidia.toml": ("gpu", "cuda"),
    "torch.toml": ("rocm_index", "release"),
    "rocm.toml": ("release",),
    "channels.toml": ("pytorch", "channel", "family_index"),
}


def _unique(seen: dict[str, Any], key: str, *, file: str, what: str) -> None:
    if key in seen:
        raise DataError(f"{file}: duplicate {what} {key!r}", "keep one row per entry and merge the facts")


def _known_archs(row: Row, key: str, archs: dict[str, GfxArch]) -> tuple[str, ...]:
    names = row.strings(key)
    for name in names:
        if name not in archs:
            raise row.error(
                f"{key} names {name!r}, which gfx.toml does not define{did_you_mean(name, archs)}"
            )
    return names


# -- gfx.toml -----------------------------------------------------------------


def _parse_archs(doc: dict[str, Any], src: dict[str, str]) -> dict[str, GfxArch]:
    file = "gfx.toml"
    out: dict[str, GfxArch] = {}
    keys = ("name", "generation", "integrated", "products", "hsa_override", "override_sources")
    for row in table(doc, "arch", file=file, keys=keys, sources=src, name_key="name"):
        name = row.string("name")
        row.where = f"arch {name!r}"
        if gfx.parse_gfx(name) != name:
            raise row.error(f"name {name!r} is not a gfx target like 'gfx1100' or 'gfx90a'")
        _unique(out, name, file=file, what="arch")
        override = row.opt_release("hsa_override")
        if override is not None and gfx.override_to_gfx(override) is None:
            raise row.error(f"hsa_override = {override!r} must be major.minor.stepping like '10.3.0'")
        out[name] = GfxArch(
            name=name,
            family=gfx.family(name),
            generation=row.string("generation"),
            integrated=row.opt_bool("integrated"),
            products=row.strings("products", required=True),
            hsa_override=override,
            override_sources=row.source_keys("override_sources", required=override is not None),
            sources=row.source_keys(),
            unconfirmed=row.unconfirmed(),
        )
    # The override must stay inside one family and point at an arch we know.
    for arch in out.values():
        target = arch.override_arch
        if target is None:
            continue
        if target not in out:
            raise DataError(
                f"{file}: arch {arch.name!r}: hsa_override {arch.hsa_override} means {target}, "
                "which gfx.toml does not define",
                FIX,
            )
        if out[target].family != arch.family or target == arch.name:
            raise DataError(
                f"{file}: arch {arch.name!r}: hsa_override {arch.hsa_override} ({target}) crosses "
                f"from family {arch.family} to {out[target].family}; overrides must stay in one family",
                FIX,
            )
    return out


def _parse_pci(doc: dict[str, Any], src: dict[str, str], archs: dict[str, GfxArch]) -> dict[str, PciDevice]:
    file = "gfx.toml"
    out: dict[str, PciDevice] = {}
    for row in table(
        doc, "pci", file=file, keys=("id", "product", "arch", "integrated"), sources=src, name_key="id"
    ):
        pci_id = row.string("id")
        row.where = f"pci {pci_id!r}"
        if not _PCI.match(pci_id):
            raise row.error(f"id {pci_id!r} must be lower-case '0x' and 4 hex digits, like '0x744c'")
        _unique(out, pci_id, file=file, what="pci id")
        arch = row.string("arch")
        if arch not in archs:
            raise row.error(f"arch {arch!r} is not defined in gfx.toml{did_you_mean(arch, archs)}")
        integrated = row.opt_bool("integrated")
        out[normalize_pci_id(pci_id)] = PciDevice(
            pci_id=pci_id,
            product=row.string("product"),
            arch=arch,
            integrated=integrated if integrated is not None else archs[arch].integrated,
            sources=row.source_keys(),
            unconfirmed=row.unconfirmed(),
        )
    return out


# -- nvidia.toml --------------------------------------------------------------


def _parse_nvidia_gpus(doc: dict[str, Any], src: dict[str, str]) -> tuple[NvidiaGpu, ...]:
    file = "nvidia.toml"
    out: list[NvidiaGpu] = []
    seen: dict[str, None] = {}
    for row in table(
        doc, "gpu", file=file, keys=("pattern", "compute_capability"), sources=src, name_key="pattern"
    ):
        pattern = row.string("pattern")
        row.where = f"gpu {pattern!r}"
        _unique(seen, pattern, file=file, what="gpu pattern")
        seen[pattern] = None
        try:
            # A pattern Python warns about ("possible nested set" in "[[", a bad escape) means
            # something other than its author thought, or will in a later Python: an error too.
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                regex = re.compile(pattern, re.IGNORECASE)
        except (re.error, Warning) as exc:
            raise row.error(f"pattern is not a valid regular expression: {exc}") from None
        cc = row.release("compute_capability")
        out.append(
            NvidiaGpu(
                pattern=pattern,
                compute_capability=cc,
                regex=regex,
                sources=row.source_keys(),
                unconfirmed=row.unconfirmed(),
            )
        )
    return tuple(out)


def _parse_cuda(doc: dict[str, Any], src: dict[str, str]) -> tuple[CudaToolkit, ...]:
    file = "nvidia.toml"
    out: dict[str, CudaToolkit] = {}
    for row in table(
        doc,
        "cuda",
        file=file,
        keys=("version", "min_driver", "min_compute_capability", "ga_driver"),
        sources=src,
        name_key="version",
    ):
        version = row.release("version")
        row.where = f"cuda {version!r}"
        if len(version.split(".")) != 2:
            raise row.error(f"version {version!r} must be major.minor like '12.8'")
        _unique(out, version, file=file, what="cuda version")
        out[version] = CudaToolkit(
            version=version,
            min_driver=row.release("min_driver"),
            min_compute_capability=row.opt_release("min_compute_capability"),
            ga_driver=row.opt_release("ga_driver"),
            sources=row.source_keys(),
            unconfirmed=row.unconfirmed(),
        )
    return tuple(sorted(out.values(), key=lambda c: release_key(c.version)))


# -- torch.toml ---------------------------------------------------------------


def _parse_rocm_indexes(
    doc: dict[str, Any], src: dict[str, str], archs: dict[str, GfxArch]
) -> dict[str, RocmIndex]:
    file = "torch.toml"
    out: dict[str, RocmIndex] = {}
    for row in table(
        doc,
        "rocm_index",
        file=file,
        keys=("name", "archs", "incomplete_archs", "incomplete_sources"),
        sources=src,
        name_key="name",
    ):
        name = row.string("name")
        row.where = f"rocm_index {name!r}"
        parsed = PlanBackend.read(name)
        if parsed is None or parsed.rocm is None or not _INDEX.match(name):
            raise row.error(f"name {name!r} must look like 'rocm6.2' or 'rocm6.2.4'")
        _unique(out, name, file=file, what="rocm_index")
        out[name] = RocmIndex(
            name=name,
            rocm=parsed.rocm,
            archs=_known_archs(row, "archs", archs),
            incomplete_archs=_known_archs(row, "incomplete_archs", archs),
            incomplete_sources=row.source_keys("incomplete_sources", required=row.has("incomplete_archs")),
            sources=row.source_keys(),
            unconfirmed=row.unconfirmed(),
        )
    return out


_COMPATIBLE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)~=([0-9][0-9.]*)$")


def _triton_requirement(row: Row, kind: str) -> str | None:
    """A variant's Triton: an exact pin, or for a CUDA build the compatible-release range its
    PyPI wheel requires ("triton~=3.8.0": torch 2.14's Requires-Dist), which pip reads as is."""
    text = row.opt_string("triton")
    if text is not None and kind == "cuda" and "~=" in text:
        m = _COMPATIBLE.match(text)
        if m is None or len(m.group(2).split(".")) < 2:
            raise row.error(f"triton = {text!r} must be 'name~=X.Y[.Z]' (like 'triton~=3.8.0')")
        return text
    return _requirement_pin(row, "triton")


def _requirement_pin(row: Row, key: str) -> str | None:
    """ "name==version" (no extras, no markers): what a plan can hand to pip as is."""
    text = row.opt_string(key)
    if text is None:
        return None
    pin = parse_pin(text)
    if pin is None or not pin.plain:
        raise row.error(f"{key} = {text!r} must pin one version with '==' (like 'triton-rocm==3.6.0')")
    try:
        Version(pin.version)
    except ValueError:  # InvalidVersion, or more digits than int() takes
        raise row.error(f"{key} = {text!r}: {pin.version!r} is not a valid version") from None
    return text


def _iso_date(row: Row, key: str) -> str | None:
    value = row.data.get(key)
    if value is None:
        return None
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value).isoformat()
        except ValueError:
            pass
    raise row.error(f"{key} = {value!r} must be a date like 2024-10-29")


def _parse_releases(
    doc: dict[str, Any],
    src: dict[str, str],
    rocm_indexes: dict[str, RocmIndex],
    cuda: tuple[CudaToolkit, ...],
) -> tuple[TorchRelease, ...]:
    file = "torch.toml"
    cuda_tags = {c.tag for c in cuda}
    out: dict[str, TorchRelease] = {}
    release_keys = (
        "version",
        "torchvision",
        "torchaudio",
        "python_min",
        "python_max",
        "released",
        "variants",
        # Indexes a build list names but the release does not ship (cu134 of 2.14.x, dropped
        # from release/2.14 before it went out), with the source that says so.
        "not_built",
        "not_built_sources",
    )
    for row in table(doc, "release", file=file, keys=release_keys, sources=src, name_key="version"):
        version = row.pep440("version")
        row.where = f"release {version!r}"
        _unique(out, version, file=file, what="release")
        py_min, py_max = row.release("python_min"), row.release("python_max")
        if release_key(py_min) > release_key(py_max):
            raise row.error(f"python_min {py_min} is newer than python_max {py_max}")
        not_built = row.strings("not_built")
        row.source_keys("not_built_sources", required=bool(not_built))
        raw = row.data.get("variants")
        if not isinstance(raw, list) or not raw:
            raise row.error("variants must be a non-empty list of { index = ... } tables")
        variants: dict[str, TorchVariant] = {}
        for j, vdata in enumerate(raw):
            vrow = Row(
                vdata,
                file=file,
                where=f"release {version!r} variant #{j + 1}",
                keys=("index", "triton", "archs", "interpreter_triton", "linux_only"),
                sources=src,
                name_key="index",
            )
            index = vrow.string("index")
            vrow.where = f"release {version!r} variant {index!r}"
            if not _INDEX.match(index):
                raise vrow.error(f"index {index!r} must be like 'rocm6.2', 'cu124' or 'cpu'")
            _unique(variants, index, file=file, what=f"variant in release {version!r}:")
            if index in not_built:
                raise vrow.error(f"index {index!r} is also listed in not_built; keep one of the two")
            parsed = PlanBackend.parse(index)  # _INDEX admits PyTorch's rocm, cu and cpu names only
            kind: Backend = "rocm" if parsed.kind == "rocm" else "cuda" if parsed.kind == "cuda" else "cpu"
            archs: tuple[str, ...] = ()
            if kind == "rocm":
                if index not in rocm_indexes:
                    raise vrow.error(
                        f"index {index!r} has no [[rocm_index]] row{did_you_mean(index, rocm_indexes)}"
                    )
                archs = vrow.strings("archs") or rocm_indexes[index].archs
            elif kind == "cuda" and index not in cuda_tags:
                raise vrow.error(f"index {index!r} has no [[cuda]] row in nvidia.toml (its minimum driver)")
            variants[index] = TorchVariant(
                index=index,
                kind=kind,
                triton=_triton_requirement(vrow, kind),
                interpreter_triton=_requirement_pin(vrow, "interpreter_triton"),
                linux_only=bool(vrow.opt_bool("linux_only")),
                archs=archs,
                sources=vrow.source_keys(required=False) or row.source_keys(),
                unconfirmed=vrow.unconfirmed(),
            )
        out[version] = TorchRelease(
            version=version,
            torchvision=row.opt_pep440("torchvision"),
            torchaudio=row.opt_pep440("torchaudio"),
            python_min=py_min,
            python_max=py_max,
            released=_iso_date(row, "released"),
            variants=tuple(variants.values()),
            sources=row.source_keys(),
            unconfirmed=row.unconfirmed(),
        )
    return tuple(sorted(out.values(), key=lambda r: Version(r.version)))


# -- rocm.toml ----------------------------------------------------------------


def _parse_rocm_releases(
    doc: dict[str, Any], src: dict[str, str], archs: dict[str, GfxArch]
) -> tuple[RocmRelease, ...]:
    file = "rocm.toml"
    out: dict[str, RocmRelease] = {}
    keys = ("version", "released", "supported", "deprecated", "amdgpu_dkms", "userspace_min", "userspace_max")
    for row in table(doc, "release", file=file, keys=keys, sources=src, name_key="version"):
        version = row.release("version")
        row.where = f"release {version!r}"
        _unique(out, version, file=file, what="release")
        dkms = row.strings("amdgpu_dkms")
        for d in dkms:
            parse_release(d, file=file, where=row.where, key="amdgpu_dkms")
        lo, hi = row.opt_release("userspace_min"), row.opt_release("userspace_max")
        if lo and hi and release_key(lo) > release_key(hi):
            raise row.error(f"userspace_min {lo} is newer than userspace_max {hi}")
        out[version] = RocmRelease(
            version=version,
            released=_iso_date(row, "released"),
            supported=_known_archs(row, "supported", archs),
            deprecated=_known_archs(row, "deprecated", archs),
            amdgpu_dkms=dkms,
            userspace_min=lo,
            userspace_max=hi,
            sources=row.source_keys(),
            unconfirmed=row.unconfirmed(),
        )
    return tuple(sorted(out.values(), key=lambda r: release_key(r.version)))


# -- channels.toml ------------------------------------------------------------


def _parse_channels(
    doc: dict[str, Any], src: dict[str, str], archs: dict[str, GfxArch]
) -> tuple[dict[str, Channel], str, str | None]:
    file = "channels.toml"
    pt = Row(doc.get("pytorch"), file=file, where="[pytorch]", keys=("base", "pypi"), sources=src)
    base = pt.string("base").rstrip("/")
    pypi = pt.opt_string("pypi")
    out: dict[str, Channel] = {}
    keys = (
        "name",
        "kind",
        "url",
        "description",
        "indexes",
        "torch_min",
        "archs",
        "legacy_archs",
        "python_min",
        "python_max",
        "packages",
        "aliases",
        "stream",
        "all_arch_url",
        "legacy_url",
        "layout_from",
        "rocm",
    )
    names: dict[str, Channel] = {}
    for row in table(doc, "channel", file=file, keys=keys, sources=src, name_key="name"):
        name = row.string("name")
        row.where = f"channel {name!r}"
        _unique(out, name, file=file, what="channel")
        kind = row.string("kind")
        # "therock": the kind's name before AMD's stable and rc channels joined the nightly one.
        if kind not in ("pytorch", "amd", "therock"):
            raise row.error(f"kind = {kind!r} must be 'pytorch' or 'amd'")
        stream = row.opt_string("stream")
        if stream is not None and stream not in ("stable", "rc", "nightly"):
            raise row.error(f"stream = {stream!r} must be 'stable', 'rc' or 'nightly'")
        url = row.string("url")
        if kind == "pytorch" and "{index}" not in url:
            raise row.error("a pytorch channel's url must contain {index}")
        for index in row.strings("indexes"):
            if not _INDEX.match(index):
                raise row.error(f"indexes lists {index!r}, not an index name like 'rocm7.2'")
        channel = Channel(
            name=name,
            kind="pytorch" if kind == "pytorch" else "amd",
            url=url,
            description=row.opt_string("description") or "",
            indexes=row.strings("indexes"),
            torch_min=row.opt_pep440("torch_min"),
            archs=_known_archs(row, "archs", archs),
            legacy_archs=_known_archs(row, "legacy_archs", archs),
            python_min=row.opt_release("python_min"),
            python_max=row.opt_release("python_max"),
            packages=row.strings("packages"),
            aliases=row.strings("aliases"),
            stream=stream,
            all_arch_url=row.opt_string("all_arch_url"),
            legacy_url=row.opt_string("legacy_url"),
            layout_from=row.opt_release("layout_from"),
            rocm=row.opt_release("rocm"),
            sources=row.source_keys(),
            unconfirmed=row.unconfirmed(),
        )
        if channel.legacy_archs and not channel.legacy_url:
            raise row.error("legacy_archs names the device packages of legacy_url, which this channel has not")
        out[name] = channel
        for alias in channel.aliases:
            if alias in names or alias in out:
                raise row.error(f"alias {alias!r} is already a channel's name")
            names[alias] = channel
    for alias, channel in names.items():
        if alias in out:
            raise DataError(f"{file}: {alias!r} is both a channel and an alias of {channel.name!r}", FIX)
        out[alias] = channel
    if any(n not in out for n in ("stable", "nightly", "therock")):
        raise DataError(f"{file}: the channels stable, nightly and therock must all be defined", FIX)
    return out, base, pypi


def _parse_family_indexes(
    doc: dict[str, Any], src: dict[str, str], archs: dict[str, GfxArch]
) -> tuple[FamilyIndex, ...]:
    file = "channels.toml"
    out: dict[str, FamilyIndex] = {}
    for row in table(
        doc, "family_index", file=file, keys=("name", "url", "archs"), sources=src, name_key="name"
    ):
        name = row.string("name")
        _unique(out, name, file=file, what="family_index")
        out[name] = FamilyIndex(
            name=name,
            url=row.string("url"),
            archs=_known_archs(row, "archs", archs),
            sources=row.source_keys(),
            unconfirmed=row.unconfirmed(),
        )
    return tuple(out.values())
