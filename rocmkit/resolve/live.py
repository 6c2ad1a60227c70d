"""What the reachable indexes serve now, and a plan held to it.

The packaged data says which builds were published; an index says which
exist *now* and where this machine can reach them. After ``resolve`` has
decided from the data, :func:`check_plan` reads the torch page of each index
the plan uses (one request per index, all at once, a 2 s limit), and:

* the planned build is served for this Python: the plan stands, and it says where it was seen;
* it is not, but the index answered: the variants that index lacks are dropped and the
  plan is resolved again (an unconfirmed variant the index does serve counts as confirmed);
* torch releases on the index that the data lacks are named, with the command that adds them;
* no index answers (air-gapped, offline, a wheelhouse): the packaged data, as before.

``install`` also passes the user's own pip sources (find-links folders, a mirror, PyPI):
when the planned index does not answer, those are what pip will really use, so the plan is
held to what *they* hold, by exact local version (a PyPI ``torch==2.14.1`` is a CUDA
build and never stands in for ``+cpu``).

Answers are cached in ``<cache>/indexes/`` with their ETag: a fresh entry (under
``TTL_S``) is used without a request, an older one is revalidated with
``If-None-Match``; an index that did not answer is remembered for ``DOWN_TTL_S``, so
an offline ``resolve`` pays for the attempt once. ``ROCMKIT_OFFLINE=1`` (or
``resolve --offline``) skips all of it (the session, :mod:`rocmkit.session`, decides).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import time
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from rocmkit.errors import NetworkError, NoPlanError, rerun
from rocmkit.machine import Machine
from rocmkit.matrix import Matrix, TorchRelease
from rocmkit.packages import canonical, requirement_name
from rocmkit.pkgindex.http import ACCEPT, http_get
from rocmkit.pkgindex.pages import IndexFile, parse_project_page, parse_wheel
from rocmkit.plan import Plan
from rocmkit.resolve.constraints import Constraints, index_base_of
from rocmkit.util.redact import url_under

TIMEOUT_S = 2.0
TTL_S = 15 * 60
DOWN_TTL_S = 5 * 60
SAID = "index check: "  # how the live check's reasons start
_ROUNDS = 6  # each round reads only indexes not read before, so this bounds nothing real

Build = tuple[str, str]  # ("2.13.0+cpu", "3.11")
PURE = "py3"  # a Build's Python for a wheel any CPython 3 installs (torchaudio 2.11.1: py3-none-...)
ARM = "/aarch64"  # appended to a Build's Python for an aarch64 wheel (a build of its own)


@dataclass(frozen=True, kw_only=True)
class Seen:
    """What one source said about torch."""

    url: str
    answered: bool
    builds: frozenset[Build] = frozenset()
    detail: str = ""  # "answered", "cached 3 min ago", "did not answer: ..."
    # Until when this answer is served from the cache without asking (epoch seconds); None for
    # what is never cached (a local folder, or no cache folder).
    fresh_until: float | None = None

    def serves(self, version: str, python: str) -> bool:
        return (version, python) in self.builds or (version, PURE) in self.builds

    def versions(self, local: str | None) -> set[Version]:
        out = set()
        for text, _ in self.builds:
            v = Version(text)
            if v.local == local and not v.is_prerelease:
                out.add(v)
        return out


def _builds(files: Iterable[IndexFile], project: str = "torch") -> frozenset[Build]:
    out: set[Build] = set()
    name = canonical(project)
    for f in files:
        wheel = parse_wheel(f)
        arm = any("linux" in t and t.endswith("_aarch64") for t in wheel.tags) if wheel is not None else False
        if wheel is None or wheel.name != name or not (wheel.is_linux_x86_64() or wheel.is_pure() or arm):
            continue
        for py in wheel.cpythons():
            if wheel.is_linux_x86_64() or wheel.is_pure():
                out.add((str(wheel.version), py))
            if arm:  # an aarch64 build is its own (docs/platforms.md): "3.12/aarch64"
                out.add((str(wheel.version), py + ARM))
        if any(t.split("-")[0] in ("py3", "py2.py3") and t.split("-")[1] == "none" for t in wheel.tags):
            out.add((str(wheel.version), PURE))
    return frozenset(out)


def wheel_python(plan: Plan) -> str:
    """The key a plan's builds are looked up by: its Python, and "/aarch64" for an aarch64 plan."""
    return (plan.python or "") + (ARM if (plan.platform or "").endswith("-aarch64") else "")


def _cache_file(cache: Path, url: str) -> Path:
    # "v2": entries since aarch64 builds are recorded apart; older entries are not read.
    return cache / f"{hashlib.sha256(('v2:' + url).encode()).hexdigest()[:24]}.json"


def _read_cache(path: Path) -> dict[str, object] | None:
    from rocmkit.util.trust import load_cached

    # Only an entry of this user's (or root's) in a folder nobody else can write.
    try:
        data = json.loads(load_cached(path) or b"null")
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _write_cache(path: Path, entry: dict[str, object]) -> None:
    from rocmkit.util.trust import store_cached

    # A read-only cache folder costs a request next time, nothing else.
    with contextlib.suppress(OSError):
        store_cached(path, json.dumps(entry).encode())


def _cached_builds(entry: dict[str, object]) -> frozenset[Build]:
    raw = entry.get("builds")
    if not isinstance(raw, list):
        return frozenset()
    return frozenset((str(b[0]), str(b[1])) for b in raw if isinstance(b, list) and len(b) == 2)


def _folder(source: str) -> Path | None:
    parsed = urllib.parse.urlsplit(source)
    if parsed.scheme == "file":
        return Path(urllib.parse.unquote(parsed.path))
    if parsed.scheme == "" and source.startswith("/"):
        return Path(source)
    return None


def _read_folder(source: str, folder: Path, *, is_index: bool, project: str = "torch") -> Seen:
    where = folder / canonical(project) if is_index else folder
    if not where.is_dir():
        if is_index and project != "torch" and folder.is_dir():
            return Seen(url=source, answered=True, detail=f"has no {project} ({where} is not a folder)")
        return Seen(url=source, answered=False, detail=f"{where} is not a folder")
    files = [IndexFile(filename=p.name, url=p.as_uri()) for p in where.iterdir() if p.suffix == ".whl"]
    return Seen(url=source, answered=True, builds=_builds(files, project), detail="local folder")


def observe_one(
    source: str, *, is_index: bool = True, timeout: float, cache: Path | None, project: str = "torch"
) -> Seen:
    """Read ``<source>/<project>/`` (an index) or ``source`` (a find-links folder or page)."""
    from rocmkit.util.redact import conceal, has_credentials

    # Masked from here on (a pip.conf index may carry a token): the URL lands in the cache and the reasons.
    masked = conceal(source)
    if has_credentials(masked):
        # A credentialed index is read every time: its entry would be keyed by the masked URL,
        # the same for every token, so a mistyped or revoked token would pass on the answer
        # another one got, for as long as the entry is fresh.
        cache = None
    source = masked
    folder = _folder(source)
    if folder is not None:
        return _read_folder(source, folder, is_index=is_index, project=project)
    page = url_under(source, canonical(project), slash=True) if is_index else source
    path = _cache_file(cache, page) if cache is not None else None
    entry = _read_cache(path) if path is not None else None
    now = time.time()
    headers: dict[str, str] = {}
    if entry is not None:
        fetched = entry.get("fetched")
        age = now - fetched if isinstance(fetched, (int, float)) else float("inf")
        if entry.get("answered") is False and age < DOWN_TTL_S:
            return Seen(
                url=source,
                answered=False,
                detail=f"did not answer {age / 60:.0f} min ago (cached)",
                fresh_until=now - age + DOWN_TTL_S,
            )
        if entry.get("answered") is True and age < TTL_S:
            return Seen(
                url=source,
                answered=True,
                builds=_cached_builds(entry),
                detail=f"read {age / 60:.0f} min ago",
                fresh_until=now - age + TTL_S,
            )
        if entry.get("answered") is True and isinstance(entry.get("etag"), str):
            headers["If-None-Match"] = str(entry["etag"])
    try:
        resp = http_get(page, timeout=timeout, accept=ACCEPT if is_index else "text/html", headers=headers)
        if resp.status == 304 and entry is not None:
            builds, etag, detail = _cached_builds(entry), entry.get("etag"), "not modified since last read"
        elif resp.status == 200:
            builds = _builds(parse_project_page(page, resp.body, resp.content_type), project)
            etag, detail = resp.etag, "answered"
        elif resp.status == 404:
            builds, etag, detail = frozenset(), None, f"has no {project} (404)"
        elif resp.status in (401, 403):
            # Not cached: the user fixes the credentials and runs again.
            return Seen(
                url=source,
                answered=False,
                detail=f"refused rocmkit (HTTP {resp.status}: check the user and token in the URL, or ~/.netrc)",
            )
        else:
            raise NetworkError(f"{page} answered HTTP {resp.status}")
    except NetworkError as exc:
        refused = "redirected" in exc.message  # another host, or plain http: refused, not down
        if path is not None and not refused:
            _write_cache(path, {"url": page, "fetched": now, "answered": False})
        why = exc.message.removeprefix(page).strip().removeprefix("does not answer: ")
        if refused and exc.fix:
            why += f"; {exc.fix}"
        until = now + DOWN_TTL_S if path is not None and not refused else None
        return Seen(url=source, answered=False, detail=f"did not answer ({why})", fresh_until=until)
    if path is not None:
        _write_cache(
            path, {"url": page, "fetched": now, "answered": True, "etag": etag, "builds": sorted(builds)}
        )
    until = now + TTL_S if path is not None else None
    return Seen(url=source, answered=True, builds=builds, detail=detail, fresh_until=until)


Observer = Callable[[Sequence[tuple[str, bool]]], list[Seen]]


def observer(*, timeout: float = TIMEOUT_S, cache: Path | None = None) -> Observer:
    """Reads several sources at once (one thread and one request each)."""

    def read(sources: Sequence[tuple[str, bool]]) -> list[Seen]:
        if not sources:
            return []
        with ThreadPoolExecutor(max_workers=min(8, len(sources))) as pool:
            return list(
                pool.map(lambda s: observe_one(s[0], is_index=s[1], timeout=timeout, cache=cache), sources)
            )

    return read


def default_cache() -> Path:
    from rocmkit.util.paths import cache_dir

    return cache_dir() / "indexes"


# -- holding a plan to what was seen --------------------------------------------------


def _torch_pin(plan: Plan) -> str | None:
    for req in plan.requirements:
        name, sep, version = req.partition("==")
        if sep and canonical(name.strip()) == "torch":
            return version.strip()
    return None


def _keep(matrix: Matrix, served: Callable[[TorchRelease, str], bool | None]) -> Matrix:
    """The matrix with each variant ``served`` says is absent dropped; present ones confirmed."""
    releases = []
    for rel in matrix.torch_releases:
        variants = []
        for v in rel.variants:
            answer = served(rel, v.index)
            if answer is False:
                continue
            if answer is True and "*" in v.unconfirmed:
                # The index serves it: the build's existence is no longer in doubt.
                variants.append(
                    dataclasses.replace(v, unconfirmed=tuple(u for u in v.unconfirmed if u != "*"))
                )
            else:
                variants.append(v)
        releases.append(dataclasses.replace(rel, variants=tuple(variants)))
    return dataclasses.replace(matrix, torch_releases=tuple(releases))


ProjectReader = Callable[[str, str], Seen]  # (index URL, project) -> what its page serves


def project_reader(*, timeout: float = TIMEOUT_S, cache: Path | None = None) -> ProjectReader:
    def read(index: str, project: str) -> Seen:
        return observe_one(index, timeout=timeout, cache=cache, project=project)

    return read


def check_plan(
    plan: Plan,
    machine: Machine,
    constraints: Constraints,
    matrix: Matrix,
    *,
    fallbacks: Sequence[tuple[str, bool]] = (),
    read: Observer | None = None,
    read_project: ProjectReader | None = None,
) -> Plan:
    """``plan`` held to what its torch index serves now; when that index does not answer,
    to what ``fallbacks`` ((source, is_index): the user's pip sources) hold. Then every other
    package the plan pins from that index (torchvision, torchaudio, a ROCm Triton) is held to
    what the index serves: one it lacks is left out, and the plan says so."""
    held = _check_torch(plan, machine, constraints, matrix, fallbacks=fallbacks, read=read)
    if held.index_urls and _torch_pin(held) is not None and held.python:
        return check_pins(held, read_project or project_reader(cache=default_cache()), fallbacks=fallbacks)
    return held


def _index_pins(plan: Plan) -> list[tuple[str, str]]:
    """(name, version) of the pins other than torch that only the plan's index serves: a
    local version of its backend (torchvision==0.28.0+cpu), or a ROCm build's Triton."""
    from rocmkit.packages import is_triton, parse_pin

    out = []
    for req in plan.requirements:
        pin = parse_pin(req)
        if pin is None or pin.project == "torch":
            continue
        ours = pin.version.endswith(f"+{plan.backend}")
        if ours or (is_triton(pin.name) and plan.backend.rocm is not None):
            out.append((pin.name, pin.version))
    return out


def check_pins(plan: Plan, read_project: ProjectReader, *, fallbacks: Sequence[tuple[str, bool]] = ()) -> Plan:
    """Leave out each pinned package the plan's index answers for without serving it (a mirror
    with torch but empty torchvision/torchaudio pages). When that index does not answer, the
    ``fallbacks`` (the user's pip sources install turns to with --fallback-index) are asked the
    same: a pin none of the answering ones serves is left out. Nothing answering changes nothing."""
    if not plan.index_urls or not plan.python:
        return plan
    index = plan.index_urls[0]
    pins = _index_pins(plan)
    if not pins:
        return plan
    with ThreadPoolExecutor(max_workers=min(4, len(pins))) as pool:
        seen = list(pool.map(lambda p: read_project(index, p[0]), pins))
        if fallbacks and not any(s.answered for s in seen):
            seen = list(pool.map(lambda p: _any_of(fallbacks, p[0], p[1], plan.python or ""), pins))
    drop: list[str] = []
    warnings: list[str] = []
    triton = plan.triton
    for (name, version), s in zip(pins, seen, strict=True):
        if not s.answered or s.serves(version, wheel_python(plan)):
            continue
        req = next(r for r in plan.requirements if r.startswith(f"{name}=="))
        drop.append(req)
        why = (
            f"{s.url} {s.detail}"
            if "has no" in s.detail
            else f"{s.url} serves no {name} {version} wheel for Python {plan.python}"
        )
        if req in plan.companions:
            warnings.append(
                f"{why}: {req} is left out of the plan (torch runs without it; add it from another source "
                "if you need it)"
            )
        else:
            warnings.append(f"{why}: the pin {req} is left out; torch's own Requires-Dist names the Triton it needs")
            if triton == req:
                triton = None
    if not drop:
        return plan
    # Remembered: a --with package that needs one of them is refused (another source's build of
    # it is for another torch), and the guard does not pin what is not there.
    unserved = (*plan.unserved, *(r for r in drop if r in plan.companions))
    return dataclasses.replace(
        plan.without(drop), triton=triton, warnings=(*plan.warnings, *warnings), unserved=unserved
    )


# How far an index may move a plan down: at most this many release series (2.13 -> 2.10) below
# the newest confirmed build the data plans. Older series get no fixes upstream, and an index
# that lists only old builds (a stale or hostile mirror) must not steer a node down to them
# unasked; --torch X.Y names an older release on purpose. A policy, not an upstream fact.
WINDOW_SERIES = 3


def _any_of(sources: Sequence[tuple[str, bool]], project: str, version: str, python: str) -> Seen:
    """What ``sources`` say about ``project``, as one answer: the first that serves ``version``,
    else the answering ones together (their builds), else not answered."""
    answers = [observe_one(u, is_index=i, timeout=TIMEOUT_S, cache=default_cache(), project=project) for u, i in sources]
    answering = [a for a in answers if a.answered]
    held = next((a for a in answering if a.serves(version, python)), None)
    if held is not None or not answering:
        return held or Seen(url=", ".join(u for u, _ in sources), answered=False)
    return Seen(
        url=", ".join(a.url for a in answering),
        answered=True,
        builds=frozenset().union(*(a.builds for a in answering)),
        detail="answered",
    )


def _check_torch(
    plan: Plan,
    machine: Machine,
    constraints: Constraints,
    matrix: Matrix,
    *,
    fallbacks: Sequence[tuple[str, bool]] = (),
    read: Observer | None = None,
) -> Plan:
    from rocmkit.resolve.core import resolve

    if _torch_pin(plan) is None or plan.channel != "stable" or not plan.python or not plan.index_urls:
        return plan  # nightly and TheRock plans are not pinned to one build
    read = read or observer(cache=default_cache())
    python = plan.python
    key = wheel_python(plan)  # what builds are looked up by (aarch64 apart)
    cons = dataclasses.replace(constraints, python=python)
    seen: dict[str, Seen] = {}
    current, m = plan, matrix
    first_pin = _torch_pin(plan)
    assert first_pin is not None
    heard: list[Seen] = []  # every source that answered, in the order asked
    for _ in range(_ROUNDS):
        pin = _torch_pin(current)
        assert pin is not None
        torch_url = current.index_urls[0]
        if torch_url not in seen:
            seen.update((s.url, s) for s in read([(torch_url, True)]))
        direct = seen[torch_url].answered
        if not direct and fallbacks:
            seen.update((s.url, s) for s in read([f for f in fallbacks if f[0] not in seen]))
        used = [seen[torch_url]] if direct else [seen[f[0]] for f in fallbacks if f[0] in seen]
        answering = [s for s in used if s.answered]
        heard += [s for s in answering if s not in heard]
        if not answering:
            if heard:
                # An index answered without the plan's build and the plan moved to one that does
                # not answer: what lands there was never seen listed anywhere.
                raise _unlisted(heard, first_pin, python, f"{torch_url} {seen[torch_url].detail}")
            return _noted(
                current,
                reasons=[
                    f"{torch_url} {seen[torch_url].detail}; "
                    + (
                        "no other source answered"
                        if fallbacks
                        else "no other source was asked (--fallback-index asks your pip configuration's, as "
                        "install does with it)"
                    )
                    + ", so the plan rests on rocmkit's packaged data"
                ],
            )
        if direct:
            served = _served_by_index(m, seen, index_base_of(constraints), key)
        else:
            served = _served_by_any(frozenset().union(*(s.builds for s in answering)), key)
        m = _keep(m, served)
        names = ", ".join(s.url for s in answering)
        try:
            replanned = resolve(machine, cons, matrix=m)
        except NoPlanError as exc:
            # The source answered, and lists no build of this kind that the data names: the plan
            # may not name one it did not list (it would fail at install, or land elsewhere).
            raise _unlisted(heard, first_pin, python, exc.message) from None
        moved = _torch_pin(replanned)
        if moved == pin and replanned.index_urls == current.index_urls:
            holder = next((s for s in answering if s.serves(pin, key)), None)
            if holder is None:
                raise _unlisted(heard, first_pin, python, f"{names} answered without torch {pin}")
            _within_window(m, plan, pin, first_pin, constraints, heard, python)
            # Re-resolved with what was seen: a build known only from build lists is now confirmed
            # (no "not yet seen" reason, no fallback).
            current = dataclasses.replace(replanned, reasons=(*replanned.reasons, *_carried(current)))
            return _noted(
                current,
                reasons=[
                    (f"{torch_url} {seen[torch_url].detail}; " if not direct else "")
                    + f"{holder.url} serves torch {pin} for Python {python} ({holder.detail})"
                ],
                warnings=_newer(m, answering, pin),
            )
        if any(s.serves(pin, key) for s in answering):
            why = f"{names} serve(s) torch {moved}, which rocmkit's data had not confirmed: planned it over {pin}"
        else:
            why = f"{names} do(es) not serve torch {pin} for Python {python}: planned {moved} instead"
        current = _noted(replanned, reasons=[*_carried(current), why])
    raise _unlisted(heard, first_pin, python, f"no source read serves torch {_torch_pin(current)}")


def _listed(heard: Sequence[Seen], local: str | None, python: str) -> list[Version]:
    """The releases of builds with the local label ``local`` for ``python`` that ``heard`` list,
    newest first."""
    found: set[Version] = set()
    for s in heard:
        for text, py in s.builds:
            with contextlib.suppress(InvalidVersion):
                v = Version(text)
                if v.local == local and not v.is_prerelease and py in (python, PURE):
                    found.add(v)
    return sorted(found, reverse=True)


def _unlisted(heard: Sequence[Seen], pin: str, python: str, why: str) -> NoPlanError:
    """The plan cannot name a build its answering sources did not list: said with what they do list."""
    local = Version(pin).local
    listed = _listed(heard, local, python)
    names = ", ".join(s.url for s in heard) or "the index"
    kind = f"+{local}" if local else "torch"
    newest = (
        f"the newest {kind} build listed for Python {python} is torch {listed[0]}"
        if listed
        else f"no {kind} build is listed for Python {python}"
    )
    return NoPlanError(
        f"{names} serve(s) no torch build of this kind for Python {python} that rocmkit may plan ({why}); {newest}",
        (
            *([rerun("--torch", str(listed[0].public)) + "   # install the one it lists"] if listed else []),
            rerun("--index-base", "URL") + f"   # an index that serves torch {pin}",
            rerun("--offline") + "   # plan from rocmkit's data, if the index will serve it later",
        ),
    )


def _series_index(m: Matrix, version: str) -> int:
    order = sorted({r.series for r in m.torch_releases} | {_series(version)}, key=Version)
    return order.index(_series(version))


def _series(version: str) -> str:
    release = Version(version).release
    return f"{release[0]}.{release[1] if len(release) > 1 else 0}"


def _within_window(
    m: Matrix,
    plan: Plan,
    pin: str,
    first_pin: str,
    constraints: Constraints,
    heard: Sequence[Seen],
    python: str,
) -> None:
    """Refuse a plan the index moved more than WINDOW_SERIES series below the data's (unless
    --torch named the release)."""
    if pin == first_pin or constraints.torch:
        return
    # The newest confirmed build the data planned (a listed-only plan's fallback), else its pin.
    base = next((r.partition("==")[2] for r in plan.fallback if requirement_name(r) == "torch"), first_pin)
    below = _series_index(m, base) - _series_index(m, pin)
    if below <= WINDOW_SERIES:
        return
    names = ", ".join(s.url for s in heard)
    raise NoPlanError(
        f"the newest build of this kind it lists for Python {python} is torch {pin} ({names}), {below} series "
        f"below torch {base}: past the support window ({WINDOW_SERIES} series)",
        (
            rerun("--torch", _series(pin)) + "   # install it anyway",
            rerun("--index-base", "URL") + f"   # an index that serves torch {base}",
        ),
    )


def _served_by_index(
    m: Matrix, seen: dict[str, Seen], base: str | None, python: str
) -> Callable[[TorchRelease, str], bool | None]:
    def served(rel: TorchRelease, index: str) -> bool | None:
        s = seen.get(m.index_url("stable", index, base))
        if s is None or not s.answered:
            return None  # not read (yet): the data stands; a later round reads it if the plan moves there
        return s.serves(f"{rel.version}+{index}", python)

    return served


def _served_by_any(pool: frozenset[Build], python: str) -> Callable[[TorchRelease, str], bool | None]:
    def served(rel: TorchRelease, index: str) -> bool | None:
        return (f"{rel.version}+{index}", python) in pool

    return served


def _newer(m: Matrix, answering: list[Seen], pin: str) -> list[str]:
    try:
        local = Version(pin).local
    except InvalidVersion:
        return []
    newest = max((Version(r.version) for r in m.torch_releases), default=Version("0"))
    found: set[Version] = set()
    for s in answering:
        found |= {v for v in s.versions(local) if Version(v.public) > newest}
    if not found:
        return []
    return [
        f"torch {max(found).public} is on the index but not in rocmkit's data: "
        "run `rocmkit matrix refresh --write`"
    ]


def _carried(plan: Plan) -> list[str]:
    """The live-check reasons of an earlier round (what was seen stays said)."""
    return seen_lines(plan)


def _noted(plan: Plan, *, reasons: Sequence[str] = (), warnings: Sequence[str] = ()) -> Plan:
    said = tuple(r if r.startswith(SAID) else SAID + r for r in reasons)
    return dataclasses.replace(plan, reasons=(*plan.reasons, *said), warnings=(*plan.warnings, *warnings))


def seen_lines(plan: Plan) -> list[str]:
    """What the live check said about ``plan`` (for install's log)."""
    return [r for r in plan.reasons if r.startswith(SAID)]
