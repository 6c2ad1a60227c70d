"""Container images: base images per ROCm/CUDA release (``matrices/images.toml``) and
the Dockerfiles rendered from them.

A rendered Dockerfile installs rocmkit from the build context, runs ``rocmkit
install`` for the image's ROCm release, torch release and gfx archs,
and runs ``rocmkit doctor --level 0`` as a build step. There is no GPU at build
time, so the detection overrides ``ROCMKIT_GFX`` and ``ROCMKIT_ROCM_VERSION``
say what to install for; they are build ``ARG``s, not ``ENV``, so a running
container detects its real GPUs. The entrypoint runs ``rocmkit doctor``.

The files in ``docker/`` are this module's output, byte for byte
(``rocmkit docker render --out docker --check`` proves it). CUDA base images
are listed and validated but not rendered: without a GPU at build time,
``rocmkit install`` cannot yet be told a CUDA release.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from rocmkit.errors import UsageError
from rocmkit.matrix.fields import Row, check_keys, did_you_mean, parse_release, read_sources, rows
from rocmkit.matrix.load import read_toml
from rocmkit.paths import matrices_dir

if TYPE_CHECKING:
    from rocmkit.matrix.model import TorchRelease

FILE = "images.toml"
Kind = Literal["rocm", "cuda"]
# Level-0 checks about the host's kernel, devices and groups: at build time they
# describe the build machine (no /dev/kfd, its own kernel command line), so the
# image build leaves them out; the entrypoint's doctor runs them on the node.
BUILD_TIME_SKIP = (
    "env.amdgpu_driver",
    "env.device_nodes",
    "env.device_groups",
    "env.driver_window",
    "env.igpu",
    "env.shm",
    "env.iommu",
    "env.numa_balancing",
    "env.kfd_asic",
    "env.pcie_atomics",
    "env.virtual_gpu",
)
LABELS: dict[Kind, str] = {"rocm": "ROCm", "cuda": "CUDA"}
# Where rocmkit and the torch build it installs live inside an image.
VENV = "/opt/rocmkit"
# AMD's sample `docker run` gives PyTorch 4 GiB+ of /dev/shm (Docker's default is 64 MiB).
RUN_FLAGS = (
    "--device=/dev/kfd --device=/dev/dri --group-add video --group-add render --ipc=host --shm-size=8g"
)


@dataclass(frozen=True, kw_only=True)
class BaseImage:
    kind: Kind
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

    def base(self, kind: Kind, release: str) -> BaseImage:
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
    base_kinds: tuple[Kind, ...] = ("rocm", "cuda")
    for base_kind in base_kinds:
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


# The `# syntax=` line makes BuildKit pull a frontend image before building, which
# an air-gapped builder cannot do; the plain Dockerfile syntax needs nothing.
SYNTAX_LINE = "# syntax=docker/dockerfile:1"
# What ROCMKIT_INDEX_BASE replaces: a build can point the install at a mirror
# (--build-arg ROCMKIT_INDEX_BASE=http://mirror/whl) without editing the file.
DEFAULT_INDEX_BASE = "https://download.pytorch.org/whl"


def render_dockerfile(spec: ImageSpec, images: Images, *, syntax: bool = False) -> str:
    base = images.base("rocm", spec.release)
    status = "confirmed" if base.confirmed else "UNCONFIRMED tag: check that it exists before you rely on it"
    lines = [
        *([SYNTAX_LINE] if syntax else []),
        f"# Generated by `rocmkit docker render` from matrices/{FILE}: do not edit by hand.",
        f"# Image {spec.name}: ROCm {base.version}, torch {spec.torch}, for {','.join(spec.gfx)}.",
        f"# Base image: {status}; sources {', '.join(base.sources)} in matrices/{FILE}.",
        "#",
        "# Build from the root of a rocmkit checkout (the build context is the rocmkit source):",
        f"#   docker build -f docker/{spec.filename} -t rocmkit:{spec.name} .",
        "# Run (the GPU device nodes, the groups that own them, and room in /dev/shm):",
        f"#   docker run --rm {RUN_FLAGS} rocmkit:{spec.name}",
        f"FROM {base.image}",
        "",
        'SHELL ["/bin/bash", "-o", "pipefail", "-c"]',
        "ENV DEBIAN_FRONTEND=noninteractive \\",
        "    PIP_DISABLE_PIP_VERSION_CHECK=1 \\",
        "    PIP_NO_CACHE_DIR=1 \\",
        "    PYTHONUNBUFFERED=1",
        "",
        "# Python for rocmkit; the torch wheels bring their own ROCm libraries.",
        "# The distribution's python3 is whatever the base OS ships, so it is not pinned.",
        "# hadolint ignore=DL3008",
        "RUN apt-get update \\",
        "    && apt-get install -y --no-install-recommends python3 python3-venv python3-pip \\",
        "    && rm -rf /var/lib/apt/lists/*",
        "",
        "# One venv holds rocmkit and the torch build it installs.",
        f"RUN python3 -m venv {VENV}",
        f"ENV PATH={VENV}/bin:$PATH \\",
        f"    VIRTUAL_ENV={VENV}",
        "COPY pyproject.toml README.md /tmp/rocmkit-src/",
        "COPY rocmkit /tmp/rocmkit-src/rocmkit",
        "COPY matrices /tmp/rocmkit-src/matrices",
        "# rocmkit itself comes from the build context, so there is no version to pin.",
        "# hadolint ignore=DL3013",
        "RUN pip install --no-cache-dir /tmp/rocmkit-src && rm -rf /tmp/rocmkit-src",
        "",
        "# No GPU at build time: the detection overrides say what to install for.",
        "# They are ARGs, not ENV, so a running container detects its real GPUs.",
        f"ARG ROCMKIT_GFX={','.join(spec.gfx)}",
        f"ARG ROCMKIT_ROCM_VERSION={base.version}",
        "# The torch index: a mirror or a local index with --build-arg ROCMKIT_INDEX_BASE=URL.",
        f"ARG ROCMKIT_INDEX_BASE={DEFAULT_INDEX_BASE}",
        f"RUN rocmkit install --venv {VENV} --rocm {spec.release} --torch {spec.torch}",
        "# Static checks only (no GPU here). A step of its own, so that a failing",
        "# check is named in the build log apart from the install. The host checks",
        "# are left out: they would judge the build machine, not the node that runs this.",
        "# hadolint ignore=DL3059",
        "RUN " + build_doctor_command(),
        "",
        'ENTRYPOINT ["rocmkit", "doctor"]',
        'CMD ["--level", "1"]',
    ]
    return "\n".join(lines) + "\n"


def build_doctor_command() -> str:
    """The build step's doctor command line, wrapped for the Dockerfile."""
    skips = [f"--skip {name}" for name in BUILD_TIME_SKIP]
    rows = [" ".join(skips[i : i + 3]) for i in range(0, len(skips), 3)]
    return " \\\n    ".join(["rocmkit doctor --level 0", *rows])


def render_all(images: Images, *, syntax: bool = False) -> dict[str, str]:
    """File name -> content for every ``[[image]]`` row."""
    return {spec.filename: render_dockerfile(spec, images, syntax=syntax) for spec in images.specs}


def stale_files(out_dir: Path, rendered: dict[str, str], *, complete: bool = False) -> list[str]:
    """Rendered files that are missing in ``out_dir`` or differ from what is there; with
    ``complete`` (every image was rendered), also Dockerfiles there that no image makes."""
    stale = []
    if complete and out_dir.is_dir():
        stale += sorted(p.name for p in out_dir.glob("*.Dockerfile") if p.name not in rendered)
    for name, text in sorted(rendered.items()):
        path = out_dir / name
        try:
            current = path.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != text:
            stale.append(name)
    return stale


@dataclass(frozen=True, kw_only=True)
class RenderRequest:
    """What ``rocmkit docker render`` was asked to do, checked when it is made."""

    rocm: str | None = None
    torch: str | None = None
    gfx: str | None = None  # comma-separated
    out: Path | None = None
    check: bool = False
    syntax: bool = False

    def __post_init__(self) -> None:
        if not self.one_image and self.out is None:
            raise UsageError("nothing to render", "pass --rocm X.Y (one file on stdout) or --out DIR (every image)")
        if self.out is None and self.check:
            raise UsageError("--check needs --out DIR", "name the folder that holds the Dockerfiles")

    @property
    def one_image(self) -> bool:
        return bool(self.rocm or self.torch or self.gfx)

    def rendered(self) -> dict[str, str]:
        """File name -> Dockerfile text: the one image asked for, or every image in the matrix."""
        images = load_images()
        if not self.one_image:
            return render_all(images, syntax=self.syntax)
        gfx = self.gfx.split(",") if self.gfx is not None else None
        spec = choose_spec(images, rocm=self.rocm, torch=self.torch, gfx=gfx)
        return {spec.filename: render_dockerfile(spec, images, syntax=self.syntax)}
