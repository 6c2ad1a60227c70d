"""PEP 503 / PEP 691 simple-index project pages, wheel names and core metadata."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urljoin, urlsplit

from packaging.version import Version

from rocmkit.errors import NetworkError

if TYPE_CHECKING:
    from html.parser import HTMLParser

    from packaging.utils import NormalizedName

from rocmkit.packages import canonical
from rocmkit.pkgindex.http import ACCEPT, JSON_TYPE, MAX_METADATA_BYTES, http_get, shown
from rocmkit.pkgindex.wheelzip import metadata_by_range

# -- simple index pages --------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class IndexFile:
    """One file on a project page."""

    filename: str
    url: str
    metadata_url: str | None = None  # PEP 658/714, when the index serves it
    size: int | None = None
    upload_time: str | None = None  # PEP 700 (JSON pages)
    requires_python: str | None = None


@dataclass(frozen=True, kw_only=True)
class Wheel:
    """A wheel filename, parsed."""

    file: IndexFile
    name: NormalizedName
    version: Version
    tags: frozenset[str]  # "cp312-cp312-manylinux_2_28_x86_64"

    @property
    def local(self) -> str | None:
        return self.version.local

    @property
    def public(self) -> str:
        return self.version.public

    def cpythons(self) -> set[str]:
        """CPython minors with a GIL build ("3.12"); free-threaded (cp314t) and abi3 are left out."""
        out: set[str] = set()
        for tag in self.tags:
            interp, abi, _ = tag.split("-")
            m = re.fullmatch(r"cp(\d)(\d+)", interp)
            if m and abi == interp:
                out.add(f"{m.group(1)}.{m.group(2)}")
        return out

    def is_linux_x86_64(self) -> bool:
        return any("linux" in t and t.endswith("_x86_64") for t in self.tags)

    def is_pure(self) -> bool:
        return any(t.endswith("-none-any") for t in self.tags)


def parse_wheel(file: IndexFile) -> Wheel | None:
    if not file.filename.endswith(".whl"):
        return None
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        name, version, _, tags = parse_wheel_filename(file.filename)
    except (InvalidWheelFilename, ValueError):  # InvalidVersion too
        return None
    return Wheel(file=file, name=name, version=version, tags=frozenset(str(t) for t in tags))


def _links_parser() -> HTMLParser:
    """An HTML parser that collects ``<a>`` attributes in ``links`` and sets ``simple`` when the
    page carries the PEP 629 repository-version marker."""
    from html.parser import HTMLParser

    class Links(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.links: list[dict[str, str | None]] = []
            self.simple = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "a":
                self.links.append(dict(attrs))
            elif tag == "meta" and dict(attrs).get("name") == "pypi:repository-version":
                self.simple = True

    return Links()


def parse_project_page(page_url: str, body: bytes, content_type: str) -> list[IndexFile]:
    """The files of a PEP 691 JSON or PEP 503 HTML project page; NetworkError if it is neither."""
    if JSON_TYPE in content_type or content_type.startswith("application/json"):
        return files_from_json(page_url, body)
    if content_type and "html" not in content_type:
        raise NetworkError(
            f"{page_url} answered {content_type.split(';', maxsplit=1)[0]}, not a simple-index page",
            "check that the URL is a PEP 503/691 package index",
        )
    return files_from_html(page_url, body)


def files_from_json(page: str, body: bytes) -> list[IndexFile]:
    import json

    try:
        data = json.loads(body)
        out = []
        for f in data["files"]:
            url = urljoin(page, f["url"])
            # PEP 714 "core-metadata" (PEP 658's older key): true or a dict of hashes.
            has_meta = bool(f.get("core-metadata") or f.get("dist-info-metadata"))
            out.append(
                IndexFile(
                    filename=str(f["filename"]),
                    url=url,
                    metadata_url=url.split("#", 1)[0] + ".metadata" if has_meta else None,
                    size=f.get("size") if isinstance(f.get("size"), int) else None,
                    upload_time=f.get("upload-time") if isinstance(f.get("upload-time"), str) else None,
                    requires_python=f.get("requires-python") or None,
                )
            )
        return out
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise NetworkError(
            f"{page} is not a PEP 691 simple page ({type(exc).__name__}: {exc})",
            "check that the URL is a package index",
        ) from None


def files_from_html(page: str, body: bytes, *, strict: bool = True) -> list[IndexFile]:
    """The links of a PEP 503 page (``strict``: refuse a page that is not one) or of a
    pip ``--find-links`` page (any HTML listing wheels)."""
    text = body.decode("utf-8", "replace")
    parser: Any = _links_parser()
    try:
        parser.feed(text)
    except AssertionError:  # pragma: no cover - HTMLParser on pathological input
        parser.links = []
    out = []
    for link in parser.links:
        href = link.get("href")
        if not href:
            continue
        url = urljoin(page, href)
        filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
        has_meta = bool(link.get("data-core-metadata") or link.get("data-dist-info-metadata"))
        out.append(
            IndexFile(
                filename=filename,
                url=url,
                metadata_url=url.split("#", 1)[0] + ".metadata" if has_meta else None,
                requires_python=link.get("data-requires-python") or None,
            )
        )
    # An HTML error page ("502 Bad Gateway", a login wall) has no distribution links:
    # that is not an empty project, it is not an index.
    if (
        strict
        and not parser.simple
        and not any(_is_dist(f.filename) for f in out)
        and "Links for" not in text
    ):
        raise NetworkError(
            f"{page} answered an HTML page that is not a simple-index page",
            "check that the URL is a PEP 503/691 package index (a proxy or login page answered)",
        )
    return out


def _is_dist(filename: str) -> bool:
    return filename.endswith((".whl", ".tar.gz", ".zip"))


@dataclass(frozen=True, kw_only=True)
class ProjectPage:
    url: str
    files: tuple[IndexFile, ...]
    etag: str | None = None

    def wheels(self, name: str | None = None) -> list[Wheel]:
        want = canonical(name) if name else None
        out = []
        for f in self.files:
            w = parse_wheel(f)
            if w is not None and (want is None or w.name == want):
                out.append(w)
        return out


def project_page(index_url: str, project: str, *, timeout: float) -> ProjectPage | None:
    """``<index_url>/<project>/`` read and parsed; None when the index has no such project (404)."""
    from rocmkit.util.redact import conceal

    # Masked from here on: page and file URLs end up in caches and messages.
    page = conceal(index_url).rstrip("/") + f"/{canonical(project)}/"
    resp = http_get(page, timeout=timeout, accept=ACCEPT)
    if resp.status == 404:
        return None
    if resp.status in (401, 403):
        raise NetworkError(
            f"{shown(page)} refused rocmkit (HTTP {resp.status}): missing or wrong credentials",
            "give the user and token in the URL's user:password part, or in ~/.netrc",
        )
    if resp.status != 200:
        raise NetworkError(f"{shown(page)} answered HTTP {resp.status}", "check the index URL")
    # Where the page really came from (after any redirect): its links are relative to it, and
    # the matrices' source lines name it (without credentials: the client never puts them in a URL).
    files = parse_project_page(resp.url, resp.body, resp.content_type)
    return ProjectPage(url=resp.url, files=tuple(files), etag=resp.etag)


# -- metadata ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Metadata:
    requires_dist: tuple[str, ...]
    requires_python: str | None
    how: str  # "pep658" | "range" : how it was read, for provenance


def parse_metadata(text: str, how: str) -> Metadata:
    from email.parser import Parser

    msg = Parser().parsestr(text)
    return Metadata(
        requires_dist=tuple(msg.get_all("Requires-Dist") or ()),
        requires_python=msg.get("Requires-Python"),
        how=how,
    )


def read_metadata(file: IndexFile, *, timeout: float) -> Metadata | None:
    """A wheel's core metadata: its PEP 658 file, else its ``METADATA`` read with range
    requests (never the whole wheel); None when the server offers neither."""
    if file.metadata_url:
        resp = http_get(file.metadata_url, timeout=timeout, max_bytes=MAX_METADATA_BYTES)
        if resp.status == 200:
            return parse_metadata(resp.body.decode("utf-8", "replace"), "pep658")
    text = metadata_by_range(file.url.split("#", 1)[0], file.filename, timeout=timeout)
    return parse_metadata(text, "range") if text is not None else None


def wheel_matches(filename: str, name: str, version: str, python: str | None) -> bool:
    """Is ``filename`` a wheel of ``name`` == ``version`` (PEP 440 equality, local part included)
    installable on CPython ``python`` ("3.11"; None: any)?"""
    wheel = parse_wheel(IndexFile(filename=filename, url=filename))
    if wheel is None or wheel.name != canonical(name):
        return False
    try:
        if wheel.version != Version(version):
            return False
    except ValueError:  # InvalidVersion, or more digits than int() takes
        return False
    if python is None:
        return True
    major, minor = python.split(".")[:2]
    interpreters = {t.split("-")[0] for t in wheel.tags}
    return bool(interpreters & {f"cp{major}{minor}", f"py{major}", f"py{major}{minor}"})


