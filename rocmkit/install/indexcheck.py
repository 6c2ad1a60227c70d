"""Check that each package index answers before pip or uv are sent to it.

pip's defaults (15 s timeout, 5 retries, per file) turn a dead index into
minutes of silence. A short GET of the index's page for the first planned
project says in seconds whether it answers. When one does not, rocmkit stops
with the index that failed and what to do: the source of torch is never switched
behind the user's back. Only when the user opts in (``--fallback-index``) does
it look through the user's own pip configuration (find-links folders, a mirror
index-url, extra indexes: the way air-gapped clusters are usually set up) for the
exact planned wheels, and use that source with a WARNING that names it. A plan or
lock that names no index at all is refused the same way (pip would take torch from
PyPI, a CUDA build on Linux).
"""

from __future__ import annotations

import configparser
import os
import urllib.parse
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from rocmkit.errors import NetworkError, rerun
from rocmkit.install.base import Sources
from rocmkit.packages import canonical, parse_pin, requirement_name
from rocmkit.pkgindex.http import http_get, reach
from rocmkit.pkgindex.pages import IndexFile, files_from_html, parse_wheel, wheel_matches
from rocmkit.util.redact import url_under

__all__ = ["decide_sources", "probe_index", "read_pip_config", "wheel_matches"]


DEFAULT_PROBE_TIMEOUT_S = 5.0
PYPI_SIMPLE = "https://pypi.org/simple"
FALLBACK_FLAG = "--fallback-index"
FALLBACK_ENV = "ROCMKIT_FALLBACK_INDEX"
# Where else the planned builds can come from when their index does not answer: the fixes of
# that error after --fallback-index, each a command to copy (a wheelhouse download drops the last).
ELSEWHERE = (
    rerun("--index-base", "https://MIRROR/whl") + "   # a mirror of download.pytorch.org/whl",
    "rocmkit wheelhouse DIR   # on a connected node; then here: rocmkit install --wheelhouse DIR",
)


@dataclass(frozen=True, kw_only=True)
class Probe:
    url: str
    ok: bool
    detail: str  # "answers", "connection refused", "no answer within 5 s", "HTTP 404 for ..."

    def describe(self) -> str:
        if self.detail.startswith("HTTP"):
            return f"{self.url} answered {self.detail}"
        return f"{self.url} did not answer ({self.detail})"


@dataclass(frozen=True, kw_only=True)
class UserPipConfig:
    """The sources in the user's own pip configuration (files and PIP_* variables)."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    origins: dict[str, str] = field(default_factory=dict)  # source -> where it was configured


@dataclass(frozen=True, kw_only=True)
class SourceDecision:
    sources: Sources
    probes: tuple[Probe, ...]
    messages: tuple[str, ...] = ()  # what was substituted, for the user
    left_out: tuple[str, ...] = ()  # companion requirements no reachable source holds


def probe_index(index_url: str, project: str, timeout: float = DEFAULT_PROBE_TIMEOUT_S) -> Probe:
    """Does ``index_url`` answer for ``project`` within ``timeout``?"""
    page = url_under(index_url, canonical(project), slash=True)
    parsed = urllib.parse.urlsplit(index_url)
    if parsed.scheme == "file":
        path = Path(urllib.parse.unquote(parsed.path)) / canonical(project)
        ok = path.exists()
        return Probe(url=index_url, ok=ok, detail="local folder" if ok else f"{path} does not exist")
    if parsed.scheme not in ("http", "https"):
        return Probe(url=index_url, ok=False, detail=f"unsupported URL scheme {parsed.scheme!r}")
    got = reach(page, timeout=timeout)
    if got.status is None:
        return Probe(url=index_url, ok=False, detail=got.reason)
    if got.reason != "answers":
        # 404: the index answers but has no such project; pip would find nothing there either.
        return Probe(url=index_url, ok=False, detail=f"{got.reason} for {page}")
    return Probe(url=index_url, ok=True, detail="answers")


def _split(value: str) -> list[str]:
    return [v for v in value.split() if v]


def read_pip_config(environ: Mapping[str, str] | None = None, home: Path | None = None) -> UserPipConfig:
    """Read the user's pip sources the way pip does: global, user, PIP_CONFIG_FILE, then PIP_* variables."""
    env = os.environ if environ is None else environ
    home = home or Path(env.get("HOME", str(Path.home())))
    xdg = Path(env.get("XDG_CONFIG_HOME", str(home / ".config")))
    files: list[Path] = [Path("/etc/xdg/pip/pip.conf"), Path("/etc/pip.conf")]
    config_file = env.get("PIP_CONFIG_FILE")
    if config_file == os.devnull:
        files = []
    else:
        if not (config_file and Path(config_file).exists()):
            files += [home / ".pip" / "pip.conf", xdg / "pip" / "pip.conf"]
        if config_file:
            files.append(Path(config_file))
    values: dict[str, tuple[str, str]] = {}
    for path in files:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(path)
        except (configparser.Error, OSError, ValueError):
            continue  # not pip's either (not INI, not UTF-8): pip says so when it runs
        for section in ("global", "install", "download"):
            if parser.has_section(section):
                for key in ("index-url", "extra-index-url", "find-links"):
                    if parser.has_option(section, key):
                        values[key] = (parser.get(section, key), str(path))
    for key in ("index-url", "extra-index-url", "find-links"):
        var = "PIP_" + key.upper().replace("-", "_")
        if env.get(var):
            values[key] = (env[var], f"${var}")
    origins: dict[str, str] = {}
    for value, origin in values.values():
        for item in _split(value):
            origins[item] = origin
    index = _split(values["index-url"][0])[0] if "index-url" in values else None
    return UserPipConfig(
        index_url=index,
        extra_index_urls=tuple(_split(values.get("extra-index-url", ("", ""))[0])),
        find_links=tuple(_split(values.get("find-links", ("", ""))[0])),
        origins=origins,
    )


def user_fallbacks(environ: Mapping[str, str] | None = None) -> list[tuple[str, bool]]:
    """The sources pip uses when the planned index does not answer (``--fallback-index``), as
    (URL or folder, is an index): the find-links first, then the index-url (pip's default, PyPI,
    when none is configured) and the extra indexes."""
    user = read_pip_config(environ)
    found: list[tuple[str, bool]] = [(link, False) for link in user.find_links]
    indexes = dict.fromkeys((user.index_url or PYPI_SIMPLE, *user.extra_index_urls))
    return found + [(url, True) for url in indexes]


def _wheel_names(source: str, project: str, timeout: float, *, is_index: bool) -> list[str]:
    """Wheel filenames that ``source`` offers (a folder, a flat links page, or a simple index)."""
    parsed = urllib.parse.urlsplit(source)
    if parsed.scheme in ("", "file"):
        folder = Path(urllib.parse.unquote(parsed.path) if parsed.scheme else source)
        if is_index:
            folder = folder / canonical(project)
        if folder.is_dir():
            return [p.name for p in folder.iterdir() if p.suffix == ".whl"]
        index_html = folder / "index.html"
        if index_html.is_file():
            page = index_html.read_text(errors="replace")
        else:
            return []
    else:
        url = url_under(source, canonical(project), slash=True) if is_index else source
        try:
            resp = http_get(url, timeout=timeout, accept="text/html")
        except NetworkError:
            return []
        if resp.status != 200:
            return []
        page = resp.body.decode(errors="replace")
    return [
        f.filename
        for f in files_from_html(source, page.encode(), strict=False)
        if f.filename.endswith(".whl")
    ]


def _project(requirement: str) -> str:
    return requirement_name(requirement) or requirement.strip()


def _project_matches(filename: str, name: str, python: str | None) -> bool:
    """A wheel of ``name`` in any version, for ``python`` (unpinned nightly companions)."""
    wheel = parse_wheel(IndexFile(filename=filename, url=filename))
    return wheel is not None and wheel_matches(filename, name, str(wheel.version), python)


def pinned(requirements: Sequence[str]) -> list[tuple[str, str]]:
    return [(pin.name, pin.version) for req in requirements if (pin := parse_pin(req)) is not None]


def answers(url: str, timeout: float = DEFAULT_PROBE_TIMEOUT_S) -> bool:
    """Does an index answer at all (any HTTP status, or an existing folder)? It may still
    serve the unpinned dependencies even when it holds no torch."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme == "file":
        return Path(urllib.parse.unquote(parsed.path)).is_dir()
    return reach(url_under(url, slash=True), timeout=timeout, accept="*/*").status is not None


def decide_sources(
    sources: Sources,
    requirements: Sequence[str],
    *,
    python: str | None,
    timeout: float = DEFAULT_PROBE_TIMEOUT_S,
    user: UserPipConfig | None = None,
    companions: Sequence[str] = (),
    fallback: bool = False,
) -> SourceDecision:
    """Probe each index; when one fails, stop (:class:`NetworkError`), or with ``fallback``
    (``--fallback-index``) substitute the user's own sources when they hold the pins.

    ``companions`` (a subset of ``requirements``) are optional: when the user's sources
    hold every other pin but not them, they are left out (``SourceDecision.left_out``)
    instead of failing the whole install.
    """
    if sources.offline or sources.no_index:
        return SourceDecision(sources=sources, probes=())
    if not sources.index_urls:
        return _no_index(sources, user, fallback)
    optional = set(companions)
    required = [r for r in requirements if r not in optional]
    pins = pinned(required)
    project = pins[0][0] if pins else "torch"
    # Probed side by side: each is a network round trip (PyPI's is the slow one), and the
    # answers are independent.
    with ThreadPoolExecutor(max_workers=min(len(sources.index_urls), 8)) as pool:
        probes = tuple(pool.map(lambda url: probe_index(url, project, timeout), sources.index_urls))
    # A later index that answers 404 for the first pin is alive: it serves the plan's other
    # projects (PyPI for Triton or jax beside PyTorch's index, PyPI for jax beside AMD's).
    failed = [p for i, p in enumerate(probes) if not p.ok and not (i > 0 and "HTTP 404" in p.detail)]
    if not failed:
        return SourceDecision(sources=sources, probes=probes)
    if not fallback:
        raise NetworkError(
            f"package index {failed[0].describe()}; the planned builds come from no other source unless asked",
            (
                rerun(FALLBACK_FLAG) + "   # the same builds from your own pip sources, if they hold them",
                *ELSEWHERE,
            ),
        )
    user = user if user is not None else read_pip_config()
    bad = {p.url for p in failed}
    # No index-url configured means pip's default, PyPI.
    user_indexes = [
        u for u in dict.fromkeys((user.index_url or PYPI_SIMPLE, *user.extra_index_urls)) if u not in bad
    ]
    candidates: list[tuple[str, bool]] = [(link, False) for link in user.find_links]
    candidates += [(url, True) for url in user_indexes]

    def holder(name: str, version: str | None) -> str | None:
        for source, is_index in candidates:
            names = _wheel_names(source, name, timeout, is_index=is_index)
            if version is None:
                if any(_project_matches(n, name, python) for n in names):
                    return source
            elif any(wheel_matches(n, name, version, python) for n in names):
                return source
        return None

    holders: dict[str, str] = {}  # pin -> source holding it
    for name, version in pins:
        found = holder(name, version)
        if found:
            holders[f"{name}=={version}"] = found
    if pins and len(holders) == len(pins):
        left_out: list[str] = []
        for req in requirements:
            if req not in optional:
                continue
            pin = pinned([req])
            found = holder(*pin[0]) if pin else holder(_project(req), None)
            if found:
                holders[req] = found
            else:
                left_out.append(req)
        kept = [p.url for p in probes if p.ok]
        # The user's indexes stay for the unpinned dependencies, if they answer.
        kept += [u for u in user_indexes if u not in kept and answers(u, timeout)]
        new = Sources(
            index_urls=tuple(kept),
            find_links=tuple(dict.fromkeys((*sources.find_links, *user.find_links))),
            no_index=not kept,
        )
        used = sorted(set(holders.values()))
        messages = tuple(
            f"WARNING: {FALLBACK_FLAG}: index {p.describe()}; using "
            + ", ".join(f"{s} (from {user.origins.get(s, 'your pip configuration')})" for s in used)
            + f", which holds {', '.join(holders)}"
            for p in failed
        )
        return SourceDecision(sources=new, probes=probes, messages=messages, left_out=tuple(left_out))
    first = failed[0]
    lacking = [f"{n}=={v}" for n, v in pins if f"{n}=={v}" not in holders]
    searched = ", ".join(s for s, _ in candidates) or "none configured"
    raise NetworkError(
        f"package index {first.describe()}, and your pip configuration's "
        f"sources ({searched}) do not hold {', '.join(lacking) or 'the planned wheels'}",
        ELSEWHERE,
    )


def _no_index(sources: Sources, user: UserPipConfig | None, fallback: bool) -> SourceDecision:
    """A plan or lock that names no index: pip and uv would fall back to PyPI (whose Linux
    torch is a CUDA build) or whatever their configuration names. Refused, unless asked;
    then the user's sources are passed explicitly, and named."""
    if not fallback:
        raise NetworkError(
            "the plan names no package index; pip or uv would take torch from their own default "
            "source (PyPI's torch for Linux is a CUDA build)",
            (
                "rocmkit resolve --json --output plan.json   # a new plan, with its index",
                rerun(FALLBACK_FLAG) + "   # install from your pip configuration's sources",
            ),
        )
    user = user if user is not None else read_pip_config()
    indexes = tuple(dict.fromkeys((user.index_url or PYPI_SIMPLE, *user.extra_index_urls)))
    links = tuple(dict.fromkeys((*sources.find_links, *user.find_links)))
    default = {PYPI_SIMPLE: "pip's default"}
    used = ", ".join(
        f"{s} (from {user.origins.get(s, default.get(s, 'your pip configuration'))})"
        for s in (*indexes, *user.find_links)
    )
    message = f"WARNING: {FALLBACK_FLAG}: the plan names no package index; using {used}"
    return SourceDecision(
        sources=Sources(index_urls=indexes, find_links=links), probes=(), messages=(message,)
    )
