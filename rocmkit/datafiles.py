"""Every data file in ``matrices/``, with the loader that validates it: the one registry.

All of them are written in one dialect (:mod:`rocmkit.matrix.fields`) and read by
one reader (:func:`rocmkit.matrix.fields.read_toml`). ``rocmkit matrix check``
runs every loader listed here, and a test fails when ``matrices/`` holds a file
this registry does not know, so a new data file cannot go unvalidated.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, kw_only=True)
class DataFile:
    names: tuple[str, ...]  # the files in matrices/ this loader reads
    used_by: str  # the commands that read them
    load: Callable[[Path], object]  # folder -> the validated data; DataError when invalid


def data_files() -> tuple[DataFile, ...]:
    # Imported here, not at the top: the registry sits above every feature that owns a file.
    from rocmkit.containers.images import parse_images
    from rocmkit.matrix.load import FILES, parse_matrix
    from rocmkit.source_build.refs import read_build_matrix

    return (
        DataFile(names=FILES, used_by="detect, resolve, install, doctor, matrix", load=parse_matrix),
        DataFile(names=("build.toml",), used_by="build", load=lambda d: read_build_matrix(d / "build.toml")),
        DataFile(names=("images.toml",), used_by="docker", load=lambda d: parse_images(d / "images.toml")),
    )


def registered_names() -> tuple[str, ...]:
    return tuple(name for entry in data_files() for name in entry.names)
