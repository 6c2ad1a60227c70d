"""Gather the generator's :class:`~rocmkit.matrix.generate.Inputs`: live, or from a recording.

Live: the project pages and metadata come from a package index (PyPI by
default) through :mod:`rocmkit.packages`; test-infra and TheRock come from
local clones (``--test-infra DIR``, ``--therock DIR``; the weekly workflow
clones them). A recording (``--from DIR``, the layout of ``tests/data/upstream``)
holds the same upstream files at their commits; its index pages are served by
the caller (tests serve them on 127.0.0.1) or read from ``DIR/pypi`` directly.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rocmkit.errors import DataError, NetworkError
from rocmkit.matrix.generate import Inputs
from rocmkit.matrix.upstream import pytorch, testinfra, therock
from rocmkit.matrix.upstream.history import git_head, git_history, recorded_history
from rocmkit.matrix.upstream.testinfra import Snapshot
from rocmkit.pkgindex.pages import (
    IndexFile,
    Metadata,
    ProjectPage,
    parse_metadata,
    project_page,
    read_metadata,
)

PROJECTS = ("torch", "torchvision", "torchaudio")


def _cached_metadata(
    reader: Callable[[IndexFile], Metadata | None],
) -> Callable[[IndexFile], Metadata | None]:
    cache: dict[str, Metadata | None] = {}

    def read(file: IndexFile) -> Metadata | None:
        if file.filename not in cache:
            cache[file.filename] = reader(file)
        return cache[file.filename]

    return read


def index_inputs(
    index_url: str, *, timeout: float, read_on: str | None = None
) -> tuple[dict[str, ProjectPage], Callable[[IndexFile], Metadata | None]]:
    """The three project pages of ``index_url`` (read concurrently) and a metadata reader."""
    url = index_url.rstrip("/")
    with ThreadPoolExecutor(max_workers=len(PROJECTS)) as pool:
        pages = dict(
            zip(PROJECTS, pool.map(lambda p: project_page(url, p, timeout=timeout), PROJECTS), strict=True)
        )
    missing = [p for p, page in pages.items() if page is None]
    if "torch" in missing:
        raise NetworkError(
            f"{url}/torch/ does not exist (404)", "pass the simple index that serves torch (--index)"
        )
    found = {p: page for p, page in pages.items() if page is not None}
    return found, _cached_metadata(lambda f: read_metadata(f, timeout=timeout))


def _one(folder: Path, path: str) -> Snapshot | None:
    snaps = recorded_history(folder, path) if folder.is_dir() else []
    return snaps[-1] if snaps else None


def recorded_upstream(folder: Path) -> dict[str, object]:
    """The test-infra and TheRock parts of a recording."""
    ti = folder / "test-infra"
    rock = folder / "therock"
    pt = folder / "pytorch"
    return {
        "build_scripts": tuple(recorded_history(pt, pytorch.BUILD_SH_PATH)) if pt.is_dir() else (),
        "build_history": tuple(recorded_history(ti, testinfra.BUILD_MATRIX_PATH)),
        "release_versions": _one(ti, testinfra.RELEASE_VERSIONS_PATH),
        "therock_releases": _one(rock, therock.RELEASES_PATH),
        "therock_matrix": _one(rock, therock.RELEASE_MATRIX_PATH),
        "therock_whl_next": _one(rock, therock.WHL_NEXT_PATH),
    }


def clone_upstream(
    test_infra: Path | None, the_rock: Path | None, pytorch_clone: Path | None = None
) -> dict[str, object]:
    out: dict[str, object] = {}
    if pytorch_clone is not None:
        out["build_scripts"] = (git_head(pytorch_clone, pytorch.BUILD_SH_PATH),)
    if test_infra is not None:
        out["build_history"] = tuple(git_history(test_infra, testinfra.BUILD_MATRIX_PATH))
        out["release_versions"] = git_head(test_infra, testinfra.RELEASE_VERSIONS_PATH)
    if the_rock is not None:
        out["therock_releases"] = git_head(the_rock, therock.RELEASES_PATH)
        out["therock_matrix"] = git_head(the_rock, therock.RELEASE_MATRIX_PATH)
        out["therock_whl_next"] = git_head(the_rock, therock.WHL_NEXT_PATH)
    return out


def recording_meta(folder: Path) -> dict[str, str]:
    """``manifest.json``: the index URL the pages were read from and the date."""
    try:
        data = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{folder}/manifest.json cannot be read: {exc}", "record the sources again") from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("index_url"), str)
        or not isinstance(data.get("read_on"), str)
    ):
        raise DataError(f"{folder}/manifest.json must name index_url and read_on", "record the sources again")
    return {"index_url": data["index_url"], "read_on": data["read_on"]}


def recorded_index(folder: Path) -> tuple[dict[str, ProjectPage], Callable[[IndexFile], Metadata | None]]:
    """The recorded PEP 691 pages and METADATA files, read from disk (no server)."""
    from rocmkit.pkgindex.pages import parse_project_page

    pypi = folder / "pypi"
    base = recording_meta(folder)["index_url"].rstrip("/")
    pages = {}
    for name in PROJECTS:
        file = pypi / f"{name}.json"
        if file.is_file():
            url = f"{base}/{name}/"
            pages[name] = ProjectPage(
                url=url,
                files=tuple(
                    parse_project_page(url, file.read_bytes(), "application/vnd.pypi.simple.v1+json")
                ),
            )

    def meta(f: IndexFile) -> Metadata | None:
        path = pypi / "metadata" / f"{f.filename}.metadata"
        return parse_metadata(path.read_text(encoding="utf-8"), "recorded") if path.is_file() else None

    return pages, meta


def jax_projects(directory: Path) -> tuple[str, ...]:
    """The index projects jax.toml's generator reads; none when the folder has no jax.toml."""
    from rocmkit.matrix.fields import read_toml
    from rocmkit.matrix.jaxgen import projects

    return projects(read_toml(directory / "jax.toml")) if (directory / "jax.toml").exists() else ()


def jax_index_pages(index_url: str, names: tuple[str, ...], *, timeout: float) -> dict[str, ProjectPage]:
    """The jax projects' pages on ``index_url``, read concurrently; a project the index lacks is left out."""
    url = index_url.rstrip("/")
    if not names:
        return {}
    with ThreadPoolExecutor(max_workers=min(8, len(names))) as pool:
        pages = list(pool.map(lambda p: project_page(url, p, timeout=timeout), names))
    return {name: page for name, page in zip(names, pages, strict=True) if page is not None}


def recorded_jax_pages(folder: Path, names: tuple[str, ...]) -> tuple[dict[str, ProjectPage], str | None]:
    """The recorded jax pages (``pypi/<project>.json``) and the day they were read (``jax_read_on``)."""
    from rocmkit.pkgindex.pages import parse_project_page

    base = recording_meta(folder)["index_url"].rstrip("/")
    pages = {}
    for name in names:
        file = folder / "pypi" / f"{name}.json"
        if file.is_file():
            url = f"{base}/{name}/"
            pages[name] = ProjectPage(
                url=url,
                files=tuple(parse_project_page(url, file.read_bytes(), "application/vnd.pypi.simple.v1+json")),
            )
    try:
        day = json.loads((folder / "manifest.json").read_text(encoding="utf-8")).get("jax_read_on")
    except (OSError, ValueError):
        day = None
    return pages, day if isinstance(day, str) else None


def build_inputs(
    *,
    index_url: str,
    pages: dict[str, ProjectPage],
    metadata: Callable[[IndexFile], Metadata | None],
    upstream: dict[str, object],
    read_on: str | None = None,
    jax_pages: dict[str, ProjectPage] | None = None,
    jax_read_on: str | None = None,
) -> Inputs:
    return Inputs(
        read_on=read_on or dt.date.today().isoformat(),
        index_url=index_url.rstrip("/"),
        pages=pages,
        metadata=metadata,
        jax_pages=jax_pages or {},
        jax_read_on=jax_read_on,
        **upstream,  # type: ignore[arg-type]
    )
