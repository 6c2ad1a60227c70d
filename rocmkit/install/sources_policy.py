"""Which index URLs an install may use: https, or plain http / file only when asked.

A plan or lock names its indexes, and a plan may come from anyone. Over plain
http anyone on the path can swap the wheels (a torch wheel runs code at
import); a ``file://`` index reads whatever that folder holds. Both are
refused unless the user asks for them (``--allow insecure-index`` or
``ROCMKIT_ALLOW_INSECURE_INDEX=1``), and then each use is warned about. An
http index on the loopback interface (a local mirror, the tests' index) never
crosses a network and is allowed.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable, Iterable

from rocmkit.errors import UsageError, rerun

ALLOW_ENV = "ROCMKIT_ALLOW_INSECURE_INDEX"
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def insecure_allowed() -> bool:
    return os.environ.get(ALLOW_ENV, "") not in ("", "0")


def is_url(text: str) -> bool:
    return "://" in text


def check_source_urls(urls: Iterable[str], warn: Callable[[str], None], *, allow: bool | None = None) -> None:
    """Refuse (or, when allowed, warn about) every index URL that is neither https nor loopback http."""
    from rocmkit.util.redact import redact_text

    allowed = insecure_allowed() if allow is None else allow
    for url in urls:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "https":
            continue
        if parts.scheme == "http" and (parts.hostname or "") in _LOOPBACK:
            continue
        if parts.scheme not in ("http", "file"):
            raise UsageError(f"index {redact_text(url)} is not an https URL", "use an https index")
        if not allowed:
            raise UsageError(
                f"index {redact_text(url)} is not https: its wheels could be swapped on the way",
                ("use an https mirror", rerun("--allow", "insecure-index") + f"   # or {ALLOW_ENV}=1, if you trust the path"),
            )
        warn(f"WARNING: using the insecure index {redact_text(url)} (--allow insecure-index)")
