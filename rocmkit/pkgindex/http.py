"""HTTP GETs with a deadline and a size cap, and reachability probes (the package-index client's
transport)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rocmkit.errors import NetworkError, rerun

if TYPE_CHECKING:
    from http.client import HTTPResponse
    from urllib.request import Request


# -- redirects -----------------------------------------------------------------

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def plain_http(url: str) -> bool:
    """A plain-http URL off the loopback interface (anyone on the path can change what it says)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme == "http" and (parts.hostname or "") not in LOOPBACK


# None: redirects are followed as urllib (and pip) follow them. Inside same_host_redirects():
# only to the host asked, or to a host the user named. Process-wide, so that the threads a
# refresh reads with obey it too.
_ALLOWED_HOSTS: frozenset[str] | None = None


@contextmanager
def same_host_redirects(allowed: Iterable[str] = ()) -> Iterator[None]:
    """While in effect, a redirect to another host than the one asked (or from https to http)
    is a :class:`NetworkError` unless its host is in ``allowed``: data read for rocmkit's own
    matrices must come from where the user pointed it, or from a host the user named."""
    global _ALLOWED_HOSTS
    saved = _ALLOWED_HOSTS
    _ALLOWED_HOSTS = frozenset(h.strip().lower() for h in allowed if h.strip())
    try:
        yield
    finally:
        _ALLOWED_HOSTS = saved


def open_url(req: Request, *, timeout: float) -> HTTPResponse:
    """``urlopen(req)`` under the redirect rule in effect (:func:`same_host_redirects`); an
    index's credentials follow a redirect on the same scheme, host and port only."""
    from urllib.request import build_opener

    opener = build_opener(_redirect_guard(_ALLOWED_HOSTS))
    resp: HTTPResponse = opener.open(req, timeout=timeout)
    return resp


def _redirect_guard(allowed: frozenset[str] | None) -> Any:
    from urllib.parse import urljoin, urlsplit
    from urllib.request import HTTPRedirectHandler

    from rocmkit.util.redact import redact_text

    class Guard(HTTPRedirectHandler):
        def redirect_request(
            self, req: Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
        ) -> Request | None:
            old, new = urlsplit(req.full_url), urlsplit(urljoin(req.full_url, newurl))
            new_req = self._checked(req, fp, code, msg, headers, newurl, old, new)
            auth = req.unredirected_hdrs.get("Authorization")
            same_origin = (old.scheme, old.netloc.lower()) == (new.scheme, new.netloc.lower())
            if new_req is not None and auth is not None and same_origin:
                new_req.add_unredirected_header("Authorization", auth)
            return new_req

        def _checked(
            self, req: Request, fp: Any, code: int, msg: str, headers: Any, newurl: str, old: Any, new: Any
        ) -> Request | None:
            if allowed is None:
                return super().redirect_request(req, fp, code, msg, headers, newurl)
            host = (new.hostname or "").lower()
            refused = host != (old.hostname or "").lower() and host not in allowed
            if refused or (old.scheme == "https" and new.scheme != "https"):
                # urllib closes the redirect's response only when a redirect is followed.
                fp.close()
            if refused:
                raise NetworkError(
                    f"{redact_text(req.full_url)} redirected (HTTP {code}) to another host, {host}: "
                    "not followed unless asked",
                    (
                        f"{rerun('--allow', f'redirect={host}')}   # if you trust that host",
                        "point rocmkit at that host directly (--index-base URL)",
                    ),
                )
            if old.scheme == "https" and new.scheme != "https":
                raise NetworkError(
                    f"{redact_text(req.full_url)} redirected (HTTP {code}) to plain {new.scheme}: "
                    f"{redact_text(newurl)}",
                    "point rocmkit at an https index that does not downgrade",
                )
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    return Guard()


# -- credentials ---------------------------------------------------------------


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


def request(url: str, headers: Mapping[str, str]) -> Request:
    """A urllib Request for ``url`` with its credentials (from the URL, this process's
    memory of them, or ~/.netrc) in an Authorization header that no redirect to another
    origin carries on, and none in the URL itself (urllib cannot parse ``user:token@host``)."""
    from urllib.parse import unquote, urlsplit
    from urllib.request import Request

    from rocmkit.util.redact import conceal, origin_credentials, reveal

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


def shown(url: str) -> str:
    """``url`` as messages show it: credentials masked."""
    from rocmkit.util.redact import redact_text

    return redact_text(url)


# -- HTTP ----------------------------------------------------------------------

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
ACCEPT = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
USER_AGENT = "rocmkit"
MAX_PAGE_BYTES = 32 * 1024 * 1024  # download.pytorch.org's cross-variant torch page is ~3 MB
MAX_METADATA_BYTES = 4 * 1024 * 1024
TAIL_BYTES = 64 * 1024  # end of central directory + the directory of a wheel with ~500 files
CHUNK_BYTES = 64 * 1024


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

    deadline = time.monotonic() + timeout
    where = shown(url)
    try:
        req = request(url, {"Accept": accept, "User-Agent": USER_AGENT, **(headers or {})})
        resp = open_url(req, timeout=timeout)
    except HTTPError as exc:
        exc.close()  # its response's socket: not left to the garbage collector
        return Response(url=url, status=exc.code, body=b"", content_type=exc.headers.get("Content-Type", ""))
    except (URLError, TimeoutError, OSError, ValueError) as exc:
        reason = shown(str(getattr(exc, "reason", exc)))
        raise NetworkError(
            f"{where} does not answer: {reason}", "check the URL and the network, or raise --timeout"
        ) from None
    with resp:
        length = resp.headers.get("Content-Length")
        if length and (length.isascii() and length.isdigit()) and int(length) > max_bytes:
            raise NetworkError(
                f"{where} answered {int(length)} bytes, more than the {max_bytes} a simple page may be",
                "check that the URL is a package index",
            )
        chunks: list[bytes] = []
        size = 0
        try:
            while True:
                if time.monotonic() > deadline:
                    raise NetworkError(
                        f"{where} did not finish answering within {timeout:g} s",
                        "check the network or the mirror, or raise --timeout",
                    )
                chunk = resp.read1(CHUNK_BYTES) if hasattr(resp, "read1") else resp.read(CHUNK_BYTES)
                if not chunk:
                    break
                size += len(chunk)
                if size > max_bytes:
                    raise NetworkError(
                        f"{where} sent more than {max_bytes} bytes", "check that the URL is a package index"
                    )
                chunks.append(chunk)
        except (TimeoutError, OSError) as exc:
            raise NetworkError(
                f"{where} stopped answering: {exc}", "check the network or the mirror, or raise --timeout"
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

    try:
        req = request(url, {"Accept": accept, "User-Agent": USER_AGENT})
        with open_url(req, timeout=timeout) as resp:
            resp.read(1)
            return Reach(url=url, status=resp.status, reason="answers")
    except HTTPError as exc:
        exc.close()
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


