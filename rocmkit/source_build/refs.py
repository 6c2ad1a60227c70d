"""The source references in ``matrices/build.toml``: which repository, tag and pin make a release.

Written in the dialect of every file in matrices/ (``schema = 1``, a ``[sources]`` table, rows
that name their sources by key, ``confirmed``) and read with the same strict readers
(:mod:`rocmkit.matrix.fields`): an unknown key is an error with a "did you mean", a missing key
or a wrong type names the file and the entry. Loaded once (cached). Code never holds these facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from rocmkit.errors import DataError, NoPlanError
from rocmkit.matrix.fields import FIX, SCHEMA, Row, check_keys, did_you_mean, read_sources, read_toml

FILE_NAME = "build.toml"

_HEX = re.compile(r"^[0-9a-f]{7,40}$")
_RELEASE_KEY = re.compile(r"^\d+\.\d+$")


@dataclass(frozen=True, kw_only=True)
class TorchRef:
    repo: str
    tag: str
    requirements: str  # build requirements file inside the checkout
    source: str
    confirmed: bool

    @property
    def version(self) -> str:
        """ "2.7.1" from the tag "v2.7.1"."""
        return self.tag.removeprefix("v")


@dataclass(frozen=True, kw_only=True)
class TritonRef:
    repo: str
    pin_file: str  # path inside the torch checkout holding the pinned commit
    setup_dir: str  # where Triton's setup.py lives: "python" (<= 3.3) or "." (newer)
    version: str | None
    source: str
    confirmed: bool
    commit: str | None = None  # cross-check only; the pin file in the checkout is authoritative


@dataclass(frozen=True, kw_only=True)
class VisionRef:
    repo: str
    tag: str
    source: str
    confirmed: bool


@dataclass(frozen=True, kw_only=True)
class Release:
    key: str  # "2.7"
    torch: TorchRef
    triton: TritonRef
    torchvision: VisionRef

    def unconfirmed(self) -> tuple[str, ...]:
        """Names of the sections whose facts are not confirmed, for plan notes."""
        parts = (("torch", self.torch), ("triton", self.triton), ("torchvision", self.torchvision))
        return tuple(name for name, ref in parts if not ref.confirmed)


@dataclass(frozen=True, kw_only=True)
class BuildMatrix:
    path: Path
    releases: dict[str, Release]

    def release_keys(self) -> list[str]:
        """Release keys, newest first."""
        return sorted(self.releases, key=_version_key, reverse=True)

    def release(self, torch: str | None) -> Release:
        """The release for ``torch`` ("2.7" or "2.7.1"); the newest when None."""
        if torch is None:
            return self.releases[self.release_keys()[0]]
        parts = torch.strip().removeprefix("v").split("+")[0].split(".")
        key = ".".join(parts[:2])
        rel = self.releases.get(key)
        if rel is None:
            raise NoPlanError(
                f"no build recipe for torch {torch} in {self.path}",
                f"pick one of: {', '.join(self.release_keys())}",
            )
        if len(parts) > 2 and rel.torch.version != ".".join(parts[:3]):
            raise NoPlanError(
                f"build.toml builds torch {key} from tag {rel.torch.tag}, not {torch}",
                f"pass --torch {key} (builds {rel.torch.version})",
            )
        return rel


def _version_key(key: str) -> tuple[int, ...]:
    return tuple(int(p) for p in key.split("."))


# The keys of each section: required first, then optional.
_SECTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "torch": (("repo", "tag", "requirements"), ()),
    "triton": (("repo", "pin_file", "setup_dir"), ("version", "commit")),
    "torchvision": (("repo", "tag"), ()),
}
_TAG = re.compile(r"^v\d+\.\d+\.\d+$")


def _section(rel_key: str, name: str, raw: Any, sources: dict[str, str], file: str) -> Any:
    required, optional = _SECTIONS[name]
    row = Row(raw, file=file, where=f'release."{rel_key}".{name}', keys=(*required, *optional), sources=sources)
    values: dict[str, Any] = {key: row.string(key) for key in required}
    values.update({key: row.opt_string(key) for key in optional})
    if "tag" in values and not _TAG.match(values["tag"]):
        raise row.error(f"tag {values['tag']!r} is not vX.Y.Z")
    if values.get("commit") is not None and not _HEX.match(values["commit"]):
        raise row.error(f"commit {values['commit']!r} is not a 7-40 digit lower-case hex hash")
    keys = row.source_keys()
    values["source"] = "; ".join(sources[k] for k in keys)
    values["confirmed"] = not row.unconfirmed()
    cls = {"torch": TorchRef, "triton": TritonRef, "torchvision": VisionRef}[name]
    return cls(**values)


def parse_build_matrix(data: Any, path: Path) -> BuildMatrix:
    """Validate parsed TOML and build the typed matrix; any problem is a DataError naming the entry."""
    file = path.name
    if not isinstance(data, dict):
        raise DataError(f"{file}: not a table", FIX)
    check_keys(data, ("schema", "sources", "release"), file=file, where="top level")
    if data.get("schema") != SCHEMA:
        raise DataError(f"{file}: schema = {data.get('schema')!r}, this rocmkit reads schema = {SCHEMA}", FIX)
    sources = read_sources(data, file=file)
    raw_releases = data.get("release")
    if not isinstance(raw_releases, dict) or not raw_releases:
        raise DataError(f'{file}: no [release."X.Y"] tables', FIX)
    releases: dict[str, Release] = {}
    for rel_key, raw in raw_releases.items():
        where = f'release."{rel_key}"'
        if not _RELEASE_KEY.match(rel_key):
            raise DataError(f'{file}: {where}: key must be "X.Y"', FIX)
        if not isinstance(raw, dict):
            raise DataError(f"{file}: {where} must be a table", FIX)
        check_keys(raw, tuple(_SECTIONS), file=file, where=where)
        for name in _SECTIONS:
            if name not in raw:
                raise DataError(f"{file}: {where}: missing [{name}] section{did_you_mean(name, raw)}", FIX)
        torch = _section(rel_key, "torch", raw["torch"], sources, file)
        if not torch.version.startswith(rel_key + "."):
            raise DataError(f"{file}: {where}.torch: tag {torch.tag} does not belong to {rel_key}", FIX)
        releases[rel_key] = Release(
            key=rel_key,
            torch=torch,
            triton=_section(rel_key, "triton", raw["triton"], sources, file),
            torchvision=_section(rel_key, "torchvision", raw["torchvision"], sources, file),
        )
    return BuildMatrix(path=path, releases=releases)


def read_build_matrix(path: Path) -> BuildMatrix:
    return parse_build_matrix(read_toml(path), path)


@lru_cache(maxsize=4)
def _load(path: Path) -> BuildMatrix:
    return read_build_matrix(path)


def load_build_matrix(path: Path | None = None) -> BuildMatrix:
    """The build matrix (cached per path); ``matrices/build.toml`` by default."""
    if path is None:
        from rocmkit.util.paths import matrices_dir

        path = matrices_dir() / FILE_NAME
    return _load(Path(path))
