"""``matrices/images.toml``: base images per ROCm release and for CPU and CUDA images, the
``docker run`` flags per kind, and the images to render, validated on load; and the image
spec that ``rocmkit docker render`` options choose."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.arch import BACKENDS, Backend
from rocmkit.errors import UsageError
from rocmkit.matrix.fields import Row, check_keys, did_you_mean, parse_release, read_sources, read_toml, rows
from rocmkit.plan import Backend as PlanBackend
from rocmkit.util.paths import matrices_dir

if TYPE_CHECKING:
    from rocmkit.matrix.model import Matrix, TorchRelease

FILE = "images.toml"
LABELS: dict[Backend, str] = {"rocm": "ROCm", "cuda": "CUDA", "cpu": "CPU"}
# "12.8" or "cu128": a CUDA release as images.toml writes it (and the old CUDA option took it; --backend cu128 gives 12.8).
_CUDA = re.compile(r"^(?:cu([0-9]{3})|([0-9]{2})\.([0-9]))$")


@dataclass(frozen=True, kw_only=True)
class BaseImage:
    kind: Backend
    release: str  # the ROCm minor release the torch index names ("6.2"); "" for the CPU and CUDA bases
    version: str  # what the image ships ("6.2.4"); "" where it ships no GPU runtime
    image: str  # "rocm/dev-ubuntu-22.04:6.2.4"
    confirmed: bool
    sources: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ImageSpec:
    """One image to render: its kind, its ROCm or CUDA release, a torch release, and (ROCm)
    the archs it is installed for."""

    name: str
    kind: Backend
    release: str  # ROCm "6.2" (or "6.2.4", where the torch index names the patch level), CUDA "12.8", "" for CPU
    torch: str
    gfx: tuple[str, ...] = ()
    # The plan's platform (docs/platforms.md): None for x86_64 Linux, "linux-aarch64", "wsl2-x86_64".
    platform: str | None = None

    @property
    def docker_platform(self) -> str | None:
        """``docker build --platform``'s value for an image of another CPU than x86_64."""
        return "linux/arm64" if (self.platform or "").endswith("-aarch64") else None

    @property
    def filename(self) -> str:
        return f"{self.name}.Dockerfile"

    @property
    def base_release(self) -> str:
        """The release whose base image it starts from: ROCm bases are per minor release."""
        return ".".join(self.release.split(".")[:2])

    @property
    def backend_tag(self) -> str:
        """What ``--backend`` names this image's wheels by: rocm6.2, cu128, cpu."""
        if self.kind == "rocm":
            return str(PlanBackend.rocm_index(self.release))
        return self.cuda_tag if self.kind == "cuda" else "cpu"

    @property
    def cuda_tag(self) -> str:
        """ "12.8" -> "cu128", the torch index's name for the CUDA wheels."""
        return str(PlanBackend.cuda_index(self.release))


@dataclass(frozen=True, kw_only=True)
class Images:
    bases: tuple[BaseImage, ...]
    specs: tuple[ImageSpec, ...]
    sources: dict[str, str]
    run: dict[Backend, str]  # `docker run` flags per kind of image
    run_sources: tuple[str, ...] = ()

    def base(self, kind: Backend, release: str = "") -> BaseImage:
        """The base of a ROCm release's images, or the one base of the CPU or CUDA images."""
        for b in self.bases:
            if b.kind == kind and (kind != "rocm" or b.release == release):
                return b
        if kind != "rocm":
            raise UsageError(f"{FILE} has no [{kind}] base image", f"add a [{kind}] table with its source to matrices/{FILE}")
        known = [b.release for b in self.bases if b.kind == kind]
        raise UsageError(
            f"no {LABELS[kind]} {release} base image in {FILE}{did_you_mean(release, known)}",
            f"pick one of {', '.join(known)}, or add a [[{kind}]] row with its source to matrices/{FILE}",
        )


_BASE_KEYS = ("version", "image")
_PLAIN_KEYS = ("image",)
# An image is `rocm = "X.Y"` (with gfx), `cuda = "X.Y"` or `cpu = true`.
_SPEC_KEYS = ("name", "rocm", "cuda", "cpu", "torch", "gfx")


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
    check_keys(doc, ("schema", "sources", "rocm", "cuda", "cpu", "run", "image"), file=file, where="top level")
    src = read_sources(doc, file=file)
    bases = [*_rocm_bases(doc, file, src), *_plain_bases(doc, file, src)]
    run_row = Row(doc.get("run", {}), file=file, where="[run]", keys=BACKENDS, sources=src)
    run = {kind: run_row.string(kind) for kind in BACKENDS}
    images = Images(bases=tuple(bases), specs=(), sources=src, run=run, run_sources=run_row.source_keys())
    specs: list[ImageSpec] = []
    names: set[str] = set()
    for i, data in enumerate(rows(doc, "image", file=file)):
        row = Row(data, file=file, where=f"[[image]] #{i + 1}", keys=_SPEC_KEYS, sources=src, name_key="name")
        row.source_keys()
        name = row.string("name")
        if name in names:
            raise row.error(f"image name {name!r} is used twice")
        names.add(name)
        specs.append(_spec_row(row, images, name))
    return Images(bases=images.bases, specs=tuple(specs), sources=src, run=run, run_sources=images.run_sources)


def _rocm_bases(doc: dict[str, object], file: str, src: dict[str, str]) -> list[BaseImage]:
    bases: list[BaseImage] = []
    seen: set[str] = set()
    for i, data in enumerate(rows(doc, "rocm", file=file)):
        row = Row(data, file=file, where=f"[[rocm]] #{i + 1}", keys=("rocm", *_BASE_KEYS), sources=src)
        release = row.release("rocm")
        version = row.release("version")
        if not version.startswith(release + ".") and version != release:
            raise row.error(f"version {version!r} is not a rocm {release} release")
        if release in seen:
            raise row.error(f"rocm {release} is listed twice")
        seen.add(release)
        bases.append(
            BaseImage(
                kind="rocm",
                release=release,
                version=version,
                image=_tagged(row),
                confirmed=row.opt_bool("confirmed") is not False,
                sources=row.source_keys(),
            )
        )
    return bases


def _plain_bases(doc: dict[str, object], file: str, src: dict[str, str]) -> list[BaseImage]:
    """[cpu] and [cuda]: one base each (the wheels bring all but Python and the driver)."""
    out: list[BaseImage] = []
    for kind in ("cpu", "cuda"):
        if kind not in doc:
            continue
        row = Row(doc[kind], file=file, where=f"[{kind}]", keys=_PLAIN_KEYS, sources=src)
        out.append(
            BaseImage(
                kind=kind,
                release="",
                version="",
                image=_tagged(row),
                confirmed=row.opt_bool("confirmed") is not False,
                sources=row.source_keys(),
            )
        )
    return out


def _tagged(row: Row) -> str:
    image = row.string("image")
    if ":" not in image.rsplit("/", 1)[-1]:
        raise row.error(f"image {image!r} has no tag; pin one (never :latest by default)")
    if image.endswith(":latest"):
        raise row.error(f"image {image!r} is :latest; pin a release tag")
    return image


def _spec_row(row: Row, images: Images, name: str) -> ImageSpec:
    kinds = [k for k in BACKENDS if row.has(k)]
    if len(kinds) != 1:
        raise row.error(
            "names no kind of image (rocm, cuda or cpu)" if not kinds else f"names {' and '.join(kinds)}: one kind per image"
        )
    kind = kinds[0]
    torch = _torch(row.string("torch"), row)
    if kind != "rocm" and row.has("gfx"):
        raise row.error("gfx is for ROCm images (a CPU or CUDA image runs on whatever the node has)")
    if kind == "cpu":
        if row.opt_bool("cpu") is not True:
            raise row.error("cpu must be true (or leave it out and name rocm or cuda)")
        _base_of(row, images, "cpu")
        return ImageSpec(name=name, kind="cpu", release="", torch=torch)
    if kind == "cuda":
        try:
            release = cuda_release(row.string("cuda"), what="cuda")
        except UsageError as exc:
            raise row.error(exc.message) from None
        _base_of(row, images, "cuda")
        return ImageSpec(name=name, kind="cuda", release=release, torch=torch)
    release = row.release("rocm")
    _base_of(row, images, "rocm", release)
    return ImageSpec(name=name, kind="rocm", release=release, torch=torch, gfx=row.strings("gfx", required=True))


def _base_of(row: Row, images: Images, kind: Backend, release: str = "") -> None:
    try:
        images.base(kind, release)
    except UsageError as exc:
        raise row.error(exc.message) from None


def _torch(text: str, row: Row) -> str:
    parse_release(text, file=row.file, where=row.where, key="torch")
    return text


def cuda_release(text: str, *, what: str = "CUDA") -> str:
    """ "12.8" or "cu128" -> "12.8" (a UsageError when it is neither)."""
    m = _CUDA.match(text.strip().lower())
    if m is None:
        fix = "give --backend cuXYZ, e.g. cu128 (CUDA 12.8)" if what == "CUDA" else "give one like 12.8 or cu128"
        raise UsageError(f"{what} {text!r} is not a {'release' if what == 'CUDA' else 'CUDA release'}", fix)
    if m.group(1):
        return PlanBackend.parse(m.group(0)).cuda or ""
    return f"{m.group(2)}.{m.group(3)}"


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


def _wheels_for(m: Matrix, kind: Backend, release: str) -> Callable[[Sequence[TorchRelease]], bool]:
    """Whether some of these torch releases has wheels for an image of this kind and release."""
    from rocmkit.resolve.rocm import rocm_matches

    def has_wheels(releases: Sequence[TorchRelease]) -> bool:
        for r in releases:
            if kind == "rocm" and any(rocm_matches(v.rocm or "", release, m) for v in r.of_kind("rocm")):
                return True
            if kind == "cuda" and r.variant(str(PlanBackend.cuda_index(release))) is not None:
                return True
            if kind == "cpu" and r.of_kind("cpu"):
                return True
        return False

    return has_wheels


def _series_with_wheels(m: Matrix, kind: Backend, release: str) -> list[str]:
    from rocmkit.matrix.model import release_key

    has_wheels = _wheels_for(m, kind, release)
    return sorted({r.series for r in m.torch_releases if has_wheels((r,))}, key=release_key)


def _what(kind: Backend, release: str) -> str:
    return "CPU" if kind == "cpu" else f"{LABELS[kind]} {release}"


def _check_torch_wheels(torch: str, release: str, kind: Backend = "rocm") -> None:
    """Refuse a torch release with no wheels for this image in matrices/torch.toml: the
    image's `rocmkit install` step would otherwise fail inside `docker build`."""
    from rocmkit.matrix import load_matrix

    m = load_matrix()
    if _wheels_for(m, kind, release)(m.torch_series(torch)):
        return
    series = _series_with_wheels(m, kind, release)
    raise UsageError(
        f"matrices/torch.toml has no torch {torch} wheels for {_what(kind, release)}",
        f"pick one of {', '.join(series)}" if series else f"pick another --{kind} release",
    )


def _check_cuda_release(release: str) -> None:
    """A CUDA release some torch release has wheels for (matrices/torch.toml)."""
    from rocmkit.matrix import load_matrix
    from rocmkit.matrix.model import release_key

    m = load_matrix()
    known = sorted(
        {v.cuda or "" for r in m.torch_releases for v in r.of_kind("cuda")}, key=release_key
    )
    if release not in known:
        raise UsageError(
            f"matrices/torch.toml has no torch wheels for CUDA {release}{did_you_mean(release, known)}",
            f"pick one of {', '.join(known)}",
        )


def choose_spec(
    images: Images,
    *,
    rocm: str | None = None,
    cuda: str | None = None,
    cpu: bool = False,
    torch: str | None = None,
    gfx: Sequence[str] | None = None,
) -> ImageSpec:
    """The image for these options; what is not given comes from the first ``[[image]]``
    row of the same kind and release."""
    named = [n for n, v in (("rocm", rocm), ("cuda", cuda), ("cpu", cpu)) if v]
    if not named:
        raise UsageError(
            "say which image to render", "pass --backend rocmX.Y, cuXYZ or cpu, or --out DIR for every image"
        )
    if len(named) > 1:
        raise UsageError(f"two backends asked for: {' and '.join(named)}", "give one --backend")
    kind: Backend = "rocm" if rocm else "cuda" if cuda else "cpu"
    if gfx and kind != "rocm":
        raise UsageError("--gfx is for ROCm images", "drop --gfx: a CPU or CUDA image runs on whatever the node has")
    release = rocm or ""
    if kind == "cuda":
        release = cuda_release(cuda or "")
        _check_cuda_release(release)
    # A ROCm base is per minor release; --backend rocm6.2.4 (a torch index of its own) starts from 6.2's.
    images.base(kind, ".".join(release.split(".")[:2]))
    row = next((s for s in images.specs if s.kind == kind and s.release == release), None)
    torch = torch or (row.torch if row else None)
    if torch is None:
        from rocmkit.matrix import load_matrix

        series = _series_with_wheels(load_matrix(), kind, release)
        raise UsageError(
            f"{FILE} has no image for {_what(kind, release)}",
            "pass --torch X.Y" + (f": torch.toml has its wheels for {', '.join(series)}" if series else ""),
        )
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", torch):
        raise UsageError(f"--torch {torch!r} is not a version", "give a release like 2.5 or 2.5.1")
    if row is None or torch != row.torch:
        _check_torch_wheels(torch, release, kind)
    archs: tuple[str, ...] = ()
    if kind == "rocm":
        archs = check_gfx(gfx) if gfx else (row.gfx if row else ())
        if not archs:
            raise UsageError(f"no gfx archs for ROCm {release}", "pass --gfx gfx90a,gfx942")
    if row and row.torch == torch and row.gfx == archs:
        name = row.name
    else:  # a name of its own, so it never overwrites a matrix image's file
        name = "-".join((image_prefix(kind, release), f"torch{torch}", *archs))
    return ImageSpec(name=name, kind=kind, release=release, torch=torch, gfx=archs)


def image_prefix(kind: Backend, release: str) -> str:
    """How an image's name starts: "rocm6.2", "cuda12.8", "cpu"."""
    return "cpu" if kind == "cpu" else f"{kind}{release}"
