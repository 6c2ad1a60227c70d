"""``matrices/platforms.toml``: which torch builds exist for aarch64, and what AMD supports for
ROCm on WSL2 (docs/platforms.md). Loaded and checked like every data file (``datafiles.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rocmkit.arch import parse_gfx
from rocmkit.errors import DataError
from rocmkit.matrix.fields import FIX, Row, check_keys, read_sources, read_toml, table
from rocmkit.plan import Backend
from rocmkit.util.paths import matrices_dir

FILE = "platforms.toml"


@dataclass(frozen=True, kw_only=True)
class Aarch64Cuda:
    torch: str  # "2.13": the release line
    cuda: tuple[str, ...]  # index suffixes with aarch64 wheels: ("cu126", "cu130", "cu132")
    sources: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Aarch64Jax:
    plugin: str  # the jax plugin family: "cuda12", "cuda13"
    first: str  # the first release with aarch64 wheels
    missing: tuple[str, ...]  # later releases without them
    sources: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class WslRelease:
    rocm: str  # "7.2": the ROCm line AMD supports on WSL2
    librocdxg: str
    adrenalin_min: str
    dxg_detection: bool  # ROCr needs HSA_ENABLE_DXG_DETECTION=1
    unconfirmed: tuple[str, ...]
    sources: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class WslGpu:
    gfx: str
    names: tuple[str, ...]
    unconfirmed: tuple[str, ...]
    sources: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class PlatformData:
    cpu_aarch64_from: str  # the first torch release with CPU aarch64 wheels on the cpu index
    pypi_cuda_from: str  # PyPI's aarch64 torch is a CUDA build from this release
    pypi_cuda: str
    aarch64_cuda: tuple[Aarch64Cuda, ...]
    aarch64_jax: tuple[Aarch64Jax, ...]
    wsl_releases: tuple[WslRelease, ...]
    wsl_gpus: tuple[WslGpu, ...]
    sources: dict[str, str]

    def cuda_aarch64(self, torch_version: str) -> tuple[str, ...] | None:
        """The CUDA indexes with aarch64 wheels of ``torch_version`` ("2.13.0"); None: not recorded."""
        line = ".".join(torch_version.split("+", maxsplit=1)[0].split(".")[:2])
        row = next((r for r in self.aarch64_cuda if r.torch == line), None)
        return row.cuda if row else None

    def jax_aarch64(self, family: str, version: str) -> bool:
        """Whether the jax ``family`` plugin (and its PJRT) of ``version`` has aarch64 wheels."""
        row = next((r for r in self.aarch64_jax if r.plugin == family), None)
        if row is None:
            return False
        base = version.split(".post", maxsplit=1)[0]
        return _key(base) >= _key(row.first) and base not in row.missing

    def wsl_gpu(self, gfx: str | None) -> WslGpu | None:
        return next((g for g in self.wsl_gpus if gfx and g.gfx == gfx), None)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def parse_platforms(path: Path) -> PlatformData:
    doc = read_toml(path)
    file = path.name
    check_keys(
        doc,
        ("schema", "sources", "aarch64", "aarch64_cuda", "aarch64_jax", "wsl_release", "wsl_gpu"),
        file=file,
        where="top level",
    )
    src = read_sources(doc, file=file)
    top = Row(
        doc.get("aarch64") or {},
        file=file,
        where="[aarch64]",
        keys=("cpu_from", "pypi_cuda_from", "pypi_cuda"),
        sources=src,
    )
    top.source_keys()
    cuda_rows: list[Aarch64Cuda] = []
    for row in table(
        doc,
        "aarch64_cuda",
        file=file,
        label="[[aarch64_cuda]]",
        keys=("torch", "cuda"),
        sources=src,
        name_key="torch",
    ):
        cudas = row.strings("cuda", required=True)
        bad = [c for c in cudas if (b := Backend.read(c)) is None or b.cuda is None or not b.pytorch_index]
        if bad:
            raise row.error(f"cuda {bad[0]!r} is not an index suffix like cu130")
        cuda_rows.append(
            Aarch64Cuda(torch=row.release("torch"), cuda=row.strings("cuda"), sources=row.source_keys())
        )
    if len({r.torch for r in cuda_rows}) != len(cuda_rows):
        raise DataError(f"{file}: a torch release has two [[aarch64_cuda]] rows", FIX)
    jax_rows: list[Aarch64Jax] = []
    for row in table(
        doc,
        "aarch64_jax",
        file=file,
        label="[[aarch64_jax]]",
        keys=("plugin", "first", "missing"),
        sources=src,
        name_key="plugin",
    ):
        jax_rows.append(
            Aarch64Jax(
                plugin=row.string("plugin"),
                first=row.release("first"),
                missing=row.strings("missing"),
                sources=row.source_keys(),
            )
        )
    releases: list[WslRelease] = []
    for row in table(
        doc,
        "wsl_release",
        file=file,
        label="[[wsl_release]]",
        keys=("rocm", "librocdxg", "adrenalin_min", "dxg_detection"),
        sources=src,
        name_key="rocm",
    ):
        adrenalin = row.string("adrenalin_min")
        try:
            _key(adrenalin)
        except ValueError:
            raise row.error(f"adrenalin_min {adrenalin!r} is not a version like 26.2.2") from None
        dxg = row.opt_bool("dxg_detection")
        if dxg is None:
            raise row.error("dxg_detection (true or false) is required")
        releases.append(
            WslRelease(
                rocm=row.release("rocm"),
                librocdxg=row.string("librocdxg"),
                adrenalin_min=adrenalin,
                dxg_detection=dxg,
                unconfirmed=row.unconfirmed(),
                sources=row.source_keys(),
            )
        )
    gpus: list[WslGpu] = []
    for row in table(
        doc, "wsl_gpu", file=file, label="[[wsl_gpu]]", keys=("gfx", "names"), sources=src, name_key="gfx"
    ):
        gfx = row.string("gfx")
        if parse_gfx(gfx) != gfx:
            raise row.error(f"gfx {gfx!r} is not a gfx target like gfx1100")
        gpus.append(
            WslGpu(
                gfx=gfx,
                names=row.strings("names", required=True),
                unconfirmed=row.unconfirmed(),
                sources=row.source_keys(),
            )
        )
    if not cuda_rows or not releases or not gpus:
        raise DataError(f"{file}: [[aarch64_cuda]], [[wsl_release]] and [[wsl_gpu]] each need a row", FIX)
    return PlatformData(
        cpu_aarch64_from=top.release("cpu_from"),
        pypi_cuda_from=top.release("pypi_cuda_from"),
        pypi_cuda=top.string("pypi_cuda"),
        aarch64_cuda=tuple(cuda_rows),
        aarch64_jax=tuple(jax_rows),
        wsl_releases=tuple(sorted(releases, key=lambda r: _key(r.rocm), reverse=True)),
        wsl_gpus=tuple(gpus),
        sources=src,
    )


def load_platforms(folder: Path | None = None) -> PlatformData:
    return _cached(str(((folder or matrices_dir()) / FILE).resolve()))


@lru_cache(maxsize=4)
def _cached(path: str) -> PlatformData:
    return parse_platforms(Path(path))
