"""Credentials in URLs and text: how they are shown, kept and handed on.

Snapshots and doctor reports are meant to be attached to public bug reports,
and install messages end up in CI logs. A mirror URL often carries
``user:token@`` (the standard way to reach an authenticated mirror) and
environment variables carry tokens. This is the one module that knows where a
secret sits in a URL:

- :func:`redact_text` masks it wherever text is shown or written: the userinfo
  of any URL (``https://user:token@host`` -> ``https://user:***@host``, a bare
  ``https://token@host`` -> ``https://***@host``), query parameters named like a
  secret (``?token=...``); :func:`redact_env` also masks the value of any variable
  whose name says it is a secret (``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``,
  ``*_KEY``, ``*CREDENTIAL*``, ``*AUTH*``).
- :func:`conceal` is applied where a URL with credentials comes in (``--index-base``,
  ``ROCMKIT_INDEX_BASE``, a plan's or lock's index URLs): what rocmkit keeps in its
  plans, caches and reports is the masked URL, and the secret stays in this
  process's memory only.
- :func:`reveal` gives the real URL back at the two places that need it: rocmkit's
  own HTTP client (:mod:`rocmkit.pkgindex.http`, which sends it as an Authorization
  header) and the environment of the pip/uv run (``PIP_INDEX_URL``, ``UV_INDEX``:
  never their argument lists, which any user can read in ``ps``). A masked URL
  whose secret this process never saw loses the mask, so pip and uv look the
  password up in ``~/.netrc`` or a keyring, as they do for a URL without one.
- :func:`check_url` refuses what is not a single, well-formed http(s)/file URL
  (spaces, line breaks, no host), before it reaches a command line or a file.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from urllib.parse import SplitResult, urlsplit, urlunsplit

from rocmkit.errors import UsageError

MASK = "***"

# A URL in free text: a scheme, "://", then up to whitespace or a quote.
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s<>\"'`]*")
# Outside URLs: ``token=...`` after ``?`` or ``&`` (a query quoted on its own).
_SECRET_QUERY = re.compile(
    r"(?P<key>[?&](?:access_token|token|auth|key|password|passwd|secret|signature|sig)=)[^&#\s]+",
    re.IGNORECASE,
)
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|_KEY$|^KEY$", re.IGNORECASE)
# Whitespace, control characters and DEL: never part of a URL (RFC 3986 has them percent-encoded).
_NOT_IN_URL = re.compile(r"[\x00-\x20\x7f]")
_PORT = re.compile(r"[0-9]{1,5}")
_QUOTED_URL = re.compile(r"(?P<q>['\"])(?P<url>[A-Za-z][A-Za-z0-9+.-]*://[^/\s@:'\"]+:[^@\r\n'\"]*@[^\s'\"]*)(?P=q)")
# A value that is one URL: no whitespace, or a space only inside ``user:pass word@``.
_ONE_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://(?:\S*|[^/\s@:]+:[^@\r\n]*@\S*)\Z")


def mask_userinfo(userinfo: str) -> str:
    """``user:token`` -> ``user:***``; a bare ``token`` (GitHub-style) -> ``***``."""
    user, colon, _ = userinfo.partition(":")
    return f"{user}:{MASK}" if colon and user else MASK


def _mask_query(rest: str) -> str:
    """``path?query#fragment`` with every query value masked (signed-URL tokens have any
    name: ``X-Amz-Signature``, ``sig``, ``se``...); the path and fragment kept."""
    path, q, tail = rest.partition("?")
    if not q:
        return rest
    query, hash_, fragment = tail.partition("#")
    fields = []
    for field in query.split("&"):
        key, eq, value = field.partition("=")
        fields.append(f"{key}={MASK}" if eq and value else (field if eq or not field else MASK))
    return f"{path}?{'&'.join(fields)}{hash_}{fragment}"


def _split_authority(rest: str, *, whole: bool) -> tuple[str, str] | None:
    """(userinfo, what follows it) of the URL text after ``scheme://``; None when it has none.
    A host never holds ``@``, so the userinfo ends at the last ``@`` of the authority; a
    password may hold an unencoded ``/``, ``?``, ``#`` (or, in a URL quoted whole, a space),
    which ends the authority early for a parser: then the last ``@`` before a host counts.
    ``whole``: ``rest`` is known to be one URL (else a path holding ``@``, as in
    ``git+https://host/repo@v1``, is not taken for a password without a ``user:`` before it)."""
    end = len(rest)
    for stop in "/?#":
        i = rest.find(stop)
        if i >= 0:
            end = min(end, i)
    authority = rest[:end]
    if "@" in authority:
        userinfo, _, host = authority.rpartition("@")
        return userinfo, host + rest[end:]
    at = rest.rfind("@")
    if at < 0:
        return None
    user, colon, secret = authority.partition(":")
    # host:8080/path@x is a port and a path, not a password.
    if colon and _PORT.fullmatch(secret):
        return None
    if not whole and not (colon and user):
        return None
    after = rest[at + 1 :]
    if not after or after[0] in "/?#":
        return None
    return rest[:at], after


def _mask_url(url: str, *, whole: bool) -> str:
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    found = _split_authority(rest, whole=whole)
    if found is not None:
        userinfo, rest = found
        head = f"{mask_userinfo(userinfo)}@"
    else:
        head = ""
    return f"{scheme}://{head}{_mask_query(rest)}"


def _known_secrets() -> list[str]:
    """The passwords :func:`conceal` kept, as written and percent-decoded: masked in any text."""
    from urllib.parse import unquote

    with _LOCK:
        kept = list(_SECRETS.values())
    out: set[str] = set()
    for userinfo in kept:
        user, colon, secret = userinfo.partition(":")
        given = secret if colon else user
        # Six characters at least: a shorter one would mask ordinary words too.
        out.update(x for x in (given, unquote(given)) if len(x) >= 6)
    return sorted(out, key=len, reverse=True)


def redact_text(text: str) -> str:
    """``text`` with URL credentials masked: the userinfo of any URL (a password holding
    ``/``, ``#``, ``?``, or quoted whole with a space, included), every query value, and any
    password this process was given (:func:`conceal`) wherever it appears."""
    for secret in _known_secrets():
        text = text.replace(secret, MASK)
    if "://" not in text and "=" not in text:
        return text
    stripped = text.strip()
    if _ONE_URL.match(stripped):
        # One URL on its own (an option's value, a source): masked whole, spaces included.
        return text.replace(stripped, _mask_url(stripped, whole=True))
    # A URL quoted whole (an option's value in an error line) may hold a space in its password.
    text = _QUOTED_URL.sub(lambda m: m.group("q") + _mask_url(m.group("url"), whole=True) + m.group("q"), text)
    text = _URL.sub(lambda m: _mask_url(m.group(0), whole=False), text)
    return _SECRET_QUERY.sub(lambda m: f"{m.group('key')}{MASK}", text)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` fit for a public report: secret-named values masked, URLs stripped."""
    return {k: (MASK if is_secret_name(k) and v else redact_text(v)) for k, v in env.items()}


# -- credentials kept in memory ---------------------------------------------------------

# (scheme, host[:port], masked userinfo) -> the real userinfo, as given (percent-encoded).
_SECRETS: dict[tuple[str, str, str], str] = {}
_LOCK = threading.Lock()


def _split(url: str) -> tuple[SplitResult, str, str] | None:
    """The URL's parts, its userinfo and its host[:port]; None when it has no userinfo."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if "@" not in parts.netloc:
        return None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    return parts, userinfo, hostport


def conceal(url: str) -> str:
    """``url`` with its credentials masked; the real ones are kept for :func:`reveal`."""
    found = _split(url)
    if found is None:
        return url
    parts, userinfo, hostport = found
    masked = mask_userinfo(userinfo)
    if userinfo != masked:
        with _LOCK:
            _SECRETS[(parts.scheme.lower(), hostport.lower(), masked)] = userinfo
    return urlunsplit(parts._replace(netloc=f"{masked}@{hostport}"))


def reveal(url: str) -> str:
    """The URL to send: masked credentials replaced by the ones :func:`conceal` kept, or
    dropped when this process never saw them (pip, uv and rocmkit then use ``~/.netrc``)."""
    found = _split(url)
    if found is None:
        return url
    parts, userinfo, hostport = found
    if MASK not in userinfo:
        return url
    with _LOCK:
        real = _SECRETS.get((parts.scheme.lower(), hostport.lower(), userinfo))
    if real is None:
        user = userinfo.partition(":")[0]
        real = "" if user in ("", MASK) else user
    netloc = f"{real}@{hostport}" if real else hostport
    return urlunsplit(parts._replace(netloc=netloc))


def origin_credentials(scheme: str, hostport: str) -> str | None:
    """The real userinfo kept for this origin, if any: an index's credentials serve the files
    it links on the same host (pip and uv do the same)."""
    with _LOCK:
        for (s, h, _), real in reversed(_SECRETS.items()):
            if s == scheme.lower() and h == hostport.lower():
                return real
    return None


def forget_credentials() -> None:
    """Drop every credential kept (a long-lived process between unrelated tasks; tests)."""
    with _LOCK:
        _SECRETS.clear()


def without_credentials(url: str) -> str:
    """``url`` with no userinfo at all (a source line in rocmkit's data names the host only)."""
    found = _split(url)
    if found is None:
        return url
    parts, _, hostport = found
    return urlunsplit(parts._replace(netloc=hostport))


def url_under(base: str, *segments: str, slash: bool = False) -> str:
    """``base`` with ``segments`` added to its path, never after its query or fragment
    (``https://m/whl?t=1`` + ``rocm6.2`` -> ``https://m/whl/rocm6.2?t=1``); ``slash``: the path
    ends in ``/`` (a PEP 503 project page)."""
    added = [s.strip("/") for s in segments if s.strip("/")]
    try:
        parts = urlsplit(base)
    except ValueError:
        parts = None
    if parts is None or not parts.scheme:
        path = "/".join([base.rstrip("/"), *added])
        return path + "/" if slash else path
    path = "/".join([parts.path.rstrip("/"), *added])
    return urlunsplit(parts._replace(path=path + "/" if slash else path))


def has_credentials(url: str) -> bool:
    """The URL carries a user name or password (masked or not)."""
    return _split(url) is not None


def check_url(what: str, url: str, *, schemes: tuple[str, ...] = ("http", "https", "file")) -> str:
    """``url`` when it is one well-formed URL with one of ``schemes`` (and a host, unless
    ``file``); otherwise a :class:`UsageError` naming ``what`` (the option) and the fix.
    The message shows the URL redacted."""
    shown = _mask_url(url, whole=True) if "://" in url else redact_text(url)
    example = "https://mirror.example/whl"
    if _NOT_IN_URL.search(url):
        raise UsageError(
            f"{what} {shown!r} holds a space, a line break or a control character",
            f"give one URL, like {example} (percent-encode such characters, e.g. %20)",
        )
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # raises ValueError on a port that is not a number in range
    except ValueError as exc:
        raise UsageError(f"{what} {shown!r} is not a URL ({exc})", f"give one like {example}") from None
    if parts.scheme.lower() not in schemes:
        raise UsageError(
            f"{what} {shown!r} is not a URL", f"give one starting with {' or '.join(s + '://' for s in schemes)}"
        )
    if parts.scheme.lower() != "file" and not parts.hostname:
        raise UsageError(f"{what} {shown!r} names no host", f"give one like {example}")
    return url
