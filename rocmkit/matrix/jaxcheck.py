"""``rocmkit matrix check --sources`` for ``jax.toml``: its index-sourced facts re-read from the index.

Independent of the generator (``rocmkit/matrix/jaxgen.py``), as a reader would check each fact:

* ``pypi_jax``: per ``[[release]]``, jaxlib's final wheels of that version have exactly the row's
  CPython span and were first uploaded on its ``released`` day, jax has the version too, and each
  plugin build the row names is on its plugin's page with that CPython span, with its PJRT at the
  same version;
* ``pypi_torch_xla``: per ``[[torch_xla]]``, the Linux x86_64 wheels of that version span the
  row's CPythons.

The rest of the file (plugins, archs, routes, fixes) rests on wheels read once and on prose; those
facts are counted as hand-kept. A row marked unconfirmed is not checked.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from rocmkit.matrix.sourceread import check_release_wheels, cpython_span
from rocmkit.pkgindex.pages import ProjectPage, Wheel

if TYPE_CHECKING:
    from rocmkit.matrix.jaxdata import JaxData
    from rocmkit.matrix.sourceread import Report, Sources

FILE = "jax.toml"
# "https://pypi.org/simple/{jax, jaxlib, ...}/ (PEP 691 pages ...)" or "https://pypi.org/simple/torch-xla/ (...)"
_BASE = re.compile(r"(https?://\S+?)/(?:\{[^}]*\}|[A-Za-z0-9._-]+)/\s")


def _base(text: str) -> str | None:
    m = _BASE.match(text + " ")
    return m.group(1) if m else None


def _wheels(page: ProjectPage, version: str, *, linux: bool = False) -> list[Wheel]:
    """Final wheels of exactly ``version`` (a post-release such as 0.9.1.post6 is its own version)."""
    try:
        want = Version(version)
    except InvalidVersion:
        return []
    return [
        w
        for w in page.wheels()
        if w.version == want and not w.version.local and (not linux or w.is_linux_x86_64())
    ]


def check_jax(jd: JaxData, sources: Sources, rep: Report) -> None:
    _releases(jd, sources, rep)
    _torch_xla(jd, sources, rep)
    hand = [*jd.plugins, *jd.archs, *jd.routes, *jd.fixes]
    rep.hand_kept += sum(1 for f in hand if f.is_confirmed())


def _page(base: str | None, project: str, key: str, sources: Sources, rep: Report) -> ProjectPage | None:
    page = sources.page(base, project) if base else None
    if page is None:
        rep.unreadable.append(f"{FILE} [sources] {key}: {base}/{project}/" if base else f"{FILE} [sources] {key}")
    return page


def _releases(jd: JaxData, sources: Sources, rep: Report) -> None:
    base = _base(jd.sources.get("pypi_jax", ""))
    rows = [r for r in jd.releases if "pypi_jax" in r.sources and r.is_confirmed()]
    if not rows:
        return
    jaxlib = _page(base, "jaxlib", "pypi_jax", sources, rep)
    jax = _page(base, "jax", "pypi_jax", sources, rep)
    if jaxlib is None or jax is None:
        return
    for row in rows:
        where = f"{FILE} release {row.version}"
        released = row.released.isoformat() if row.released else None
        wheels = _wheels(jaxlib, row.version)
        python = (row.python_min, row.python_max)
        if not check_release_wheels(rep, where, jaxlib, f"jaxlib {row.version}", wheels, python, released):
            continue
        rep.checked += 1
        if not _wheels(jax, row.version):
            rep.not_stated.append(f"{where}: {jax.url} has no jax {row.version}")
        for build in row.plugins:
            plugin = jd.plugin(build.family)
            if plugin is None:
                continue  # the loader already refuses an unknown family
            ppage = _page(base, plugin.plugin, "pypi_jax", sources, rep)
            jpage = _page(base, plugin.pjrt, "pypi_jax", sources, rep)
            if ppage is None or jpage is None:
                continue
            rep.checked += 1
            said = cpython_span(_wheels(ppage, build.version))
            what = f"{where}: {plugin.plugin} {build.version} for Python {build.python_min}-{build.python_max}"
            if said is None:
                rep.not_stated.append(f"{what}, which {ppage.url} does not have")
            elif said != (build.python_min, build.python_max):
                rep.not_stated.append(f"{what}, but {ppage.url} has CPython {said[0]}-{said[1]} wheels")
            if not _wheels(jpage, build.version):
                rep.not_stated.append(f"{what}, but {jpage.url} has no {plugin.pjrt} {build.version}")


def _torch_xla(jd: JaxData, sources: Sources, rep: Report) -> None:
    rows = [r for r in jd.torch_xla if "pypi_torch_xla" in r.sources and r.is_confirmed()]
    if not rows:
        return
    page = _page(_base(jd.sources.get("pypi_torch_xla", "")), "torch-xla", "pypi_torch_xla", sources, rep)
    if page is None:
        return
    for row in rows:
        rep.checked += 1
        span = cpython_span(_wheels(page, row.version, linux=True))
        if span != (row.python_min, row.python_max):
            has = f"CPython {span[0]}-{span[1]} Linux x86_64 wheels" if span else "no Linux x86_64 wheel"
            rep.not_stated.append(
                f"{FILE} torch_xla {row.version}: Python {row.python_min}-{row.python_max}, but {page.url} has {has}"
            )
