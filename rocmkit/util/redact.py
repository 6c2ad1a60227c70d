"""Take credentials out of text before it lands in a snapshot, a report or a log.

Snapshots and doctor reports are meant to be attached to public bug reports,
and install messages end up in CI logs. A mirror URL often carries
``user:token@`` and environment variables carry tokens. What is redacted:

- the userinfo of any URL (``https://user:token@host`` -> ``https://***@host``);
- query parameters named like a secret (``?token=...``);
- the value of any variable whose name says it is a secret (``*TOKEN*``,
  ``*SECRET*``, ``*PASSWORD*``, ``*_KEY``, ``*CREDENTIAL*``, ``*AUTH*``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "***"

# scheme://userinfo@ : userinfo is everything up to the last "@" before the host part ends.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s?#]+)@")
_SECRET_QUERY = re.compile(
    r"(?P<key>[?&](?:access_token|token|auth|key|password|passwd|secret|signature|sig)=)[^&#\s]+",
    re.IGNORECASE,
)
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|_KEY$|^KEY$", re.IGNORECASE)


def redact_text(text: str) -> str:
    """``text`` with URL credentials masked."""
    if "://" not in text and "=" not in text:
        return text
    text = _USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)
    return _SECRET_QUERY.sub(lambda m: f"{m.group('key')}{MASK}", text)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` fit for a public report: secret-named values masked, URLs stripped."""
    return {k: (MASK if is_secret_name(k) and v else redact_text(v)) for k, v in env.items()}
