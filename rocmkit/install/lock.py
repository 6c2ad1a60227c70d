"""Lock files: the exact closure of a plan, pinned, with sha256 hashes.

The file is an ordinary requirements file that pip and uv both accept with
``--require-hashes``; a ``# rocmkit-plan:`` comment carries the plan so that
``rocmkit install --from-lock`` can verify the result (torch build, Triton pin)
on another node without resolving again.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from rocmkit.errors import DataError
from rocmkit.install.base import Locked, Sources
from rocmkit.plan import Plan

PLAN_PREFIX = "# rocmkit-plan: "
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")
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
    if plan is not None:
        data = {k: v for k, v in plan.to_dict().items() if k not in ("pip_command", "uv_command")}
        head.append(PLAN_PREFIX + json.dumps(data, sort_keys=True) + "\n")
    if sources.index_urls:
        head.append(f"--index-url {sources.index_urls[0]}\n")
        head += [f"--extra-index-url {url}\n" for url in sources.index_urls[1:]]
    head += [f"--find-links {link}\n" for link in sources.find_links]
    body = LockFile(entries=tuple(sorted(entries, key=lambda e: e.name)), sources=sources).requirements_text()
    return "".join(head) + body


def parse(path: Path) -> LockFile:
    try:
        text = path.read_text()
    except OSError as exc:
        raise DataError(f"cannot read lock file {path}: {exc.strerror}", "check the path") from exc
    plan: Plan | None = None
    index_urls: list[str] = []
    find_links: list[str] = []
    entries: list[Locked] = []
    # Join continuation lines first, as pip does.
    logical = re.sub(r"\\\n", " ", text).splitlines()
    for lineno, raw in enumerate(logical, 1):
        line = raw.strip()
        if line.startswith(PLAN_PREFIX.strip()):
            try:
                plan = Plan.from_dict(json.loads(line[len(PLAN_PREFIX.strip()) :]))
            except ValueError as exc:
                raise DataError(f"{path}: the rocmkit-plan comment is not valid JSON: {exc}") from exc
            continue
        if not line or line.startswith("#"):
            continue
        words = line.split()
        if words[0] in ("--index-url", "-i", "--extra-index-url", "--find-links", "-f") and len(words) == 2:
            (find_links if words[0] in ("--find-links", "-f") else index_urls).append(words[1])
            if words[0] in ("--index-url", "-i"):
                index_urls.insert(0, index_urls.pop())
            continue
        pin = _PIN.match(words[0])
        hashes = [m.group(1) for w in words[1:] if (m := _HASH.match(w))]
        if pin is None or not hashes or len(hashes) != len(words) - 1:
            raise DataError(
                f"{path}, entry {lineno}: {line[:80]!r} is not `name==version --hash=sha256:...`",
                "regenerate the lock with `rocmkit install --lock FILE`",
            )
        entries.append(Locked(name=pin.group(1).lower(), version=pin.group(2), hashes=tuple(hashes)))
    if not entries:
        raise DataError(f"{path} locks no package", "regenerate it with `rocmkit install --lock FILE`")
    return LockFile(
        entries=tuple(entries),
        sources=Sources(index_urls=tuple(index_urls), find_links=tuple(find_links)),
        plan=plan,
    )
