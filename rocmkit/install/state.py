"""Record the exact state of an environment, back up what an install may replace,
and put it all back.

State = every installed distribution (normalised name, version, and a
fingerprint of its RECORD) plus the bytes of the few files rocmkit itself
manages in the venv (the guard). A backup is a real wheel re-zipped from the
installed files that RECORD lists, so restoring is an ordinary offline
install (``--no-index --no-deps``) of exactly what was there before.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocmkit.errors import ToolError
from rocmkit.install.venv import Target
from rocmkit.runner import run

SCHEMA = "rocmkit.envstate/1"
SNAPSHOT_TIMEOUT_S = 120.0

# Runs inside the target interpreter. The fingerprint ignores what an installer
# writes on its own (RECORD itself, INSTALLER, REQUESTED, byte-code), so a
# distribution reinstalled from its backup has the fingerprint it had before.
_SNAPSHOT = r"""
import hashlib, json, sys
from importlib import metadata
SKIP = ("RECORD", "INSTALLER", "REQUESTED", "uv_cache.json")
out = []
for dist in metadata.distributions(path=sys.argv[1:]):
    name = dist.metadata["Name"]
    if not name:
        continue
    info = getattr(dist, "_path", None)
    record = dist.read_text("RECORD")
    lines = []
    for line in (record or "").splitlines():
        path, _, rest = line.partition(",")
        if not path or path.endswith(".pyc") or "__pycache__" in path:
            continue
        if ".dist-info/" in path and path.rsplit("/", 1)[-1] in SKIP:
            continue
        lines.append(path + "," + rest.split(",")[0])
    basis = "\n".join(sorted(lines)) if record is not None else (dist.read_text("METADATA") or "")
    out.append({
        "name": name,
        "version": dist.version,
        "dist_info": str(info) if info is not None else None,
        "fingerprint": hashlib.sha256(basis.encode()).hexdigest(),
        "has_record": record is not None,
        "installer": (dist.read_text("INSTALLER") or "").strip() or None,
    })
print(json.dumps(out))
"""


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True, kw_only=True)
class Dist:
    name: str  # canonical
    version: str
    fingerprint: str
    dist_info: str | None = None
    has_record: bool = True
    installer: str | None = None

    def pin(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass(frozen=True, kw_only=True)
class EnvState:
    python: str
    dists: dict[str, Dist]
    files: dict[str, str | None] = field(default_factory=dict)  # managed file -> sha256 (None: absent)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "python": self.python,
            "dists": [
                {
                    "name": d.name,
                    "version": d.version,
                    "fingerprint": d.fingerprint,
                    "dist_info": d.dist_info,
                    "installer": d.installer,
                }
                for d in sorted(self.dists.values(), key=lambda d: d.name)
            ],
            "files": self.files,
        }

    def freeze(self) -> list[str]:
        return sorted(d.pin() for d in self.dists.values())


@dataclass(frozen=True, kw_only=True)
class StateDiff:
    added: tuple[Dist, ...] = ()
    removed: tuple[Dist, ...] = ()
    changed: tuple[tuple[Dist, Dist], ...] = ()  # (before, after)
    files: tuple[str, ...] = ()  # managed files whose bytes differ

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.files)

    def describe(self) -> str:
        parts = [f"+{d.pin()}" for d in self.added]
        parts += [f"-{d.pin()}" for d in self.removed]
        parts += [
            f"{a.name} {a.version}->{b.version}" if a.version != b.version else f"{a.name} (files changed)"
            for a, b in self.changed
        ]
        parts += [f"{f} changed" for f in self.files]
        return ", ".join(parts) or "no change"


def _file_hash(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def snapshot(target: Target, managed_files: tuple[Path, ...] = ()) -> EnvState:
    """The exact state of ``target`` now."""
    argv = [str(target.python), "-I", "-c", _SNAPSHOT, *(str(d) for d in target.site_dirs)]
    result = run(argv, timeout=SNAPSHOT_TIMEOUT_S)
    if not result.ok:
        raise ToolError(f"could not list the distributions in {target.prefix}: {result.describe()}")
    try:
        rows = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise ToolError(f"{target.python} printed no distribution list") from exc
    dists: dict[str, Dist] = {}
    for row in rows:
        dist = Dist(
            name=canonical(row["name"]),
            version=row["version"],
            fingerprint=row["fingerprint"],
            dist_info=row["dist_info"],
            has_record=row["has_record"],
            installer=row["installer"],
        )
        # Two copies of one name (a stale dist-info): the first on sys.path wins, as at import.
        dists.setdefault(dist.name, dist)
    files = {str(p): _file_hash(p) for p in managed_files}
    return EnvState(python=str(target.python), dists=dists, files=files)


def diff(before: EnvState, after: EnvState) -> StateDiff:
    added = tuple(after.dists[n] for n in sorted(after.dists.keys() - before.dists.keys()))
    removed = tuple(before.dists[n] for n in sorted(before.dists.keys() - after.dists.keys()))
    changed = tuple(
        (before.dists[n], after.dists[n])
        for n in sorted(before.dists.keys() & after.dists.keys())
        if (before.dists[n].version, before.dists[n].fingerprint)
        != (after.dists[n].version, after.dists[n].fingerprint)
    )
    files = tuple(
        sorted(
            f for f in before.files.keys() | after.files.keys() if before.files.get(f) != after.files.get(f)
        )
    )
    return StateDiff(added=added, removed=removed, changed=changed, files=files)


# -- backups ---------------------------------------------------------------

# Written by the installer itself (uv_cache.json: uv's note of where the files came from).
_INSTALLER_WRITTEN = ("RECORD", "INSTALLER", "REQUESTED", "uv_cache.json")


def _wheel_tag(wheel_meta: str) -> str:
    tags = [line.split(":", 1)[1].strip() for line in wheel_meta.splitlines() if line.startswith("Tag:")]
    return tags[0] if tags else "py3-none-any"


def _entry_point_scripts(dist_info: Path) -> set[str]:
    """Console/GUI script names: the installer regenerates these from entry_points.txt."""
    names: set[str] = set()
    try:
        text = (dist_info / "entry_points.txt").read_text()
    except FileNotFoundError:
        return names
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif "=" in line and section in ("console_scripts", "gui_scripts"):
            names.add(line.split("=", 1)[0].strip())
    return names


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_backup_wheel(dist: Dist, target: Target, dest: Path) -> Path:
    """Re-zip an installed distribution into a valid wheel (from the files its RECORD lists).

    Files outside the site folder go where a wheel keeps them: scripts in
    ``.data/scripts`` (entry-point scripts are left to the installer, which
    regenerates them), anything else under the prefix in ``.data/data``.
    """
    if dist.dist_info is None or not dist.has_record:
        raise ToolError(f"{dist.pin()} has no RECORD; it cannot be backed up exactly")
    info = Path(dist.dist_info)
    site = info.parent
    record_text = (info / "RECORD").read_text()
    wheel_meta = (info / "WHEEL").read_text() if (info / "WHEEL").is_file() else "Wheel-Version: 1.0\n"
    tag = _wheel_tag(wheel_meta)
    stem = re.sub(r"[-_.]+", "_", dist.name)
    data_dir = f"{stem}-{dist.version}.data"
    scripts = _entry_point_scripts(info)
    prefix = target.prefix.resolve()
    entries: list[tuple[str, Path]] = []
    for row in csv.reader(io.StringIO(record_text)):
        if not row or not row[0]:
            continue
        rel = row[0]
        if rel.endswith(".pyc") or "__pycache__" in rel:
            continue
        source = (site / rel).resolve() if not Path(rel).is_absolute() else Path(rel)
        if source.parent == info.resolve() and source.name in _INSTALLER_WRITTEN:
            continue
        try:
            inside = source.relative_to(site.resolve())
            arc = inside.as_posix()
            if arc.split("/", 1)[0] == info.name:
                arc = f"{stem}-{dist.version}.dist-info/" + arc.split("/", 1)[1]
        except ValueError:
            try:
                under_prefix = source.relative_to(prefix)
            except ValueError:
                continue  # outside the environment: not ours to restore
            if under_prefix.parts[:1] == ("bin",):
                if source.name in scripts:
                    continue
                arc = f"{data_dir}/scripts/{source.name}"
            else:
                arc = f"{data_dir}/data/{under_prefix.as_posix()}"
        if source.is_file():
            entries.append((arc, source))
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / f"{stem}-{dist.version}-{tag}.whl"
    record_rows: list[str] = []
    new_info = f"{stem}-{dist.version}.dist-info"
    # Stored, not deflated: backing up a multi-GB torch must cost a copy, not a compression.
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for arc, source in entries:
            data = source.read_bytes()
            zinfo = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            zinfo.external_attr = (source.stat().st_mode & 0o777) << 16
            zf.writestr(zinfo, data)
            record_rows.append(f"{arc},{_record_hash(data)},{len(data)}")
        if not any(arc == f"{new_info}/WHEEL" for arc, _ in entries):
            zf.writestr(f"{new_info}/WHEEL", wheel_meta)
        record_rows.append(f"{new_info}/RECORD,,")
        zf.writestr(f"{new_info}/RECORD", "\n".join(record_rows) + "\n")
    return out


@dataclass(frozen=True, kw_only=True)
class Backup:
    """What was recorded before an install: the state, backup wheels, managed files' bytes."""

    folder: Path
    state: EnvState
    wheels: dict[str, Path]  # canonical name -> backup wheel
    file_bytes: dict[str, bytes | None]

    def write_manifest(self) -> Path:
        path = self.folder / "state-before.json"
        path.write_text(json.dumps(self.state.to_dict(), indent=2) + "\n")
        return path


def make_backup(
    target: Target, state: EnvState, names: set[str], folder: Path, managed_files: tuple[Path, ...] = ()
) -> Backup:
    """Back up the installed distributions among ``names`` (those an install may replace)."""
    wheels_dir = folder / "wheels"
    wheels: dict[str, Path] = {}
    for name in sorted(names):
        dist = state.dists.get(canonical(name))
        if dist is not None:
            wheels[dist.name] = build_backup_wheel(dist, target, wheels_dir)
    file_bytes = {str(p): (p.read_bytes() if p.is_file() else None) for p in managed_files}
    backup = Backup(folder=folder, state=state, wheels=wheels, file_bytes=file_bytes)
    backup.write_manifest()
    return backup


def restore_files(backup: Backup) -> None:
    for name, data in backup.file_bytes.items():
        path = Path(name)
        if data is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
