"""Package facts and the one package-index client.

Everything rocmkit knows about *package names* (PEP 503 canonical names, the
four Triton distributions torch has pinned over the years, the companions) and
everything it does to *read a package index* (PEP 691 JSON or PEP 503 HTML
project pages, PEP 658/714 ``.metadata`` files, a wheel's ``METADATA`` read
from the zip's central directory with HTTP range requests) lives here, so
install, resolve and ``matrix refresh`` cannot disagree about either.

Every read is bounded: a deadline for the whole response (a server that
trickles one byte a second is cut off, not waited for), a size cap (a 50 MB
"index page" is refused), and a check that the answer is a simple-index page
at all (an HTML error page is not mistaken for an empty project). Each failure
is a :class:`~rocmkit.errors.NetworkError` (exit 9) naming the URL.
"""

from __future__ import annotations

import re
import struct
import time
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote, urljoin, urlsplit

from packaging.version import Version

from rocmkit.errors import NetworkError

if TYPE_CHECKING:
    from html.parser import HTMLParser

    from packaging.utils import NormalizedName

# The HTTP, HTML, e-mail and JSON parts of the standard library are imported where they are
# used: resolve and the matrix loader import this module for its names and pins, and should not
# pay for an HTTP client they do not use.

# -- names ---------------------------------------------------------------------

# The distributions torch has pinned for Triton, newest naming first: ROCm wheels
# moved from pytorch-triton-rocm to triton-rocm with 2.10; CUDA wheels pin triton
# (pytorch-triton on nightly).
TRITON_DISTRIBUTIONS: tuple[NormalizedName, ...] = cast(
    "tuple[NormalizedName, ...]", ("triton-rocm", "pytorch-triton-rocm", "pytorch-triton", "triton")
)
COMPANIONS: tuple[NormalizedName, ...] = cast("tuple[NormalizedName, ...]", ("torchvision", "torchaudio"))

# packaging.utils.canonicalize_name's rule, without importing packaging.utils: it imports
# packaging.tags (subprocess, sysconfig, platform), which resolve never needs.
_SEPARATORS = re.compile(r"[-_.]+")


def canonical(name: str) -> NormalizedName:
    """PEP 503 normalised project name ("Pytorch_Triton.ROCm" -> "pytorch-triton-rocm")."""
    return cast("NormalizedName", _SEPARATORS.sub("-", name).lower())


def wheel_escape(name: str) -> str:
    """A name as a wheel's file and ``.data``/``.dist-info`` folder names spell it: runs of
    ``-_.`` become one ``_``, case kept ("pytorch-triton-rocm" -> "pytorch_triton_rocm";
    https://packaging.python.org/en/latest/specifications/binary-distribution-format/#escaping-and-unicode)."""
    return re.sub(r"[-_.]+", "_", name)


def is_triton(name: str) -> bool:
    return canonical(name) in TRITON_DISTRIBUTIONS


# -- HTTP ----------------------------------------------------------------------

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
ACCEPT = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
USER_AGENT = "rocmkit"
MAX_PAGE_BYTES = 32 * 1024 * 1024  # download.pytorch.org's cross-variant torch page is ~3 MB
MAX_METADATA_BYTES = 4 * 1024 * 1024
TAIL_BYTES = 64 * 1024  # end of central directory + the directory of a wheel with ~500 files
_CHUNK = 64 * 1024


def _basic(user: str, password: str) -> str:
    import base64

    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _netrc_auth(host: str) -> str | None:
    """``~/.netrc`` (or ``$NETRC``) credentials for ``host``, as pip and uv would use them."""
    import netrc
    import os

    path = os.environ.get("NETRC") or None
    try:
        found = netrc.netrc(path).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None
    if not found or found[2] is None:
        return None
    return _basic(found[0], found[2])


def _request(url: str, headers: Mapping[str, str]) -> Any:
    """A urllib Request for ``url`` with its credentials (from the URL, this process's
    memory of them, or ~/.netrc) in an Authorization header that no redirect carries on,
    and none in the URL itself (urllib cannot parse ``user:token@host``)."""
    from urllib.request import Request

    from rocmkit.redact import conceal, origin_credentials, reveal

    parts = urlsplit(reveal(conceal(url)))
    netloc = parts.netloc
    userinfo = ""
    if "@" in netloc:
        userinfo, _, netloc = netloc.rpartition("@")
    if ":" not in userinfo:
        # None in the URL (a file the index linked) or a user name only: what this process
        # was given for the host, else ~/.netrc.
        userinfo = origin_credentials(parts.scheme, netloc) or ""
    auth: str | None = None
    if ":" in userinfo:
        user, _, password = userinfo.partition(":")
        auth = _basic(unquote(user), unquote(password))
    elif parts.hostname:
        auth = _netrc_auth(parts.hostname)
    req = Request(parts._replace(netloc=netloc).geturl(), headers=dict(headers))
    if auth is not None:
        req.add_unredirected_header("Authorization", auth)
    return req


def _shown(url: str) -> str:
    from rocmkit.redact import redact_text

    return redact_text(url)


@dataclass(frozen=True, kw_only=True)
class Response:
    url: str
    status: int
    body: bytes
    content_type: str = ""
    etag: str | None = None
    content_range: str | None = None


def http_get(
    url: str,
    *,
    timeout: float,
    accept: str = "*/*",
    max_bytes: int = MAX_PAGE_BYTES,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """GET ``url`` within ``timeout`` seconds *in total*, reading at most ``max_bytes``.

    HTTP 304/404 and other error statuses come back as a Response (an answer is not
    silence); no answer, a trickle past the deadline or a too-large body raise NetworkError.
    """
    from urllib.error import HTTPError, URLError
    from urllib.request import urlopen

    deadline = time.monotonic() + timeout
    shown = _shown(url)
    try:
        req = _request(url, {"Accept": accept, "User-Agent": USER_AGENT, **(headers or {})})
        resp = urlopen(req, timeout=timeout)
    except HTTPError as exc:
        return Response(url=url, status=exc.code, body=b"", content_type=exc.headers.get("Content-Type", ""))
    except (URLError, TimeoutError, OSError, ValueError) as exc:
        reason = _shown(str(getattr(exc, "reason", exc)))
        raise NetworkError(
            f"{shown} does not answer: {reason}", "check the URL and the network, or raise --timeout"
        ) from None
    with resp:
        length = resp.headers.get("Content-Length")
        if length and (length.isascii() and length.isdigit()) and int(length) > max_bytes:
            raise NetworkError(
                f"{shown} answered {int(length)} bytes, more than the {max_bytes} a simple page may be",
                "check that the URL is a package index",
            )
        chunks: list[bytes] = []
        size = 0
        try:
            while True:
                if time.monotonic() > deadline:
                    raise NetworkError(
                        f"{shown} did not finish answering within {timeout:g} s",
                        "check the network or the mirror, or raise --timeout",
                    )
                chunk = resp.read1(_CHUNK) if hasattr(resp, "read1") else resp.read(_CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if size > max_bytes:
                    raise NetworkError(
                        f"{shown} sent more than {max_bytes} bytes", "check that the URL is a package index"
                    )
                chunks.append(chunk)
        except (TimeoutError, OSError) as exc:
            raise NetworkError(
                f"{shown} stopped answering: {exc}", "check the network or the mirror, or raise --timeout"
            ) from None
        return Response(
            url=resp.geturl() or url,
            status=resp.status,
            body=b"".join(chunks),
            content_type=resp.headers.get("Content-Type", ""),
            etag=resp.headers.get("ETag"),
            content_range=resp.headers.get("Content-Range"),
        )


@dataclass(frozen=True, kw_only=True)
class Reach:
    """Whether a URL answers, from its status and first byte only (index pages for torch run
    to megabytes; a reachability probe must not download them)."""

    url: str
    status: int | None  # None: no HTTP answer at all
    reason: str  # "answers", "HTTP 404", "connection refused", "no answer within 5 s", ...


def reach(url: str, *, timeout: float, accept: str = "text/html") -> Reach:
    """GET ``url`` and read one byte: does anything answer within ``timeout``?"""
    from urllib.error import HTTPError, URLError
    from urllib.request import urlopen

    try:
        req = _request(url, {"Accept": accept, "User-Agent": USER_AGENT})
        with urlopen(req, timeout=timeout) as resp:
            resp.read(1)
            return Reach(url=url, status=resp.status, reason="answers")
    except HTTPError as exc:
        return Reach(url=url, status=exc.code, reason=f"HTTP {exc.code}")
    except (URLError, OSError, ValueError) as exc:
        return Reach(url=url, status=None, reason=_no_answer(exc, timeout))


def _no_answer(exc: BaseException, timeout: float) -> str:
    import socket
    from urllib.error import URLError

    inner = exc.reason if isinstance(exc, URLError) else exc
    if isinstance(inner, (TimeoutError, socket.timeout)):
        return f"no answer within {timeout:g} s"
    if isinstance(inner, ConnectionRefusedError):
        return "connection refused"
    if isinstance(inner, socket.gaierror):
        return "host name does not resolve"
    return str(inner) or type(inner).__name__


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
    from rocmkit.redact import conceal

    # Masked from here on: page and file URLs end up in caches and messages.
    page = conceal(index_url).rstrip("/") + f"/{canonical(project)}/"
    resp = http_get(page, timeout=timeout, accept=ACCEPT)
    if resp.status == 404:
        return None
    if resp.status in (401, 403):
        raise NetworkError(
            f"{_shown(page)} refused rocmkit (HTTP {resp.status}): missing or wrong credentials",
            "give the user and token in the URL's user:password part, or in ~/.netrc",
        )
    if resp.status != 200:
        raise NetworkError(f"{_shown(page)} answered HTTP {resp.status}", "check the index URL")
    files = parse_project_page(page, resp.body, resp.content_type)
    return ProjectPage(url=page, files=tuple(files), etag=resp.etag)


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


_EOCD = b"PK\x05\x06"
_EOCD64_LOC = b"PK\x06\x07"
_CDIR = b"PK\x01\x02"
_LOCAL = b"PK\x03\x04"


def _range_get(url: str, spec: str, *, timeout: float, max_bytes: int) -> bytes | None:
    from urllib.error import HTTPError, URLError
    from urllib.request import urlopen

    deadline = time.monotonic() + timeout
    try:
        req = _request(url, {"Range": f"bytes={spec}", "User-Agent": USER_AGENT})
        resp = urlopen(req, timeout=timeout)
    except HTTPError as exc:
        if exc.code == 416:
            return None
        raise NetworkError(f"{_shown(url)} answered HTTP {exc.code}", "check the index") from None
    except (URLError, TimeoutError, OSError, ValueError) as exc:
        raise NetworkError(
            f"{_shown(url)} does not answer: {_shown(str(getattr(exc, 'reason', exc)))}",
            "check the network, or raise --timeout",
        ) from None
    with resp:
        if resp.status != 206:
            # The server ignored Range and started sending the whole (multi-GB) wheel: hang up.
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            if time.monotonic() > deadline:
                raise NetworkError(f"{_shown(url)} did not finish answering within {timeout:g} s", "raise --timeout")
            chunk = resp.read(_CHUNK)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                return None
            chunks.append(chunk)
    return b"".join(chunks)


def metadata_by_range(url: str, filename: str, *, timeout: float) -> str | None:
    """``<dist>.dist-info/METADATA`` of the wheel at ``url``, read from the zip's end.

    A zip ends with its central directory and the end-of-central-directory record;
    one range request for the last 64 KiB holds both for a wheel like torch's, a
    second one reads the METADATA member itself. None when ranges are not served.
    """
    tail = _range_get(url, f"-{TAIL_BYTES}", timeout=timeout, max_bytes=TAIL_BYTES)
    if tail is None:
        return None
    return _metadata_from_tail(url, filename, tail, timeout=timeout)


def _metadata_from_tail(url: str, filename: str, tail: bytes, *, timeout: float) -> str | None:
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) < at + 22:
        raise NetworkError(f"{_shown(url)} is not a zip file (no end of central directory)", "check the index")
    (_, _, _, _, entries, cd_size, cd_offset, _) = struct.unpack("<4sHHHHIIH", tail[at : at + 22])
    if cd_offset == 0xFFFFFFFF or entries == 0xFFFF:
        loc = tail.rfind(_EOCD64_LOC, 0, at)
        if loc < 0:
            raise NetworkError(f"{_shown(url)}: zip64 wheel without a zip64 locator", "check the index")
        (eocd64_off,) = struct.unpack("<Q", tail[loc + 8 : loc + 16])
        eocd64 = _range_get(url, f"{eocd64_off}-{eocd64_off + 55}", timeout=timeout, max_bytes=56)
        if eocd64 is None:
            return None
        cd_size, cd_offset = struct.unpack("<QQ", eocd64[40:56])
    # The central directory: in the tail already, or one more range request.
    total_end = at + (len(tail) - at)  # position of tail end relative to tail
    file_size = _file_size_from_tail(tail, at, cd_offset, cd_size)
    start_in_tail = cd_offset - (file_size - len(tail)) if file_size is not None else -1
    if start_in_tail >= 0 and start_in_tail + cd_size <= total_end:
        cdir = tail[start_in_tail : start_in_tail + cd_size]
    else:
        if cd_size > MAX_METADATA_BYTES:
            return None
        got = _range_get(url, f"{cd_offset}-{cd_offset + cd_size - 1}", timeout=timeout, max_bytes=cd_size)
        if got is None:
            return None
        cdir = got
    dist = filename.split("-", 2)
    want = f"{dist[0]}-{dist[1]}.dist-info/METADATA" if len(dist) >= 2 else ""
    pos = 0
    while pos + 46 <= len(cdir) and cdir[pos : pos + 4] == _CDIR:
        (method, csize, usize, nlen, xlen, clen, local_off) = _cdir_fields(cdir, pos)
        name = cdir[pos + 46 : pos + 46 + nlen].decode("utf-8", "replace")
        extra = cdir[pos + 46 + nlen : pos + 46 + nlen + xlen]
        csize, usize, local_off = _zip64_extra(extra, csize, usize, local_off)
        if name == want or (name.endswith(".dist-info/METADATA") and name.count("/") == 1 and not want):
            return _read_member(url, local_off, csize, usize, method, timeout=timeout)
        pos += 46 + nlen + xlen + clen
    return None


def _file_size_from_tail(tail: bytes, at: int, cd_offset: int, cd_size: int) -> int | None:
    """The wheel's size: the central directory ends where the EOCD (or zip64 records) begin."""
    loc = tail.rfind(_EOCD64_LOC, 0, at)
    if loc >= 0:
        # zip64 records sit between the directory and the EOCD: find the record itself.
        rec = tail.rfind(b"PK\x06\x06", 0, loc)
        if rec >= 0:
            return cd_offset + cd_size + (len(tail) - rec)
    return cd_offset + cd_size + (len(tail) - at)


def _cdir_fields(cdir: bytes, pos: int) -> tuple[int, int, int, int, int, int, int]:
    method = struct.unpack("<H", cdir[pos + 10 : pos + 12])[0]
    csize, usize = struct.unpack("<II", cdir[pos + 20 : pos + 28])
    nlen, xlen, clen = struct.unpack("<HHH", cdir[pos + 28 : pos + 34])
    (local_off,) = struct.unpack("<I", cdir[pos + 42 : pos + 46])
    return method, csize, usize, nlen, xlen, clen, local_off


def _zip64_extra(extra: bytes, csize: int, usize: int, off: int) -> tuple[int, int, int]:
    pos = 0
    while pos + 4 <= len(extra):
        tag, size = struct.unpack("<HH", extra[pos : pos + 4])
        if tag == 0x0001:
            data = extra[pos + 4 : pos + 4 + size]
            vals = [struct.unpack("<Q", data[i : i + 8])[0] for i in range(0, len(data) - 7, 8)]
            it = iter(vals)
            if usize == 0xFFFFFFFF:
                usize = next(it, usize)
            if csize == 0xFFFFFFFF:
                csize = next(it, csize)
            if off == 0xFFFFFFFF:
                off = next(it, off)
        pos += 4 + size
    return csize, usize, off


def _read_member(url: str, offset: int, csize: int, usize: int, method: int, *, timeout: float) -> str | None:
    if usize > MAX_METADATA_BYTES or csize > MAX_METADATA_BYTES:
        return None
    # The local header is 30 bytes plus a name and an extra field of unknown length: read a margin.
    want = 30 + 1024 + csize
    got = _range_get(url, f"{offset}-{offset + want - 1}", timeout=timeout, max_bytes=want)
    if got is None or got[:4] != _LOCAL:
        return None
    nlen, xlen = struct.unpack("<HH", got[26:30])
    data = got[30 + nlen + xlen : 30 + nlen + xlen + csize]
    if method == 0:
        raw = data
    elif method == 8:
        try:
            raw = zlib.decompress(data, -15)
        except zlib.error:
            return None
    else:
        return None
    return raw.decode("utf-8", "replace")


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


# -- requirements --------------------------------------------------------------


_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
# name [extras] == version, then whatever follows (markers, options, a line continuation).
# A regex rather than packaging.requirements, which costs ~40 ms to import and rejects
# the option and continuation tails that pip and uv print after a pin.
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*==\s*([^\s,;\\]+)")


def requirement_name(line: str) -> NormalizedName | None:
    """The canonical project name a requirement line starts with ("Torch>=2" -> "torch")."""
    m = _NAME.match(line)
    return canonical(m.group(1)) if m else None


@dataclass(frozen=True, kw_only=True)
class Pin:
    """One ``name==version`` pin, as :func:`parse_pin` read it."""

    name: str  # as written: "Pytorch_Triton_ROCm"
    version: str  # "3.1.0", "2.5.1+rocm6.2"
    plain: bool  # the text was exactly ``name==version``: no extras, spaces, markers or options

    @property
    def project(self) -> NormalizedName:
        return canonical(self.name)

    def __str__(self) -> str:
        return f"{self.project}=={self.version}"


def parse_pin(text: str) -> Pin | None:
    """The one ``name==version`` reader: a requirement ("torch[opt] == 2.5.1 ; python_version>'3'"),
    a lock or requirements-file line ("torch==2.5.1 \\"), or a data value. None: not a pin."""
    m = _PIN.match(text)
    if m is None:
        return None
    name, _extras, version = m.groups()
    return Pin(name=name, version=version, plain=text == f"{name}=={version}")


def triton_pin(requires: Iterable[str]) -> str | None:
    """The Triton requirement torch pins ("triton-rocm==3.6.0"), markers dropped."""
    for line in requires:
        name = requirement_name(line)
        if name is None or name not in TRITON_DISTRIBUTIONS:
            continue
        # Old Requires-Dist lines wrap the specifier in parentheses: "triton (==2.1.0)".
        pin = parse_pin(line.split(";", 1)[0].replace("(", "").replace(")", ""))
        return str(pin) if pin else str(name)
    return None


def torch_requirement(requires: Iterable[str]) -> str | None:
    """A companion's requirement on torch ("torch==2.14.0", "torch>=2.14.0"), markers dropped."""
    for line in requires:
        if requirement_name(line) == "torch":
            spec = line.split(";", 1)[0].strip()
            return re.sub(r"^torch\s*\(?\s*", "torch", spec).rstrip(")").replace(" ", "")
    return None
