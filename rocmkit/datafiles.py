"""Every data file in ``matrices/``, with the loader that validates it: the one registry.

All of them are written in one dialect (:mod:`rocmkit.matrix.fields`) and read by
one reader (:func:`rocmkit.matrix.fields.read_toml`). ``rocmkit matrix check``
runs every loader listed here, and a test fails when ``matrices/`` holds a file
this registry does not know, so a new data file cannot go unvalidated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rocmkit.errors import UsageError


@dataclass(frozen=True, kw_only=True)
class DataFile:
    names: tuple[str, ...]  # the files in matrices/ this loader reads (relative: "bench/timm.toml")
    used_by: str  # the commands that read them
    load: Callable[[Path], object]  # folder -> the validated data; DataError when invalid


def data_files() -> tuple[DataFile, ...]:
    # Imported here, not at the top: the registry sits above every feature that owns a file.
    from rocmkit.bench.catalog import load_hf, load_timm
    from rocmkit.bench.compare import load_references
    from rocmkit.companions.data import parse_companions
    from rocmkit.containers.images import parse_images
    from rocmkit.doctor.apu import parse_apu
    from rocmkit.doctor.sku import parse_skus
    from rocmkit.matrix.amd_targets import FILE as AMD_TARGETS
    from rocmkit.matrix.amd_targets import parse_amd_targets
    from rocmkit.matrix.jaxdata import parse_jax
    from rocmkit.matrix.load import FILES, parse_matrix
    from rocmkit.matrix.platforms import FILE as PLATFORMS
    from rocmkit.matrix.platforms import parse_platforms
    from rocmkit.source_build.refs import read_build_matrix

    return (
        DataFile(names=FILES, used_by="detect, resolve, install, doctor, matrix", load=parse_matrix),
        DataFile(names=("build.toml",), used_by="build", load=lambda d: read_build_matrix(d / "build.toml")),
        DataFile(names=("images.toml",), used_by="docker", load=lambda d: parse_images(d / "images.toml")),
        DataFile(names=("sku.toml",), used_by="doctor (level 2/3 floors), matrix show --sku",
                 load=lambda d: parse_skus(d / "sku.toml")),
        DataFile(names=("apu.toml",), used_by="doctor (env.apu_memory)", load=lambda d: parse_apu(d / "apu.toml")),
        DataFile(names=("jax.toml",), used_by="resolve, install, doctor (--framework jax, torch-xla)", load=parse_jax),
        DataFile(names=("companions.toml",), used_by="resolve --with, install --with, doctor", load=parse_companions),
        DataFile(names=(AMD_TARGETS,), used_by="detect, resolve", load=parse_amd_targets),
        DataFile(names=(PLATFORMS,), used_by="resolve, doctor (aarch64, WSL2)", load=lambda d: parse_platforms(d / PLATFORMS)),
        DataFile(
            names=("bench/huggingface.toml", "bench/timm.toml", "bench/references.toml"),
            used_by="bench models --suite huggingface/timm, bench compare",
            load=lambda d: (
                load_hf(d / "bench" / "huggingface.toml"),
                load_timm(d / "bench" / "timm.toml"),
                load_references(d / "bench" / "references.toml"),
            ),
        ),
    )


def registered_names() -> tuple[str, ...]:
    return tuple(name for entry in data_files() for name in entry.names)


if TYPE_CHECKING:
    from rocmkit.matrix.model import Matrix


class Output(Protocol):
    """Where ``matrix check`` writes (the CLI's ``OUT``): the data layer names no command."""

    def data(self, text: str, *, nl: bool = True) -> None: ...

    def lines(self, lines: list[str] | tuple[str, ...]) -> None: ...


@dataclass(frozen=True, kw_only=True)
class CheckRequest:
    directory: Path | None = None
    unconfirmed: bool = False
    with_sources: bool = False  # re-read each fact's source
    recording: Path | None = None  # recorded sources (the layout of tests/data/upstream)
    offline: bool = False  # with_sources: recorded sources only
    ti_clone: Path | None = None  # a clone of pytorch/test-infra
    rock_clone: Path | None = None  # a clone of ROCm/TheRock
    pt_clone: Path | None = None  # a clone of pytorch/pytorch

    def __post_init__(self) -> None:
        if not self.with_sources and (
            self.recording or self.offline or self.ti_clone or self.rock_clone or self.pt_clone
        ):
            raise UsageError("--from, --offline, --test-infra, --therock and --pytorch go with --sources", "add --sources")


def check_data(req: CheckRequest, out: Output) -> None:
    """Load and validate every registered data file; with ``with_sources``, audit the facts."""
    from rocmkit.matrix.model import Matrix
    from rocmkit.matrix.show import summary_lines, unconfirmed_lines
    from rocmkit.util.paths import matrices_dir

    folder = req.directory or matrices_dir()
    matrix: Matrix | None = None
    for entry in data_files():
        loaded = entry.load(folder)
        if isinstance(loaded, Matrix):
            matrix = loaded
            out.lines([f"ok  {line}" for line in summary_lines(loaded)])
        else:
            out.data(f"ok  {', '.join(entry.names)}")
    if req.unconfirmed and matrix is not None:
        lines = unconfirmed_lines(matrix)
        out.data(f"{len(lines)} entries with unconfirmed facts:")
        out.lines([f"  {line}" for line in lines])
    if req.with_sources and matrix is not None:
        _check_sources(matrix, folder, req, out)


def _check_sources(m: Matrix, folder: Path, req: CheckRequest, out: Output) -> None:
    from rocmkit.errors import DataError
    from rocmkit.matrix.jaxdata import parse_jax
    from rocmkit.matrix.sourcecheck import check_sources
    from rocmkit.matrix.sourceread import Sources
    from rocmkit.util.paths import shipped_matrices_dir

    named = (("test-infra", req.ti_clone), ("TheRock", req.rock_clone), ("pytorch", req.pt_clone))
    clones = {k: v for k, v in named if v is not None}
    recording = req.recording
    if recording is None:
        checkout = shipped_matrices_dir().parent / "tests" / "data" / "upstream"
        recording = checkout if checkout.is_dir() else None
    jax = parse_jax(folder) if (folder / "jax.toml").is_file() else None
    more = []
    if (folder / "companions.toml").is_file():
        from rocmkit.companions.data import parse_companions
        from rocmkit.companions.sourcecheck import check_companion_archs

        companions = parse_companions(folder)
        more.append(partial(check_companion_archs, companions))
    report = check_sources(m, Sources(recording, offline=req.offline, clones=clones), jax, more)
    out.lines(report.lines())
    if report.not_stated:
        raise DataError(
            f"{len(report.not_stated)} facts are not stated by the sources they cite",
            "correct them (or their sources) and run `rocmkit matrix refresh --write`",
        )
