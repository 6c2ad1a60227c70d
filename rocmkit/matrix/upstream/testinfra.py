"""pytorch/test-infra: ``tools/scripts/generate_binary_build_matrix.py`` and
``release/release_versions.sh``.

The build-matrix script names, per channel (release / test / nightly), the CUDA
and ROCm versions and the CPythons that binaries are built for, and which torch
version each channel is on. Its git history therefore rebuilds every past
release: the commit where ``CURRENT_STABLE_VERSION`` first becomes X.Y.Z is the
release going live, and its ``release`` lists are what X.Y.Z was built for.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass

from packaging.version import Version

from rocmkit.errors import DataError
from rocmkit.plan import Backend

BUILD_MATRIX_PATH = "tools/scripts/generate_binary_build_matrix.py"
RELEASE_VERSIONS_PATH = "release/release_versions.sh"
REPO_URL = "https://github.com/pytorch/test-infra"
CHANNELS = ("release", "test", "nightly")
_NAMES = (
    "CUDA_ARCHES_DICT",
    "ROCM_ARCHES_DICT",
    "PYTHON_ARCHES_DICT",
    "CURRENT_STABLE_VERSION",
    "CURRENT_CANDIDATE_VERSION",
    "CURRENT_NIGHTLY_VERSION",
    "CUDA_ARCHES_NO_WINDOWS",
)


@dataclass(frozen=True, kw_only=True)
class ChannelBuild:
    cuda: tuple[str, ...]  # "12.6", "13.0"
    rocm: tuple[str, ...]  # "7.1", "7.2"
    pythons: tuple[str, ...]  # "3.10" ... ("3.14t" free-threaded left out)

    @property
    def indexes(self) -> tuple[str, ...]:
        """Wheel index names: "12.6" -> "cu126", "7.2" -> "rocm7.2", plus "cpu"."""
        return (*(str(Backend.rocm_index(r)) for r in self.rocm), *(cuda_tag(c) for c in self.cuda), "cpu")


@dataclass(frozen=True, kw_only=True)
class BuildMatrix:
    stable: str
    candidate: str | None
    nightly: str | None
    channels: dict[str, ChannelBuild]
    no_windows: tuple[str, ...] = ()  # CUDA versions built for Linux only
    # CUDA versions the script appends for Linux builds of the non-release channels (the
    # test channel builds the release's wheels): 2025-11 to 2026-03, "12.9".
    linux_extra: tuple[str, ...] = ()


def cuda_tag(version: str) -> str:
    return str(Backend.cuda_index(version))


def _assignments(text: str, *, where: str) -> dict[str, object]:
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise DataError(
            f"{where}: not valid Python ({exc.msg}, line {exc.lineno})", "record another commit"
        ) from None
    except ValueError as exc:  # a NUL byte in the source (Python 3.11)
        raise DataError(f"{where}: not valid Python ({exc})", "record another commit") from None
    out: dict[str, object] = {}
    for node in tree.body:
        target = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            target, value = node.target.id, node.value
        if target in _NAMES and target not in out:
            try:
                out[target] = ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue  # computed, not a literal: not a fact this reader takes
    return out


def _strs(value: object, *, where: str, key: str, form: re.Pattern[str] | None = None) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataError(f"{where}: {key} is not a list of strings", "check the recorded file")
    bad = [v for v in value if form is not None and not form.fullmatch(v)]
    if bad:
        # Index names are made from these ("12.6" -> cu126): a word here is no version.
        raise DataError(f"{where}: {key} holds {bad[0]!r}, which is not a version", "check the recorded file")
    return tuple(value)


# ASCII digits only, a few of each: these become index names and integers.
_CUDA = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}")
_ROCM = re.compile(r"[0-9]{1,3}(\.[0-9]{1,3}){1,2}")
_PYTHON = re.compile(r"3\.[0-9]{1,3}t?")


def _version(value: object, *, where: str, key: str) -> str:
    if not isinstance(value, str):
        raise DataError(f"{where}: {key} is missing or not a string", "check the recorded file")
    try:
        Version(value)
    except ValueError:  # InvalidVersion, or more digits than int() takes
        raise DataError(f"{where}: {key} = {value!r} is not a version", "check the recorded file") from None
    return value


# `if channel != "release" and (os == LINUX or ...):  # comments  CUDA_ARCHES.append("12.9")`
_LINUX_EXTRA = re.compile(
    r'if\s*\(?\s*channel\s*!=\s*"release"[^:]*?\bLINUX\b[^:]*:\s*\n'
    r'(?:\s*#[^\n]*\n)*\s*CUDA_ARCHES\.append\(\s*"(\d+\.\d+)"\s*\)'
)


def with_linux_extra(build: ChannelBuild, extra: tuple[str, ...]) -> ChannelBuild:
    more = tuple(c for c in extra if c not in build.cuda)
    return ChannelBuild(cuda=(*build.cuda, *more), rocm=build.rocm, pythons=build.pythons) if more else build


def read_build_matrix(text: str, *, where: str = BUILD_MATRIX_PATH) -> BuildMatrix:
    """The channels and versions in one revision of generate_binary_build_matrix.py."""
    vals = _assignments(text, where=where)
    dicts = {}
    for key in ("CUDA_ARCHES_DICT", "ROCM_ARCHES_DICT", "PYTHON_ARCHES_DICT"):
        d = vals.get(key)
        if not isinstance(d, dict):
            raise DataError(
                f"{where}: {key} is missing (an older layout?)", "use a revision from 2024 or later"
            )
        dicts[key] = d
    channels = {}
    for ch in CHANNELS:
        if ch not in dicts["CUDA_ARCHES_DICT"]:
            continue
        pythons = _strs(
            dicts["PYTHON_ARCHES_DICT"].get(ch), where=where, key=f"PYTHON_ARCHES_DICT[{ch!r}]", form=_PYTHON
        )
        channels[ch] = ChannelBuild(
            cuda=_strs(dicts["CUDA_ARCHES_DICT"][ch], where=where, key=f"CUDA_ARCHES_DICT[{ch!r}]", form=_CUDA),
            rocm=_strs(
                dicts["ROCM_ARCHES_DICT"].get(ch, []), where=where, key=f"ROCM_ARCHES_DICT[{ch!r}]", form=_ROCM
            ),
            pythons=tuple(p for p in pythons if not p.endswith("t")),
        )
    cand = vals.get("CURRENT_CANDIDATE_VERSION")
    night = vals.get("CURRENT_NIGHTLY_VERSION")
    no_win = vals.get("CUDA_ARCHES_NO_WINDOWS", [])
    extra = tuple(m.group(1) for m in _LINUX_EXTRA.finditer(text))
    return BuildMatrix(
        stable=_version(vals.get("CURRENT_STABLE_VERSION"), where=where, key="CURRENT_STABLE_VERSION"),
        candidate=_version(cand, where=where, key="CURRENT_CANDIDATE_VERSION") if cand is not None else None,
        nightly=_version(night, where=where, key="CURRENT_NIGHTLY_VERSION") if night is not None else None,
        channels=channels,
        no_windows=_strs(no_win, where=where, key="CUDA_ARCHES_NO_WINDOWS", form=_CUDA) if no_win else (),
        linux_extra=extra,
    )


_SH = re.compile(r"^([A-Z0-9_]+_VERSION)=\$\{\1:-([^}]+)\}\s*$", re.MULTILINE)


def read_release_versions(text: str) -> dict[str, str]:
    """``PYTORCH_VERSION=${PYTORCH_VERSION:-2.12.1}`` lines -> {"PYTORCH_VERSION": "2.12.1", ...}."""
    return {m.group(1): m.group(2) for m in _SH.finditer(text)}


@dataclass(frozen=True, kw_only=True)
class Snapshot:
    """One revision of one upstream file."""

    commit: str
    date: str  # ISO commit date
    text: str

    def url(self, path: str = BUILD_MATRIX_PATH, repo: str = REPO_URL) -> str:
        return f"{repo}/blob/{self.commit[:12]}/{path}"


@dataclass(frozen=True, kw_only=True)
class ReleaseBuild:
    """What one torch release was built for, and the revision that says so."""

    version: str
    build: ChannelBuild
    channel: str  # "release" (went live in this revision) or "test" (still a candidate) / "nightly"
    snapshot: Snapshot
    linux_only: tuple[str, ...] = ()  # index names without a Windows build


def releases_from_history(snapshots: Iterable[Snapshot]) -> dict[str, ReleaseBuild]:
    """Per torch version, the build lists of the revision where it went live; for a version
    that has not gone live in the history, the newest revision's test (candidate) or
    nightly lists, marked as such."""
    ordered = list(snapshots)  # oldest first, as the history gives them
    out: dict[str, ReleaseBuild] = {}
    pending: dict[str, ReleaseBuild] = {}
    for i, snap in enumerate(ordered):
        try:
            bm = read_build_matrix(snap.text, where=snap.url())
        except DataError:
            continue  # a revision in the middle of a refactor; its neighbours carry the facts
        linux_only = tuple(cuda_tag(c) for c in (*bm.no_windows, *bm.linux_extra))
        # The first revision shows a release that went live before the history starts: not its go-live.
        if i == 0:
            out[bm.stable] = None  # type: ignore[assignment]
        elif bm.stable not in out and "release" in bm.channels:
            out[bm.stable] = ReleaseBuild(
                version=bm.stable,
                build=with_linux_extra(bm.channels["release"], bm.linux_extra),
                channel="release",
                snapshot=snap,
                linux_only=linux_only,
            )
        for version, ch in ((bm.candidate, "test"), (bm.nightly, "nightly")):
            if version and ch in bm.channels and version != bm.stable:
                prev = pending.get(version)
                # A candidate's test lists beat its earlier nightly lists.
                if prev is None or prev.channel == "nightly" or ch == "test":
                    pending[version] = ReleaseBuild(
                        version=version,
                        build=with_linux_extra(bm.channels[ch], bm.linux_extra),
                        channel=ch,
                        snapshot=snap,
                        linux_only=linux_only,
                    )
    for version, rb in pending.items():
        if out.get(version) is None:
            out[version] = rb
    return {k: v for k, v in out.items() if v is not None}
