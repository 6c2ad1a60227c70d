"""The reader and the report of ``rocmkit matrix check --sources``, apart from the checks.

:class:`Sources` reads a fact's source from a recording (``tests/data/upstream`` layout), a
git clone, or live (unless offline); :class:`Report` counts what was checked and lists what a
source does not state. The torch checks (:mod:`rocmkit.matrix.sourcecheck`) and the jax checks
(:mod:`rocmkit.matrix.jaxcheck`) both take them, so neither imports the other for them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from rocmkit.errors import NetworkError
from rocmkit.pkgindex.http import JSON_TYPE, http_get
from rocmkit.pkgindex.pages import (
    ProjectPage,
    Wheel,
    parse_metadata,
    parse_project_page,
    project_page,
    read_metadata,
)

GITHUB_BLOB = re.compile(r"https://github\.com/([^/\s]+)/([^/\s]+)/blob/([0-9a-f]{7,40})/(\S+)")


@dataclass
class Report:
    checked: int = 0
    not_stated: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # sources neither recorded nor reachable
    hand_kept: int = 0  # facts with no machine-readable source
    read_from: dict[str, int] = field(default_factory=dict)  # "the recording DIR" / "live ..." -> files

    def lines(self) -> list[str]:
        out = [f"not stated: {line}" for line in self.not_stated]
        out += [f"unreadable: {line}" for line in self.unreadable]
        if self.read_from:
            out.append(
                "sources read from: "
                + "; ".join(f"{where} ({n} file{'s' if n != 1 else ''})" for where, n in self.read_from.items())
            )
        else:
            out.append("sources read from: none (no source could be read)" if self.unreadable else "sources read from: none")
        out.append(
            f"{self.checked} facts re-read from their sources: {len(self.not_stated)} not stated by them; "
            f"{len(self.unreadable)} sources could not be read; {self.hand_kept} facts rest on hand-kept "
            "sources only (open them from each file's [sources] table)"
        )
        return out


class Sources:
    """Reads a source: from the recording when it holds it, else live (unless offline)."""

    def __init__(
        self,
        recording: Path | None,
        *,
        offline: bool,
        timeout: float = 10.0,
        clones: dict[str, Path] | None = None,
    ) -> None:
        self.recording = recording
        self.clones = clones or {}  # "test-infra" / "TheRock" -> a git clone
        self.offline = offline
        self.timeout = timeout
        self._files: dict[str, str | None] = {}
        self._pages: dict[str, ProjectPage | None] = {}
        self._wheels: dict[str, dict[str, tuple[str, ...]] | None] = {}
        self.origins: dict[str, int] = {}  # where each file or page came from -> how many
        self.failures: dict[str, str] = {}  # url -> why it could not be read

    def _came(self, where: str) -> None:
        self.origins[where] = self.origins.get(where, 0) + 1

    def _why_not(self, url: str, live_error: str | None) -> None:
        if self.offline:
            self.failures[url] = "not in the recording, and --offline reads nothing live"
        else:
            self.failures[url] = f"not in the recording; the live read failed: {live_error or 'no answer'}"

    def github_file(self, url: str) -> str | None:
        """The text of ``https://github.com/<owner>/<repo>/blob/<commit>/<path>``."""
        if url in self._files:
            return self._files[url]
        m = GITHUB_BLOB.match(url)
        text = None
        if m:
            owner, repo, commit, path = m.groups()
            text = self._recorded_file(repo, commit, path)
            if text is not None:
                self._came(f"the recording {self.recording}")
            if text is None and repo in self.clones:
                from rocmkit.matrix.upstream.history import git_file

                text = git_file(self.clones[repo], commit, path)
                if text is not None:
                    self._came(f"the clone {self.clones[repo]}")
            error: str | None = None
            if text is None and not self.offline:
                raw = f"https://raw.githubusercontent.com/{owner}/{repo}/{commit}/{path}"
                try:
                    resp = http_get(raw, timeout=self.timeout, max_bytes=4 * 1024 * 1024)
                    text = resp.body.decode("utf-8", "replace") if resp.status == 200 else None
                    error = None if text is not None else f"{raw} answered HTTP {resp.status}"
                except NetworkError as exc:
                    error = exc.message
                if text is not None:
                    self._came("live: raw.githubusercontent.com")
            if text is None:
                self._why_not(url, error)
        self._files[url] = text
        return text

    def _recorded_file(self, repo: str, commit: str, path: str) -> str | None:
        if self.recording is None:
            return None
        folder = self.recording / {"test-infra": "test-infra", "TheRock": "therock"}.get(repo, repo)
        if not folder.is_dir():
            return None
        for rev in folder.iterdir():
            if "_" in rev.name and rev.name.split("_", 1)[1].startswith(commit) and (rev / path).is_file():
                return (rev / path).read_text(encoding="utf-8")
        return None

    def page(self, index_url: str, project: str) -> ProjectPage | None:
        key = f"{index_url.rstrip('/')}/{project}/"
        if key in self._pages:
            return self._pages[key]
        page = self._recorded_page(index_url, project)
        if page is not None:
            self._came(f"the recording {self.recording}")
        error: str | None = None
        if page is None and not self.offline:
            try:
                page = project_page(index_url, project, timeout=self.timeout)
                error = None if page is not None else f"{key} does not exist (404)"
            except NetworkError as exc:
                error = exc.message
            if page is not None:
                self._came(f"live: {index_url.rstrip('/')}")
        if page is None:
            self._why_not(key, error)
        self._pages[key] = page
        return page

    def requires(self, page: ProjectPage, wheel: Wheel) -> tuple[str, ...] | None:
        """Requires-Dist of one wheel on ``page``: recorded, else PEP 658 / range requests."""
        if self.recording is not None:
            path = self.recording / "pypi" / "metadata" / f"{wheel.file.filename}.metadata"
            if path.is_file():
                return parse_metadata(path.read_text(encoding="utf-8"), "recorded").requires_dist
        if self.offline:
            return None
        try:
            meta = read_metadata(wheel.file, timeout=self.timeout)
        except NetworkError:
            return None
        return meta.requires_dist if meta is not None else None

    def wheel_targets(self, index_url: str, project: str, filename: str) -> dict[str, tuple[str, ...]] | None:
        """The gfx targets in each ROCm library of one wheel (``{member: targets}``): from the
        recording (``pypi/wheels/<filename>/<member>/<offset>.bundle``: each offload bundle of
        the library's ``.hip_fatbin``, cut after its entry table), else read live from the wheel
        by range requests. None, said in ``failures``, when neither can be read."""

        key = f"{index_url.rstrip('/')}/{project}/{filename}"
        if key not in self._wheels:
            self._wheels[key] = self._wheel_targets(key, index_url, project, filename)
        return self._wheels[key]

    def _wheel_targets(
        self, key: str, index_url: str, project: str, filename: str
    ) -> dict[str, tuple[str, ...]] | None:
        from rocmkit.pkgindex.codeobjects import CodeObjectError, bundle_ids, targets

        folder = self.recording / "pypi" / "wheels" / filename if self.recording is not None else None
        if folder is not None and folder.is_dir():
            out: dict[str, tuple[str, ...]] = {}
            try:
                for lib in sorted({p.parent for p in folder.rglob("*.bundle")}):
                    found = [set(targets(bundle_ids(b.read_bytes()))) for b in sorted(lib.glob("*.bundle"))]
                    out[lib.relative_to(folder).as_posix()] = tuple(sorted(set.intersection(*found)))
            except CodeObjectError as exc:
                self.failures[key] = f"the recording's {folder.name}: {exc.message} ({exc.fix})" if exc.fix else exc.message
                return None
            self._came(f"the recording {self.recording}")
            return out
        page = None if self.offline else self.page(index_url, project)
        wheel = next((f for f in page.files if f.filename == filename), None) if page is not None else None
        if wheel is None:
            why = f"{filename} is not on {index_url.rstrip('/')}/{project}/" if page is not None else None
            self._why_not(key, why)
            return None
        from rocmkit.pkgindex.codeobjects import wheel_targets

        try:
            read = wheel_targets(wheel.url.split("#", 1)[0], timeout=self.timeout)
        except (NetworkError, CodeObjectError) as exc:
            self._why_not(key, exc.message)
            return None
        if read is None:
            self._why_not(key, "the server serves no byte ranges of it")
            return None
        self._came(f"live: {index_url.rstrip('/')}")
        return read

    def _recorded_page(self, index_url: str, project: str) -> ProjectPage | None:
        if self.recording is None:
            return None
        try:
            meta = json.loads((self.recording / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        file = self.recording / "pypi" / f"{project}.json"
        if not isinstance(meta, dict) or meta.get("index_url", "").rstrip("/") != index_url.rstrip("/"):
            return None
        if not file.is_file():
            return None
        url = f"{index_url.rstrip('/')}/{project}/"
        return ProjectPage(url=url, files=tuple(parse_project_page(url, file.read_bytes(), JSON_TYPE)))


def cpython_span(wheels: Sequence[Wheel]) -> tuple[str, str] | None:
    """The lowest and highest CPython (``"3.10"``) the wheels are built for; None without any."""
    pys: set[str] = set()
    for w in wheels:
        pys |= w.cpythons()
    ordered = sorted(pys, key=Version)
    return (ordered[0], ordered[-1]) if ordered else None


def check_release_wheels(
    rep: Report,
    where: str,
    page: ProjectPage,
    what: str,
    wheels: Sequence[Wheel],
    python: tuple[str, str],
    released: str | None,
) -> bool:
    """A release row against the final wheels its page lists: the CPython span the row states,
    and its release day (the first upload). ``what`` names the release (``jaxlib 0.10.2``).
    False when the page has no final wheel of it (said in the report)."""
    span = cpython_span(wheels)
    rep.checked += 1
    if span is None:
        rep.not_stated.append(f"{where}: {page.url} has no final {what} wheel")
        return False
    if span != python:
        rep.not_stated.append(
            f"{where}: Python {python[0]}-{python[1]}, but {page.url} has CPython {span[0]}-{span[1]} wheels"
        )
    times = sorted(w.file.upload_time for w in wheels if w.file.upload_time)
    if released and times:
        rep.checked += 1
        if times[0][:10] != released:
            rep.not_stated.append(f"{where}: released {released}, but {page.url} first has it on {times[0][:10]}")
    return True
