"""Generate ``jax.toml``'s release rows from the package index (``matrix refresh --write``).

From the PEP 691 pages of ``jax``, ``jaxlib``, each plugin and PJRT project that
``[[plugin]]`` names, and ``torch-xla``: per jax release, the CPython span of
jaxlib's wheels and the first upload day; per plugin family, the newest build of
that release (a post-release such as ``0.9.1.post6``) for each Python, kept only
when its PJRT exists at the same version; per torch-xla release, its CPython span.
Everything else in the file (plugins, archs, routes, fixes) is hand-kept with its
own source and passes through unchanged.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from rocmkit.pkgindex.pages import ProjectPage, Wheel

JAX_FLOOR = "0.6.0"  # the oldest jax release listed when the file lists none
GENERATED = ("pypi_jax", "pypi_torch_xla")


@dataclass(kw_only=True)
class JaxOutcome:
    doc: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def projects(doc: Mapping[str, Any]) -> tuple[str, ...]:
    """The index projects the generator reads for ``doc``."""
    names = ["jax", "jaxlib"]
    for row in doc.get("plugin", []):
        names += [str(row.get("plugin")), str(row.get("pjrt"))]
    return (*names, "torch-xla")


def _finals(page: ProjectPage | None) -> dict[Version, list[Wheel]]:
    out: dict[Version, list[Wheel]] = {}
    for w in page.wheels() if page is not None else []:
        if w.version.is_prerelease or w.version.is_devrelease or w.version.local:
            continue
        out.setdefault(w.version, []).append(w)
    return out


def _pythons(wheels: list[Wheel]) -> list[str]:
    found: set[str] = set()
    for w in wheels:
        found |= w.cpythons()
    return sorted(found, key=Version)


def _day(wheels: list[Wheel]) -> dt.date | None:
    times = sorted(w.file.upload_time for w in wheels if w.file.upload_time)
    return dt.date.fromisoformat(times[0][:10]) if times else None


def _builds(plugin: dict[Version, list[Wheel]], pjrt: dict[Version, list[Wheel]], release: Version) -> list[dict[str, Any]]:
    """Newest build first, each kept only if it is the newest for some Python."""
    mine = sorted((v for v in plugin if v.release == release.release and v in pjrt), reverse=True)
    taken: set[str] = set()
    out: list[dict[str, Any]] = []
    for v in mine:
        pys = _pythons(plugin[v])
        if not pys or set(pys) <= taken:
            continue
        taken |= set(pys)
        out.append({"version": str(v), "python_min": pys[0], "python_max": pys[-1]})
    return out


def generate_jax(doc: dict[str, Any], pages: Mapping[str, ProjectPage], *, index_url: str, read_on: str) -> JaxOutcome:
    """A new jax.toml document; ``doc`` is not modified. Without a jaxlib page the releases stay."""
    new = copy.deepcopy(doc)
    out = JaxOutcome(doc=new)
    sources: dict[str, str] = dict(new.get("sources", {}))
    jaxlib = _finals(pages.get("jaxlib"))
    if jaxlib:
        jax = _finals(pages.get("jax"))
        floor = min((Version(str(r["version"])) for r in new.get("release", [])), default=Version(JAX_FLOOR))
        rows: list[dict[str, Any]] = []
        for version in sorted(jaxlib):
            if version < floor:
                continue
            if version not in jax:
                out.notes.append(f"jaxlib {version}: no jax {version} on {index_url}/jax/; left out")
                continue
            pys = _pythons(jaxlib[version])
            if not pys:
                continue
            row: dict[str, Any] = {"version": str(version), "python_min": pys[0], "python_max": pys[-1]}
            day = _day(jaxlib[version])
            if day:
                row["released"] = day
            row["sources"] = ["pypi_jax"]
            builds: list[dict[str, Any]] = []
            for plugin in new.get("plugin", []):
                found = _builds(
                    _finals(pages.get(str(plugin["plugin"]))), _finals(pages.get(str(plugin["pjrt"]))), version
                )
                builds += [{"family": plugin["family"], **b} for b in found]
            if builds:
                row["plugins"] = builds
            rows.append(row)
        new["release"] = rows
        names = ", ".join(projects(new)[:-1])
        sources["pypi_jax"] = (
            f"{index_url}/{{{names}}}/ (PEP 691 pages read {read_on}: wheel CPython tags, upload-time; "
            "a plugin build is listed when its PJRT has the same version)"
        )
    xla = _finals(pages.get("torch-xla"))
    if xla:
        new["torch_xla"] = [
            {"version": str(v), "python_min": p[0], "python_max": p[-1], "sources": ["pypi_torch_xla"]}
            for v in sorted(xla)
            if (p := _pythons([w for w in xla[v] if w.is_linux_x86_64()]))
        ]
        sources["pypi_torch_xla"] = (
            f"{index_url}/torch-xla/ (PEP 691 page read {read_on}: CPython tags of its Linux x86_64 wheels)"
        )
    new["sources"] = sources
    return out
