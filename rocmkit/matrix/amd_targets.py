"""AMD's names for a GPU target's packaging levels (``matrices/amd_targets.toml``).

AMD's rocm-bootstrap names every target's target -> sub-family -> family chain
(gfx1151 -> gfx115x -> gfx11); its device wheels and its WheelNext variant plugin use
these names. rocmkit reports them beside its own view of each GPU and validates the
targets of ``ROCM_BOOTSTRAP_FORCE_GFX_ARCH`` against them. The table is data, loaded
and checked here like every file in ``matrices/`` (registered in ``datafiles.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rocmkit.errors import DataError
from rocmkit.matrix.fields import FIX, read_sources, read_toml, table

FILE = "amd_targets.toml"


@dataclass(frozen=True, kw_only=True)
class Level:
    """One family or sub-family: AMD's key, display name and LLVM generic target."""

    key: str  # "gfx115x", "gfx10_3", "gfx11"
    name: str  # "RDNA3.5"
    generic: str | None = None  # "gfx11-generic"
    sources: tuple[str, ...] = ()

    @property
    def dist_name(self) -> str:
        """The name in package names: "gfx10_3" -> "gfx10-3" (rocm-bootstrap's naming.py rule)."""
        return self.key.replace("_", "-")


@dataclass(frozen=True, kw_only=True)
class AmdTarget:
    """One GPU target as AMD's rocm-bootstrap names its levels."""

    target: str  # "gfx1151"
    sub_family: Level
    family: Level

    def chain(self) -> str:
        """ "gfx1151 gfx115x gfx11": the line ``rocm-bootstrap-detect --hierarchy`` prints."""
        return f"{self.target} {self.sub_family.key} {self.family.key}"

    def describe(self) -> str:
        """ "gfx1151 (sub-family gfx115x RDNA3.5, family gfx11 RDNA3)"."""
        return (
            f"{self.target} (sub-family {self.sub_family.key} {self.sub_family.name}, "
            f"family {self.family.key} {self.family.name})"
        )

    def to_dict(self) -> dict[str, str | None]:
        return {
            "target": self.target,
            "sub_family": self.sub_family.key,
            "sub_family_name": self.sub_family.name,
            "family": self.family.key,
            "family_name": self.family.name,
            "generic": self.sub_family.generic or self.family.generic,
        }


@dataclass(frozen=True, kw_only=True)
class AmdTargets:
    targets: dict[str, AmdTarget]  # target name -> its chain
    sub_families: dict[str, Level]  # key (and alias) -> level
    families: dict[str, Level]

    def lookup(self, target: str) -> AmdTarget | None:
        """The chain of ``target`` ("gfx90a:sramecc+:xnack-" is gfx90a), None when AMD lists no such target."""
        name = target.strip().lower()
        hit = self.targets.get(name)
        if hit is None and ":" in name:
            hit = self.targets.get(name.split(":", 1)[0])
        return hit

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.targets)


def parse_amd_targets(directory: Path) -> AmdTargets:
    doc = read_toml(directory / FILE)
    src = read_sources(doc, file=FILE)
    families: dict[str, Level] = {}
    for row in table(doc, "family", file=FILE, keys=("key", "name", "generic"), sources=src, name_key="key"):
        key = row.string("key")
        if key in families:
            raise row.error(f"family {key!r} is listed twice")
        families[key] = Level(
            key=key, name=row.string("name"), generic=row.opt_string("generic"), sources=row.source_keys()
        )
    subs: dict[str, Level] = {}
    targets: dict[str, AmdTarget] = {}
    for row in table(
        doc,
        "sub_family",
        file=FILE,
        keys=("key", "family", "name", "generic", "targets", "aliases"),
        sources=src,
        name_key="key",
    ):
        key = row.string("key")
        fam_key = row.string("family")
        family = families.get(fam_key)
        if family is None:
            raise row.error(f"family {fam_key!r} is not a [[family]] key")
        level = Level(
            key=key, name=row.string("name"), generic=row.opt_string("generic"), sources=row.source_keys()
        )
        for name in (key, *row.strings("aliases")):
            if name in subs or name in families:
                raise row.error(f"{name!r} names two levels")
            subs[name] = level
        for target in row.strings("targets", required=True):
            if target in targets:
                raise row.error(f"target {target!r} is in two sub-families")
            targets[target] = AmdTarget(target=target, sub_family=level, family=family)
    if not targets:
        raise DataError(f"{FILE}: no [[sub_family]] lists a target", FIX)
    return AmdTargets(targets=targets, sub_families=subs, families=families)


def load_amd_targets(directory: Path | None = None) -> AmdTargets:
    """The table in ``directory`` (default: the matrices folder in use), loaded once."""
    from rocmkit.util.paths import matrices_dir

    return _cached(str((directory or matrices_dir()).resolve()))


@lru_cache(maxsize=4)
def _cached(directory: str) -> AmdTargets:
    return parse_amd_targets(Path(directory))
