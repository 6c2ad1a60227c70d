"""Lock files: the exact closure of a plan, pinned, with sha256 hashes.

The file is an ordinary requirements file that pip and uv both accept with
``--require-hashes``; a ``# rocmkit-plan:`` comment carries the plan so that
``rocmkit install --from-lock`` can verify the result (torch build, Triton pin)
on another node without resolving again. pip ignores comments, so the plan
line is covered by a ``# rocmkit-plan-sha256:`` line, the sha256 of the plan
line and of every pin with its hashes: an edit to the plan (its ``env`` goes
into ``bin/activate``) or to the pins alone is refused on load.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from rocmkit.errors import DataError
from rocmkit.install.base import Locked, Sources
from rocmkit.packages import parse_pin
from rocmkit.plan import Plan

PLAN_PREFIX = "# rocmkit-plan: "
PLAN_HASH_PREFIX = "# rocmkit-plan-sha256: "
MAX_LOCK_BYTES = 4 * 1024 * 1024
_HASH = re.compile(r"^--hash=sha256:([0-9a-f]{64})$")


@dataclass(frozen=True, kw_only=True)
class LockFile:
    entries: tuple[Locked, ...]
    sources: Sources
    plan: Plan | None = None

    def requirements_text(self) -> str:
        """Only the hashed pins (sources are passed on the command line, after the index check)."""
        lines = []
        for entry in self.entries:
            hashes = "".join(f" \\\n    --hash=sha256:{h}" for h in entry.hashes)
            lines.append(f"{entry.name}=={entry.version}{hashes}\n")
        return "".join(lines)


def render(entries: list[Locked], sources: Sources, plan: Plan | None) -> str:
    missing = [e.name for e in entries if not e.hashes]
    if missing:
        raise DataError(
            f"the index gave no sha256 hash for {', '.join(missing)}; a lock needs one for every file",
            "use an index that publishes hashes (PEP 503 #sha256= fragments)",
        )
    head = [
        "# Written by `rocmkit install --lock`: every package pinned, with its sha256.\n",
        "# Install: rocmkit install --from-lock FILE   (or: pip install --require-hashes -r FILE)\n",
    ]
    body = LockFile(entries=tuple(sorted(entries, key=lambda e: e.name)), sources=sources).requirements_text()
    from rocmkit.util.redact import conceal

    # A source from the user's pip.conf may carry a token: the lock names it as user:***
    # (an install from the lock gets it back from ROCMKIT_INDEX_BASE or ~/.netrc).
    urls, links = [conceal(u) for u in sources.index_urls], [conceal(u) for u in sources.find_links]
    src: list[str] = []
    if urls:
        src.append(f"--index-url {urls[0]}\n")
        src += [f"--extra-index-url {url}\n" for url in urls[1:]]
    src += [f"--find-links {link}\n" for link in links]
    if plan is not None:
        data = {k: v for k, v in plan.to_dict().items() if k not in ("pip_command", "uv_command")}
        plan_json = json.dumps(data, sort_keys=True)
        head.append(PLAN_PREFIX + plan_json + "\n")
        head.append(PLAN_HASH_PREFIX + _plan_digest(plan_json, _pins_of("".join(src) + body)) + "\n")
    return "".join(head) + "".join(src) + body


def _pins_of(text: str) -> list[str]:
    """The pin and source lines of a lock, one logical line each, whitespace normalised."""
    logical = re.sub(r"\\\n", " ", text).splitlines()
    return sorted(
        " ".join(ln.split()) for ln in logical if ln.strip() and not ln.lstrip().startswith("#")
    )


def _plan_digest(plan_json: str, pins: list[str]) -> str:
    return hashlib.sha256((plan_json.strip() + "\n" + "\n".join(pins)).encode()).hexdigest()


TRUST_FIX = (
    "keep locks in a folder only root can write (chown root, chmod go-w the file and its folders), "
    "or install as the user who wrote it"
)


def parse(path: Path, *, allow_env: frozenset[str] = frozenset()) -> LockFile:
    """The lock at ``path``. Its digest ties the plan line to the pins (an edit of one alone, a
    cut or a mix is refused) but is no signature: whoever can write the file can rewrite it. So
    as root a lock another user could have written is refused (exit 13) before it is read."""
    from rocmkit.errors import UsageError
    from rocmkit.util.safeload import loads_json, read_text
    from rocmkit.util.trust import check_file_as_root

    check_file_as_root(path, "the lock", TRUST_FIX)

    try:
        text = read_text(path, f"lock file {path}", max_bytes=MAX_LOCK_BYTES)
    except UsageError as exc:
        raise DataError(exc.message, "check the path") from exc
    plan: Plan | None = None
    plan_json: str | None = None
    plan_hash: str | None = None
    index_urls: list[str] = []
    find_links: list[str] = []
    entries: list[Locked] = []
    # Join continuation lines first, as pip does.
    logical = re.sub(r"\\\n", " ", text).splitlines()
    for lineno, raw in enumerate(logical, 1):
        line = raw.strip()
        if line.startswith(PLAN_HASH_PREFIX.strip()):
            plan_hash = line[len(PLAN_HASH_PREFIX.strip()) :].strip()
            continue
        if line.startswith(PLAN_PREFIX.strip()):
            if plan_json is not None:
                raise DataError(
                    f"{path} holds two rocmkit-plan lines", "regenerate it with `rocmkit install --lock FILE`"
                )
            plan_json = line[len(PLAN_PREFIX.strip()) :]
            plan = Plan.from_dict(
                loads_json(plan_json, f"{path}: the rocmkit-plan line"), allow_env=allow_env
            )
            continue
        if not line or line.startswith("#"):
            continue
        words = line.split()
        if words[0] in ("--index-url", "-i", "--extra-index-url", "--find-links", "-f") and len(words) == 2:
            (find_links if words[0] in ("--find-links", "-f") else index_urls).append(words[1])
            if words[0] in ("--index-url", "-i"):
                index_urls.insert(0, index_urls.pop())
            continue
        pin = parse_pin(words[0])
        hashes = [m.group(1) for w in words[1:] if (m := _HASH.match(w))]
        if pin is None or not pin.plain or not hashes or len(hashes) != len(words) - 1:
            raise DataError(
                f"{path}, entry {lineno}: {line[:80]!r} is not `name==version --hash=sha256:...`",
                "regenerate the lock with `rocmkit install --lock FILE`",
            )
        entries.append(Locked(name=pin.project, version=pin.version, hashes=tuple(hashes)))
    if not entries:
        raise DataError(f"{path} locks no package", "regenerate it with `rocmkit install --lock FILE`")
    if plan_json is not None and plan_hash != _plan_digest(plan_json, _pins_of(text)):
        raise DataError(
            f"{path}: the rocmkit-plan line or the pins were changed after the lock was written "
            f"({'no' if plan_hash is None else 'a wrong'} rocmkit-plan-sha256 line)",
            "regenerate the lock with `rocmkit install --lock FILE` from a plan you trust",
        )
    return LockFile(
        entries=tuple(entries),
        sources=Sources(index_urls=tuple(index_urls), find_links=tuple(find_links)),
        plan=plan,
    )


def pins_in(text: str) -> list[tuple[str, str]]:
    """The ``(name, version)`` pins of a requirements text written by this module."""
    pins = [parse_pin(line.split()[0]) for line in _pins_of(text)]
    return [(p.name, p.version) for p in pins if p is not None and p.plain]
