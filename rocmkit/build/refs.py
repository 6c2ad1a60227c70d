"""The source references in ``matrices/build.toml``: which repository, tag and pin make a release.

Loaded once (cached), validated on load: an unknown key is an error with a "did you mean", a
missing key or a wrong type names the file and the entry. Code never holds these facts itself.
"""

from __future__ import annotations

import difflib
import re
import sys
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from rocmkit.errors import DataError, NoPlanError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

SCHEMA = "rocmkit.build/1"
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


_SECTIONS: dict[str, type] = {"torch": TorchRef, "triton": TritonRef, "torchvision": VisionRef}
_OPTIONAL = {"commit", "version"}


def _where(path: Path, entry: str) -> str:
    return f"{path}: {entry}"


def _unknown(path: Path, entry: str, key: str, allowed: list[str]) -> DataError:
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"allowed keys: {', '.join(sorted(allowed))}"
    return DataError(f"{_where(path, entry)}: unknown key '{key}' ({hint})", f"fix {path.name}")


def _section(path: Path, rel_key: str, name: str, raw: Any) -> Any:
    cls = _SECTIONS[name]
    entry = f'release."{rel_key}".{name}'
    if not isinstance(raw, dict):
        raise DataError(f"{_where(path, entry)}: must be a table", f"fix {path.name}")
    allowed = [f.name for f in fields(cls)]
    for key in raw:
        if key not in allowed:
            raise _unknown(path, entry, key, allowed)
    values: dict[str, Any] = {}
    for f in fields(cls):
        if f.name not in raw:
            if f.name in _OPTIONAL:
                values[f.name] = None
                continue
            raise DataError(f"{_where(path, entry)}: missing key '{f.name}'", f"fix {path.name}")
        value = raw[f.name]
        want = bool if f.name == "confirmed" else str
        if not isinstance(value, want):
            raise DataError(
                f"{_where(path, entry)}: '{f.name}' must be a {want.__name__}, not {value!r}",
                f"fix {path.name}",
            )
        values[f.name] = value
    if name in {"torch", "torchvision"} and not re.match(r"^v\d+\.\d+\.\d+$", values["tag"]):
        raise DataError(f"{_where(path, entry)}: tag {values['tag']!r} is not vX.Y.Z", f"fix {path.name}")
    if name == "triton" and values.get("commit") is not None and not _HEX.match(values["commit"]):
        raise DataError(
            f"{_where(path, entry)}: commit {values['commit']!r} is not a 7-40 digit lower-case hex hash",
            f"fix {path.name}",
        )
    if not values["source"].strip():
        raise DataError(f"{_where(path, entry)}: 'source' is empty", "every fact needs a source")
    return cls(**values)


def parse_build_matrix(data: Any, path: Path) -> BuildMatrix:
    """Validate parsed TOML and build the typed matrix; any problem is a DataError naming the entry."""
    if not isinstance(data, dict):
        raise DataError(f"{path}: not a table", f"fix {path.name}")
    for key in data:
        if key not in {"schema", "release"}:
            raise _unknown(path, "top level", key, ["schema", "release"])
    if data.get("schema") != SCHEMA:
        raise DataError(f"{path}: schema is {data.get('schema')!r}, expected {SCHEMA!r}", f"fix {path.name}")
    raw_releases = data.get("release")
    if not isinstance(raw_releases, dict) or not raw_releases:
        raise DataError(f'{path}: no [release."X.Y"] tables', f"fix {path.name}")
    releases: dict[str, Release] = {}
    for rel_key, raw in raw_releases.items():
        if not _RELEASE_KEY.match(rel_key):
            raise DataError(f'{path}: release."{rel_key}": key must be "X.Y"', f"fix {path.name}")
        if not isinstance(raw, dict):
            raise DataError(f'{path}: release."{rel_key}" must be a table', f"fix {path.name}")
        for key in raw:
            if key not in _SECTIONS:
                raise _unknown(path, f'release."{rel_key}"', key, list(_SECTIONS))
        for name in _SECTIONS:
            if name not in raw:
                raise DataError(f'{path}: release."{rel_key}": missing [{name}] section', f"fix {path.name}")
        torch = _section(path, rel_key, "torch", raw["torch"])
        if not torch.version.startswith(rel_key + "."):
            raise DataError(
                f'{path}: release."{rel_key}".torch: tag {torch.tag} does not belong to {rel_key}',
                f"fix {path.name}",
            )
        releases[rel_key] = Release(
            key=rel_key,
            torch=torch,
            triton=_section(path, rel_key, "triton", raw["triton"]),
            torchvision=_section(path, rel_key, "torchvision", raw["torchvision"]),
        )
    return BuildMatrix(path=path, releases=releases)


def read_build_matrix(path: Path) -> BuildMatrix:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror}", "reinstall rocmkit") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DataError(f"{path}: invalid TOML: {exc}", f"fix {path.name}") from exc
    return parse_build_matrix(data, path)


@lru_cache(maxsize=4)
def _load(path: Path) -> BuildMatrix:
    return read_build_matrix(path)


def load_build_matrix(path: Path | None = None) -> BuildMatrix:
    """The build matrix (cached per path); ``matrices/build.toml`` by default."""
    if path is None:
        from rocmkit.paths import matrices_dir

        path = matrices_dir() / FILE_NAME
    return _load(Path(path))
