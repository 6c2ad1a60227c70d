"""``rocmkit matrix refresh``: compare torch.toml with a live PEP 503/691 package index.

For each index the matrix knows (rocm6.2, cu124, cpu ...), read the simple page
of torch (PEP 691 JSON when offered, else PEP 503 HTML), list the versions and
CPython tags of its wheels, and read one wheel's metadata per release (PEP 658
``.metadata`` file, else its ``METADATA`` by HTTP range requests) for the Triton
pin in ``Requires-Dist``. Report what the matrix lacks, lists wrongly, or marks
unconfirmed although the index now confirms it. This report writes nothing;
``--write`` generates the data instead (rocmkit/matrix/generate.py). The index
client is rocmkit/packages.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from rocmkit.matrix.model import Matrix, TorchRelease, release_key
from rocmkit.packages import triton_pin
from rocmkit.pkgindex.pages import IndexFile, files_from_html, project_page, read_metadata
from rocmkit.plan import Backend
from rocmkit.util.redact import url_under

__all__ = [
    "IndexFile",
    "RefreshReport",
    "compare",
    "files_from_html",
    "project_files",
    "triton_pin",
    "wheel_requires",
]


@dataclass(frozen=True, kw_only=True)
class Finding:
    kind: str  # new-release | new-variant | missing | triton | python | companion | confirms | unreadable
    index: str
    message: str
    release: str | None = None


@dataclass(frozen=True, kw_only=True)
class RefreshReport:
    base: str
    indexes: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": "rocmkit.matrix-refresh/1",
            "base": self.base,
            "indexes": list(self.indexes),
            "findings": [asdict(f) for f in self.findings],
        }


def project_files(index_url: str, project: str, *, timeout: float) -> list[IndexFile] | None:
    """The files on ``<index_url>/<project>/``; None when the index has no such project (404)."""
    page = project_page(index_url, project, timeout=timeout)
    return list(page.files) if page is not None else None


def wheel_requires(file: IndexFile, *, timeout: float) -> list[str] | None:
    """Requires-Dist of a wheel: its PEP 658 file, else its METADATA by range requests; None if neither."""
    meta = read_metadata(file, timeout=timeout)
    return list(meta.requires_dist) if meta is not None else None


@dataclass
class _Wheels:
    """torch wheels of one version on one index."""

    pythons: set[str] = field(default_factory=set)  # "3.11"
    files: list[IndexFile] = field(default_factory=list)


def torch_wheels(files: list[IndexFile], index: str) -> dict[str, _Wheels]:
    """Release version ("2.5.1") -> wheels, for wheels whose local version is this index."""
    out: dict[str, _Wheels] = {}
    for f in files:
        if not f.filename.endswith(".whl"):
            continue
        try:
            name, version, _, tags = parse_wheel_filename(f.filename)
        except InvalidWheelFilename:
            continue
        # packaging normalises "+rocm6.2" to the local segment "rocm6.2".
        if name != "torch" or version.local != index:
            continue
        entry = out.setdefault(version.public, _Wheels())
        entry.files.append(f)
        for tag in tags:
            m = re.fullmatch(r"cp(\d)(\d+)", tag.interpreter)
            if m and tag.abi.startswith("cp") and not tag.abi.endswith("t"):
                entry.pythons.add(f"{m.group(1)}.{m.group(2)}")
    return out


def _pick_linux(files: list[IndexFile]) -> IndexFile:
    linux = [f for f in files if "x86_64" in f.filename and "linux" in f.filename]
    return (linux or files)[0]


def compare(
    matrix: Matrix,
    base: str,
    *,
    only: Iterable[str] | None = None,
    timeout: float = 20.0,
    progress: Callable[[str], None] | None = None,
) -> RefreshReport:
    """Read the index under ``base`` and list where torch.toml differs from it."""
    known = sorted({v.index for r in matrix.torch_releases for v in r.variants})
    indexes = list(only) if only else known
    findings: list[Finding] = []
    read: list[str] = []
    for index in indexes:
        index_url = url_under(base, index)
        if progress:
            progress(f"reading {index_url}/torch/")
        files = project_files(index_url, "torch", timeout=timeout)
        if files is None:
            listed = [r.version for r in matrix.torch_releases if r.variant(index)]
            if listed:
                findings.append(
                    Finding(kind="missing", index=index, message=f"{index_url}/torch/ does not exist (404)")
                )
            continue
        read.append(index)
        wheels = torch_wheels(files, index)
        vision = _versions(
            project_files(index_url, "torchvision", timeout=timeout) or [], "torchvision", index
        )
        audio = _versions(project_files(index_url, "torchaudio", timeout=timeout) or [], "torchaudio", index)
        findings += _compare_index(matrix, index, wheels, vision, audio, timeout=timeout)
    return RefreshReport(base=base, indexes=tuple(read), findings=tuple(findings))


def _versions(files: list[IndexFile], project: str, index: str) -> set[str]:
    out: set[str] = set()
    for f in files:
        try:
            name, version, _, _ = parse_wheel_filename(f.filename)
        except InvalidWheelFilename:
            continue
        if name == project and version.local == index:
            out.add(version.public)
    return out


def _compare_index(
    matrix: Matrix,
    index: str,
    wheels: dict[str, _Wheels],
    vision: set[str],
    audio: set[str],
    *,
    timeout: float,
) -> list[Finding]:
    out: list[Finding] = []
    oldest = Version(matrix.torch_releases[0].version) if matrix.torch_releases else Version("0")
    for version in sorted(wheels, key=Version):
        found = wheels[version]
        release = matrix.torch_release(version)
        # Pre-releases, and releases older than the matrix covers (1.x on the cpu index), are out of scope.
        if Version(version).is_prerelease or Version(version) < oldest:
            continue
        if release is None:
            out.append(
                Finding(
                    kind="new-release",
                    index=index,
                    release=version,
                    message=f"torch {version}+{index} is on the index (Python {_span(found.pythons)}) "
                    "but not in torch.toml",
                )
            )
            continue
        variant = release.variant(index)
        if variant is None:
            out.append(
                Finding(
                    kind="new-variant",
                    index=index,
                    release=version,
                    message=f"torch {version} has wheels on {index}, which its torch.toml entry does not list",
                )
            )
            continue
        if not variant.is_confirmed():
            out.append(
                Finding(
                    kind="confirms",
                    index=index,
                    release=version,
                    message=f"torch {version}+{index} exists; its variant can drop `unconfirmed`",
                )
            )
        out += _compare_pythons(release, index, found.pythons)
        out += _compare_companions(release, index, vision, audio)
        if variant.kind != "cpu":
            out += _compare_triton(
                release, index, variant.triton, variant.is_confirmed("triton"), found, timeout
            )
    for release in matrix.torch_releases:
        if release.variant(index) is not None and release.version not in wheels:
            out.append(
                Finding(
                    kind="missing",
                    index=index,
                    release=release.version,
                    message=f"torch.toml lists torch {release.version}+{index}, which the index does not have",
                )
            )
    return out


def _span(pythons: set[str]) -> str:
    if not pythons:
        return "none"
    ordered = sorted(pythons, key=release_key)
    return f"{ordered[0]}-{ordered[-1]}"


def _compare_pythons(release: TorchRelease, index: str, pythons: set[str]) -> list[Finding]:
    if not pythons:
        return []
    ordered = sorted(pythons, key=release_key)
    lo, hi = ordered[0], ordered[-1]
    if (lo, hi) == (release.python_min, release.python_max):
        return []
    return [
        Finding(
            kind="python",
            index=index,
            release=release.version,
            message=f"torch {release.version}+{index} has wheels for Python {lo}-{hi}; "
            f"torch.toml says {release.python_min}-{release.python_max}",
        )
    ]


def _compare_companions(
    release: TorchRelease, index: str, vision: set[str], audio: set[str]
) -> list[Finding]:
    out: list[Finding] = []
    for name, want, have in (
        ("torchvision", release.torchvision, vision),
        ("torchaudio", release.torchaudio, audio),
    ):
        if want is None or not have:
            continue
        if want not in have:
            out.append(
                Finding(
                    kind="companion",
                    index=index,
                    release=release.version,
                    message=f"torch.toml pairs torch {release.version} with {name} {want}, "
                    f"which {index} does not have",
                )
            )
        elif not release.is_confirmed(name):
            out.append(
                Finding(
                    kind="confirms",
                    index=index,
                    release=release.version,
                    message=f"{name} {want}+{index} exists; torch {release.version} can drop it from `unconfirmed`",
                )
            )
    return out


def _compare_triton(
    release: TorchRelease,
    index: str,
    listed: str | None,
    confirmed: bool,
    found: _Wheels,
    timeout: float,
) -> list[Finding]:
    requires = wheel_requires(_pick_linux(found.files), timeout=timeout)
    if requires is None:
        return [
            Finding(
                kind="unreadable",
                index=index,
                release=release.version,
                message=f"torch {release.version}+{index}: no PEP 658 metadata and the wheel is too large to read",
            )
        ]
    pin = triton_pin(requires)
    if listed and "~=" in listed:
        # A compatible-release range (PyPI's CUDA builds from 2.14 on): compared as written.
        from rocmkit.matrix.generate import triton_of_requires

        pin = triton_of_requires(requires)
    if pin == listed:
        if pin and not confirmed:
            return [
                Finding(
                    kind="confirms",
                    index=index,
                    release=release.version,
                    message=f"torch {release.version}+{index} requires {pin}; the pin can drop `unconfirmed`",
                )
            ]
        return []
    if listed is None and pin and Backend.parse(index).rocm is None:
        return []  # CUDA Triton pins are left to torch's Requires-Dist
    return [
        Finding(
            kind="triton",
            index=index,
            release=release.version,
            message=f"torch {release.version}+{index} requires {pin or 'no Triton'}; "
            f"torch.toml says {listed or 'none'}",
        )
    ]
