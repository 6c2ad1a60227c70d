"""``matrices/images.toml``: base images per ROCm/CUDA release and the images to render,
validated on load, and the image spec that ``rocmkit docker render`` options choose."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.arch import GPU_BACKENDS, GpuBackend
from rocmkit.errors import UsageError
from rocmkit.matrix.fields import Row, check_keys, did_you_mean, parse_release, read_sources, read_toml, rows
from rocmkit.util.paths import matrices_dir

if TYPE_CHECKING:
    from rocmkit.matrix.model import TorchRelease

FILE = "images.toml"
LABELS: dict[GpuBackend, str] = {"rocm": "ROCm", "cuda": "CUDA"}


@dataclass(frozen=True, kw_only=True)
class BaseImage:
    kind: GpuBackend
    release: str  # the minor release the torch index names: "6.2", "12.4"
    version: str  # what the image ships: "6.2.4"
    image: str  # "rocm/dev-ubuntu-22.04:6.2.4"
    confirmed: bool
    sources: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ImageSpec:
    """One ROCm image to render: a ROCm release, a torch release and the archs."""

    name: str
    release: str  # the ROCm minor release: "6.2"
    torch: str
    gfx: tuple[str, ...]

    @property
    def filename(self) -> str:
        return f"{self.name}.Dockerfile"


@dataclass(frozen=True, kw_only=True)
class Images:
    bases: tuple[BaseImage, ...]
    specs: tuple[ImageSpec, ...]
    sources: dict[str, str]

    def base(self, kind: GpuBackend, release: str) -> BaseImage:
        for b in self.bases:
            if b.kind == kind and b.release == release:
                return b
        known = [b.release for b in self.bases if b.kind == kind]
        raise UsageError(
            f"no {LABELS[kind]} {release} base image in {FILE}{did_you_mean(release, known)}",
            f"pick one of {', '.join(known)}, or add a [[{kind}]] row with its source to matrices/{FILE}",
        )


_BASE_KEYS = ("version", "image")
# ROCm only: an image is installed for archs named at build time, and
# `rocmkit install` has no way yet to be told a CUDA release without a GPU.
_SPEC_KEYS = ("name", "rocm", "torch", "gfx")


def load_images(path: Path | None = None) -> Images:
    """``matrices/images.toml``, validated (unknown keys, undeclared sources, bad versions
    are a DataError naming the entry), loaded once per path."""
    return _load_cached(str((path or matrices_dir() / FILE).resolve()))


@lru_cache(maxsize=4)
def _load_cached(path: str) -> Images:
    return parse_images(Path(path))


def parse_images(path: Path) -> Images:
    doc = read_toml(path)
    file = path.name
    check_keys(doc, ("schema", "sources", "rocm", "cuda", "image"), file=file, where="top level")
    src = read_sources(doc, file=file)
    bases: list[BaseImage] = []
    for base_kind in GPU_BACKENDS:
        seen: set[str] = set()
        for i, data in enumerate(rows(doc, base_kind, file=file)):
            row = Row(
                data, file=file, where=f"[[{base_kind}]] #{i + 1}", keys=(base_kind, *_BASE_KEYS), sources=src
            )
            release = row.release(base_kind)
            version = row.release("version")
            if not version.startswith(release + ".") and version != release:
                raise row.error(f"version {version!r} is not a {base_kind} {release} release")
            if release in seen:
                raise row.error(f"{base_kind} {release} is listed twice")
            seen.add(release)
            image = row.string("image")
            if ":" not in image.rsplit("/", 1)[-1]:
                raise row.error(f"image {image!r} has no tag; pin one (never :latest by default)")
            bases.append(
                BaseImage(
                    kind=base_kind,
                    release=release,
                    version=version,
                    image=image,
                    confirmed=row.opt_bool("confirmed") is not False,
                    sources=row.source_keys(),
                )
            )
    images = Images(bases=tuple(bases), specs=(), sources=src)
    specs: list[ImageSpec] = []
    names: set[str] = set()
    for i, data in enumerate(rows(doc, "image", file=file)):
        row = Row(data, file=file, where=f"[[image]] #{i + 1}", keys=_SPEC_KEYS, sources=src)
        row.source_keys()
        name = row.string("name")
        if name in names:
            raise row.error(f"image name {name!r} is used twice")
        names.add(name)
        release = row.release("rocm")
        try:
            images.base("rocm", release)
        except UsageError as exc:
            raise row.error(exc.message) from None
        gfx = row.strings("gfx", required=True)
        specs.append(ImageSpec(name=name, release=release, torch=_torch(row.string("torch"), row), gfx=gfx))
    return Images(bases=images.bases, specs=tuple(specs), sources=src)


def _torch(text: str, row: Row) -> str:
    parse_release(text, file=row.file, where=row.where, key="torch")
    return text


def check_gfx(archs: Sequence[str]) -> tuple[str, ...]:
    """The gfx archs, each one known to the gfx matrix (a typo is a UsageError)."""
    from rocmkit.matrix import load_matrix

    matrix = load_matrix()
    out: list[str] = []
    for given in archs:
        arch = given.strip().lower()
        if not arch:
            continue
        if matrix.gfx_arch(arch) is None:
            raise UsageError(
                f"unknown gfx arch {arch!r}{did_you_mean(arch, matrix.archs)}",
                "use the arch `rocmkit detect` shows, e.g. gfx90a, gfx942, gfx1100",
            )
        if arch not in out:
            out.append(arch)
    if not out:
        raise UsageError("--gfx names no arch", "e.g. --gfx gfx90a,gfx942")
    return tuple(out)


def _check_torch_wheels(torch: str, rocm: str) -> None:
    """Refuse a torch release with no wheels for this ROCm release in matrices/torch.toml:
    the image's `rocmkit install` step would otherwise fail inside `docker build`."""
    from rocmkit.matrix import load_matrix
    from rocmkit.matrix.model import release_key
    from rocmkit.resolve.rocm import rocm_matches

    m = load_matrix()

    def has_wheels(releases: Sequence[TorchRelease]) -> bool:
        return any(rocm_matches(v.rocm or "", rocm, m) for r in releases for v in r.of_kind("rocm"))

    if has_wheels(m.torch_series(torch)):
        return
    series = sorted({r.series for r in m.torch_releases if has_wheels((r,))}, key=release_key)
    raise UsageError(
        f"matrices/torch.toml has no torch {torch} wheels for ROCm {rocm}",
        f"pick one of {', '.join(series)}" if series else "pick another --rocm release",
    )


def choose_spec(
    images: Images, *, rocm: str | None = None, torch: str | None = None, gfx: Sequence[str] | None = None
) -> ImageSpec:
    """The image for these options; what is not given comes from the first ``[[image]]``
    row of the same ROCm release."""
    if rocm is None:
        raise UsageError("say which ROCm release to render", "pass --rocm X.Y, or --out DIR for every image")
    images.base("rocm", rocm)
    row = next((s for s in images.specs if s.release == rocm), None)
    torch = torch or (row.torch if row else None)
    if torch is None:
        raise UsageError(f"{FILE} has no image for ROCm {rocm}", "pass --torch X.Y")
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", torch):
        raise UsageError(f"--torch {torch!r} is not a version", "give a release like 2.5 or 2.5.1")
    if row is None or torch != row.torch:
        _check_torch_wheels(torch, rocm)
    archs = check_gfx(gfx) if gfx else (row.gfx if row else ())
    if not archs:
        raise UsageError(f"no gfx archs for ROCm {rocm}", "pass --gfx gfx90a,gfx942")
    if row and row.torch == torch and row.gfx == archs:
        name = row.name
    else:  # a name of its own, so it never overwrites a matrix image's file
        name = "-".join((f"rocm{rocm}", f"torch{torch}", *archs))
    return ImageSpec(name=name, release=rocm, torch=torch, gfx=archs)
