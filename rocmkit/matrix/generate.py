"""Generate ``torch.toml`` and ``channels.toml`` facts from upstream's machine-readable sources.

Inputs (:class:`Inputs`, read live or replayed from a recording):

* the package index (PyPI's simple API by default): per torch release the
  CPython tags of its wheels (the Python span), the upload time (the release
  date) and the wheel's ``Requires-Dist`` (read from PEP 658 metadata or by
  HTTP range requests), which names the CUDA of PyPI's build; the companions'
  ``Requires-Dist`` says which torch each torchvision / torchaudio admits;
* pytorch/test-infra's build-matrix history: the CUDA / ROCm indexes each
  release was built for (the revision where it went live), the candidate's and
  nightly's lists, and the nightly version;
* ROCm/TheRock: the multi-arch index's ``device-gfxNNNN`` extras and Pythons.

Each fact written names its source: a URL at a commit, or the index URL with
the date it was read. Facts no source carries stay as the file has them (each
with its own hand-kept source); a variant that a release's build lists do not
name is dropped only when nothing else confirms it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from rocmkit.matrix.model import release_key
from rocmkit.matrix.upstream import testinfra, therock
from rocmkit.matrix.upstream.testinfra import ReleaseBuild, Snapshot, releases_from_history
from rocmkit.packages import torch_requirement
from rocmkit.pkgindex.pages import IndexFile, Metadata, ProjectPage, Wheel
from rocmkit.plan import Backend

GENERATED_PREFIXES = ("pypi_", "ti_", "therock_gen_", "pt_")
COMPANION_WINDOW_DAYS = 1  # a companion is published with its torch (same day, give or take)


@dataclass(frozen=True, kw_only=True)
class Inputs:
    read_on: str  # ISO date the index was read (a recording keeps its own)
    index_url: str  # "https://pypi.org/simple"
    pages: Mapping[str, ProjectPage]  # torch, torchvision, torchaudio
    metadata: Callable[[IndexFile], Metadata | None]
    build_history: tuple[Snapshot, ...] = ()
    release_versions: Snapshot | None = None
    therock_releases: Snapshot | None = None
    therock_matrix: Snapshot | None = None
    therock_whl_next: Snapshot | None = None  # the whl-next ownership manifest (device packages per stream)
    build_scripts: tuple[Snapshot, ...] = ()  # pytorch/pytorch's manywheel/build.sh, oldest first
    # jax.toml's inputs (rocmkit/matrix/jaxgen.py): the index pages of jax, jaxlib, the plugins, torch-xla
    jax_pages: Mapping[str, ProjectPage] = field(default_factory=dict)
    jax_read_on: str | None = None  # a recording's own date for those pages


@dataclass(kw_only=True)
class Outcome:
    torch_doc: dict[str, Any]
    channels_doc: dict[str, Any]
    notes: list[str] = field(default_factory=list)  # what could not be read or was left as it was


def _key(v: str) -> Version:
    return Version(v)


def _finals(page: ProjectPage | None, name: str) -> dict[str, list[Wheel]]:
    out: dict[str, list[Wheel]] = {}
    if page is None:
        return out
    for w in page.wheels(name):
        if w.version.is_prerelease or w.version.is_devrelease or w.version.local:
            continue
        out.setdefault(w.public, []).append(w)
    return out


def _day(wheels: list[Wheel]) -> str | None:
    times = sorted(w.file.upload_time for w in wheels if w.file.upload_time)
    return times[0][:10] if times else None


def _pythons(wheels: list[Wheel]) -> list[str]:
    found: set[str] = set()
    for w in wheels:
        found |= w.cpythons()
    return sorted(found, key=lambda p: tuple(int(x) for x in p.split(".")))


def _pick(wheels: list[Wheel]) -> Wheel:
    linux = sorted((w for w in wheels if w.is_linux_x86_64()), key=lambda w: w.file.filename)
    return (linux or sorted(wheels, key=lambda w: w.file.filename))[0]


_CUDA_REQ = (
    re.compile(r"^cuda-toolkit(?:\[[^\]]*\])?\s*==\s*(\d+)\.(\d+)"),
    re.compile(r"^nvidia-cuda-runtime(?:-cu\d+)?\s*==\s*(\d+)\.(\d+)"),
)


_TRITON_SPEC = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(==|~=)\s*([0-9][0-9A-Za-z.+]*)\s*$")


def triton_of_requires(requires: Sequence[str]) -> str | None:
    """The Triton a torch wheel requires, as it says it: "triton==3.7.1" or "triton~=3.8.0"."""
    from rocmkit.packages import TRITON_DISTRIBUTIONS, requirement_name

    for line in requires:
        if requirement_name(line) not in TRITON_DISTRIBUTIONS:
            continue
        m = _TRITON_SPEC.match(line.split(";", 1)[0].replace("(", "").replace(")", ""))
        return f"{m.group(1)}{m.group(2)}{m.group(3)}" if m else None
    return None


def cuda_of_requires(requires: tuple[str, ...]) -> str | None:
    """The CUDA a torch wheel is built with, from its CUDA runtime requirement ("cu130")."""
    for line in requires:
        spec = line.split(";", 1)[0].strip().replace(" (", "").rstrip(")")
        for rx in _CUDA_REQ:
            m = rx.match(spec)
            if m:
                return str(Backend.cuda_index(f"{m.group(1)}.{m.group(2)}"))
    return None


def _admits(requires: tuple[str, ...], torch_version: str) -> bool:
    req = torch_requirement(requires)
    if req is None:
        return True  # no torch requirement (torchaudio 2.11.0): it admits any
    try:
        return SpecifierSet(req[len("torch") :]).contains(torch_version)
    except InvalidSpecifier:
        return False


def _release_sort(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: _key(str(r["version"])))


def _index_order(index: str) -> tuple[int, tuple[int, ...]]:
    backend = Backend.parse(index)
    if backend.rocm is not None:
        return (0, release_key(backend.rocm))
    if backend.cuda is not None:
        return (1, release_key(backend.cuda))
    return (2, ())


def _add(lst: list[str], item: str) -> list[str]:
    return lst if item in lst else [*lst, item]


def generate(torch_doc: dict[str, Any], channels_doc: dict[str, Any], inputs: Inputs) -> Outcome:
    """New torch.toml and channels.toml documents; the inputs are not modified."""
    import copy

    tdoc = copy.deepcopy(torch_doc)
    cdoc = copy.deepcopy(channels_doc)
    out = Outcome(torch_doc=tdoc, channels_doc=cdoc)
    sources: dict[str, str] = {
        k: v for k, v in tdoc.get("sources", {}).items() if not k.startswith(GENERATED_PREFIXES)
    }
    used: dict[str, str] = {}

    torches = _finals(inputs.pages.get("torch"), "torch")
    companions = {name: _finals(inputs.pages.get(name), name) for name in ("torchvision", "torchaudio")}
    builds = releases_from_history(inputs.build_history) if inputs.build_history else {}
    rows: dict[str, dict[str, Any]] = {str(r["version"]): r for r in tdoc.get("release", [])}
    oldest = min((_key(v) for v in rows), default=Version("2.0.0"))

    def src(name: str, text: str) -> str:
        used[name] = text
        return name

    for version in sorted(torches, key=_key):
        if _key(version) >= oldest and version not in rows:
            rows[version] = {"version": version}
            out.notes.append(f"torch {version}: new release, on {inputs.index_url}/torch/")

    for version, row in rows.items():
        wheels = torches.get(version)
        row_sources: list[str] = list(row.get("sources", []))
        if wheels:
            pypi = src(
                "pypi_torch",
                f"{inputs.index_url}/torch/ (PEP 691 page read {inputs.read_on}: wheel CPython tags, "
                "upload-time, and Requires-Dist from each release's METADATA)",
            )
            pythons = _pythons(wheels)
            if pythons:
                row["python_min"], row["python_max"] = pythons[0], pythons[-1]
            day = _day(wheels)
            if day:
                row["released"] = dt.date.fromisoformat(day)
            row_sources = _add(row_sources, pypi)
            meta = inputs.metadata(_pick(wheels).file)
            pypi_cuda = cuda_of_requires(meta.requires_dist) if meta else None
            pypi_triton = triton_of_requires(meta.requires_dist) if meta else None
            if meta is None:
                out.notes.append(f"torch {version}: no metadata readable on {inputs.index_url}")
            for name, found in companions.items():
                pick = _companion(found, version, day, inputs.metadata)
                if pick is not None:
                    row[name] = pick
                    # Its Requires-Dist admitting this torch, published with it, is the confirmation.
                    rest = [u for u in row.get("unconfirmed", []) if u != name]
                    if rest:
                        row["unconfirmed"] = rest
                    else:
                        row.pop("unconfirmed", None)
                    row_sources = _add(
                        row_sources,
                        src(
                            f"pypi_{name}",
                            f"{inputs.index_url}/{name}/ (PEP 691 page read {inputs.read_on}: the release "
                            "published with each torch whose Requires-Dist admits it)",
                        ),
                    )
        else:
            pypi_cuda = pypi_triton = None
        build = builds.get(version) or _series_build(builds, version)
        if build is not None:
            row["variants"] = _variants(
                row.get("variants", []), build, version, pypi_cuda, src, out, tuple(row.get("not_built", ())),
                pypi_triton,
            )
            ti = _ti_source(build, version)
            row_sources = _add(row_sources, src(*ti))
        elif pypi_cuda:
            row["variants"] = _confirm_cuda(row.get("variants", []), pypi_cuda, src, pypi_triton)
        if inputs.release_versions is not None:
            rv = testinfra.read_release_versions(inputs.release_versions.text)
            if rv.get("PYTORCH_VERSION") == version:
                name = f"ti_rv_{inputs.release_versions.commit[:8]}"
                row_sources = _add(
                    row_sources,
                    src(
                        name,
                        f"{inputs.release_versions.url(testinfra.RELEASE_VERSIONS_PATH)} (PYTORCH_VERSION="
                        f"{version}, TORCHVISION_VERSION={rv.get('TORCHVISION_VERSION')}, "
                        f"TORCHAUDIO_VERSION={rv.get('TORCHAUDIO_VERSION')}, TRITON_VERSION={rv.get('TRITON_VERSION')})",
                    ),
                )
                if rv.get("TORCHVISION_VERSION") and row.get("torchvision") not in (
                    None,
                    rv["TORCHVISION_VERSION"],
                ):
                    out.notes.append(
                        f"torch {version}: release_versions.sh says torchvision {rv['TORCHVISION_VERSION']}, "
                        f"the index says {row.get('torchvision')}"
                    )
        row["sources"] = _canonical_sources(row_sources)
        for v in row.get("variants", []):
            if "sources" in v:
                v["sources"] = _canonical_sources(v["sources"])
        if not row.get("variants"):
            row["variants"] = [{"index": "cpu", "unconfirmed": ["*"]}]
            out.notes.append(f"torch {version}: no source lists its variants; cpu kept as unconfirmed")
    _ensure_rocm_indexes(tdoc, rows, out)
    _rocm_archs_from_script(tdoc, inputs, src, out)
    tdoc["release"] = _release_sort(list(rows.values()))
    tdoc["sources"] = _sources_table(torch_doc.get("sources", {}), sources, used, tdoc)
    _channels(cdoc, inputs, builds, out)
    return out


def _referenced(doc: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key in ("sources", "incomplete_sources", "override_sources") and isinstance(value, list):
                found |= {str(v) for v in value}
            elif key != "sources":
                found |= _referenced(value)
    elif isinstance(doc, list):
        for item in doc:
            found |= _referenced(item)
    return found


def _sources_table(
    old: Mapping[str, str], hand: dict[str, str], used: dict[str, str], doc: dict[str, Any]
) -> dict[str, str]:
    """Hand-kept sources, then the generated ones used now, sorted; a generated source that this
    run did not re-read (an index without metadata) stays while a kept fact still names it."""
    refs = _referenced(doc)
    kept = {k: v for k, v in old.items() if k.startswith(GENERATED_PREFIXES) and k in refs and k not in used}
    return {**hand, **dict(sorted({**kept, **used}.items()))}


def _companion(
    found: dict[str, list[Wheel]],
    torch_version: str,
    day: str | None,
    metadata: Callable[[IndexFile], Metadata | None],
) -> str | None:
    """The newest companion published within a day of ``day`` whose Requires-Dist admits torch."""
    if day is None:
        return None
    when = dt.date.fromisoformat(day)
    best: str | None = None
    for version in sorted(found, key=_key):
        cday = _day(found[version])
        if cday is None or abs((dt.date.fromisoformat(cday) - when).days) > COMPANION_WINDOW_DAYS:
            continue
        if cday > (when + dt.timedelta(days=COMPANION_WINDOW_DAYS)).isoformat():
            continue
        meta = metadata(_pick(found[version]).file)
        if meta is not None and _admits(meta.requires_dist, torch_version):
            best = version
    if best is None:
        # Published earlier (torchaudio 2.11.0 serves torch 2.12 and 2.13): the newest one before that
        # admits torch explicitly or by having no torch requirement.
        for version in sorted(found, key=_key, reverse=True):
            cday = _day(found[version])
            if cday is None or cday > when.isoformat():
                continue
            meta = metadata(_pick(found[version]).file)
            if meta is not None and _admits(meta.requires_dist, torch_version):
                return version
            if meta is not None:
                break
    return best


def _series_build(builds: dict[str, ReleaseBuild], version: str) -> ReleaseBuild | None:
    """A patch release the history does not reach (2.14.1): its series' newest build lists,
    as a candidate (unconfirmed) fact."""
    v = _key(version)
    same = [b for k, b in builds.items() if _key(k).release[:2] == v.release[:2] and _key(k) < v]
    if not same:
        return None
    newest = max(same, key=lambda b: _key(b.version))
    return ReleaseBuild(
        version=version,
        build=newest.build,
        channel="series",
        snapshot=newest.snapshot,
        linux_only=newest.linux_only,
    )


def _ti_source(build: ReleaseBuild, version: str) -> tuple[str, str]:
    snap = build.snapshot
    what = {
        "release": f"CURRENT_STABLE_VERSION = {version}: its release lists",
        "test": f"CURRENT_CANDIDATE_VERSION = {version}: the candidate's test lists",
        "nightly": f"CURRENT_NIGHTLY_VERSION = {version}: the nightly lists",
        "series": f"{build.version}'s lists, assumed for this patch release",
    }[build.channel]
    return (
        f"ti_{snap.commit[:8]}",
        f"{snap.url()} (committed {snap.date[:10]}; {what})",
    )


def _canonical_sources(names: list[str]) -> list[str]:
    """Hand-kept sources in their order, then the generated ones sorted: the same facts
    always render the same line."""
    hand = [n for n in names if not n.startswith(GENERATED_PREFIXES)]
    gen = sorted({n for n in names if n.startswith(GENERATED_PREFIXES)})
    return list(dict.fromkeys(hand)) + gen


def _lift_whole(variant: Mapping[str, Any]) -> list[str]:
    """A source now confirms the variant exists: "*" becomes the fields it still cannot
    vouch for (a Triton pin is read from the index, not from a build list)."""
    unconf = list(variant.get("unconfirmed", []))
    if "*" not in unconf:
        return unconf
    rest = [u for u in unconf if u != "*"]
    return [*(["triton"] if "triton" in variant and "triton" not in rest else []), *rest]


def _own_confirmed(variant: Mapping[str, Any]) -> bool:
    """A hand-kept variant with its own source that confirms it exists."""
    own = [s for s in variant.get("sources", []) if not str(s).startswith(GENERATED_PREFIXES)]
    return bool(own) and "*" not in variant.get("unconfirmed", [])


def _variants(
    existing: list[dict[str, Any]],
    build: ReleaseBuild,
    version: str,
    pypi_cuda: str | None,
    src: Callable[[str, str], str],
    out: Outcome,
    not_built: tuple[str, ...] = (),
    pypi_triton: str | None = None,
) -> list[dict[str, Any]]:
    by_index = {str(v["index"]): dict(v) for v in existing}
    ti_name, ti_text = _ti_source(build, version)
    # A hand-kept `not_built` (with its source) wins over a build list that named the index.
    listed = [i for i in build.build.indexes if i not in not_built]
    confirmed = build.channel == "release"
    result: dict[str, dict[str, Any]] = {}
    for index in listed:
        v = by_index.pop(index, {"index": index})
        srcs = [s for s in v.get("sources", []) if not str(s).startswith("ti_")]
        v["sources"] = _add(srcs, src(ti_name, ti_text))
        unconf = _lift_whole(v)
        if not confirmed and not _own_confirmed(v) and index != pypi_cuda:
            unconf = ["*", *unconf]
        if unconf:
            v["unconfirmed"] = unconf
        else:
            v.pop("unconfirmed", None)
        if index in build.linux_only:
            v["linux_only"] = True
        else:
            v.pop("linux_only", None)
        result[index] = v
    for index, v in by_index.items():
        if index in not_built:
            out.notes.append(f"torch {version}+{index}: dropped, the release row's not_built says it did not ship")
            continue
        if _own_confirmed(v):
            v["sources"] = [s for s in v.get("sources", []) if not str(s).startswith("ti_")]
            result[index] = v  # a hand-kept fact with its own source (a Linux-only build, say)
        else:
            out.notes.append(
                f"torch {version}+{index}: dropped, the build lists at {build.snapshot.commit[:8]} do not name it "
                "and no source confirms it"
            )
    if pypi_cuda:
        merged = _confirm_cuda(list(result.values()), pypi_cuda, src, pypi_triton)
        result = {str(v["index"]): v for v in merged}
    return [result[k] for k in sorted(result, key=_index_order)]


def _confirm_cuda(
    variants: list[dict[str, Any]], tag: str, src: Callable[[str, str], str], triton: str | None = None
) -> list[dict[str, Any]]:
    """PyPI's torch is the cuXYZ build its Requires-Dist names: that variant exists, and requires
    the Triton that Requires-Dist names (``==`` or, from 2.14 on, ``~=``)."""
    out = [dict(v) for v in variants]
    hit = next((v for v in out if v["index"] == tag), None)
    if hit is None:
        hit = {"index": tag}
        out.append(hit)
    hit["sources"] = _add([s for s in hit.get("sources", [])], "pypi_torch")
    if triton:
        hit["triton"] = triton
    unconf = _lift_whole(hit)
    if triton:
        unconf = [u for u in unconf if u != "triton"]
    if unconf:
        hit["unconfirmed"] = unconf
    else:
        hit.pop("unconfirmed", None)
    return sorted(out, key=lambda v: _index_order(str(v["index"])))


def _ensure_rocm_indexes(tdoc: dict[str, Any], rows: dict[str, dict[str, Any]], out: Outcome) -> None:
    known = {str(r["name"]): r for r in tdoc.get("rocm_index", [])}
    needed = {
        str(v["index"])
        for r in rows.values()
        for v in r.get("variants", [])
        if Backend.parse(str(v["index"])).rocm is not None
    }
    for name in sorted(needed - set(known), key=_index_order):
        newest = max(known.values(), key=lambda r: _index_order(str(r["name"])))
        known[name] = {
            "name": name,
            "archs": list(newest["archs"]),
            "sources": list(newest.get("sources", [])),
            "unconfirmed": ["archs"],
            "note": f"new index: archs copied from {newest['name']} until PYTORCH_ROCM_ARCH of a release is read",
        }
        out.notes.append(
            f"{name}: new ROCm index; its arch list is copied from {newest['name']} (unconfirmed)"
        )
    tdoc["rocm_index"] = [known[k] for k in sorted(known, key=_index_order)]


def _rocm_archs_from_script(
    tdoc: dict[str, Any], inputs: Inputs, src: Callable[[str, str], str], out: Outcome
) -> None:
    """The arch list of each ROCm index that pytorch's build script names by version (the 7.14
    path): PYTORCH_ROCM_ARCH as that branch sets it. Indexes built by the script's catch-all
    branch keep their measured lists (older wheels on them predate today's list)."""
    from rocmkit.matrix.upstream import pytorch

    if not inputs.build_scripts:
        return
    from rocmkit.errors import DataError

    snap = inputs.build_scripts[-1]
    for row in tdoc.get("rocm_index", []):
        rocm = Backend.parse(str(row["name"])).rocm or ""
        try:
            if not pytorch.names_version(snap.text, rocm):
                continue
            archs = list(pytorch.rocm_archs(snap.text, rocm))
        except DataError as exc:
            # A new layout of the script: the lists stay as they are, and the note says why.
            out.notes.append(f"{pytorch.BUILD_SH_PATH} at {snap.commit[:8]}: {exc.message}; arch lists kept")
            return
        when = "commit date not recorded" if not snap.date[:1].isdigit() else f"committed {snap.date[:10]}"
        key = src(
            f"pt_{snap.commit[:8]}",
            f"{snap.url(pytorch.BUILD_SH_PATH, pytorch.REPO_URL)} ({when}; PYTORCH_ROCM_ARCH of the ROCm "
            "branches that name their version)",
        )
        if row.get("archs") != archs:
            out.notes.append(f"{row['name']}: archs from {pytorch.BUILD_SH_PATH} at {snap.commit[:8]}: {', '.join(archs)}")
        row["archs"] = archs
        row["sources"] = [key]
        rest = [u for u in row.get("unconfirmed", []) if u != "archs"]
        if rest:
            row["unconfirmed"] = rest
        else:
            row.pop("unconfirmed", None)
        row.pop("note", None)


def _whl_next_archs(chans: dict[str, dict[str, Any]], snap: Snapshot, used: dict[str, str]) -> None:
    """Each AMD channel's archs: the targets whose device packages the whl-next index serves on its
    stream (TheRock's ownership manifest)."""
    devices = therock.whl_next_devices(snap.text)
    key = f"therock_gen_whl_next_{snap.commit[:8]}"
    for chan in chans.values():
        if chan.get("kind") != "amd" or str(chan.get("stream")) not in devices:
            continue
        used[key] = (
            f"{snap.url(therock.WHL_NEXT_PATH, therock.REPO_URL)} (the /rocm/whl-next packages of each "
            "release stream: the targets with amd-torch-device-, amd-torchvision-device- and rocm-sdk-device- "
            "packages on it)"
        )
        chan["archs"] = list(devices[str(chan["stream"])])
        chan["sources"] = _add([s for s in chan.get("sources", []) if not s.startswith("therock_gen_whl_next_")], key)
        rest = [u for u in chan.get("unconfirmed", []) if u != "archs"]
        if rest:
            chan["unconfirmed"] = rest
        else:
            chan.pop("unconfirmed", None)


def _channels(cdoc: dict[str, Any], inputs: Inputs, builds: dict[str, ReleaseBuild], out: Outcome) -> None:
    csrc: dict[str, str] = {
        k: v for k, v in cdoc.get("sources", {}).items() if not k.startswith(GENERATED_PREFIXES)
    }
    used: dict[str, str] = {}
    chans = {str(c["name"]): c for c in cdoc.get("channel", [])}
    if inputs.build_history:
        head = inputs.build_history[-1]
        bm = testinfra.read_build_matrix(head.text, where=head.url())
        nightly = chans.get("nightly")
        if nightly is not None and "nightly" in bm.channels and bm.nightly:
            key = f"ti_{head.commit[:8]}"
            used[key] = (
                f"{head.url()} (committed {head.date[:10]}; CURRENT_NIGHTLY_VERSION = {bm.nightly}, nightly lists)"
            )
            nightly["indexes"] = sorted(bm.channels["nightly"].indexes, key=_index_order)
            nightly["torch_min"] = f"{bm.nightly}.dev0"
            nightly["sources"] = _add([s for s in nightly.get("sources", []) if not s.startswith("ti_")], key)
            rest = [u for u in nightly.get("unconfirmed", []) if u not in ("indexes", "torch_min")]
            if rest:
                nightly["unconfirmed"] = rest
            else:
                nightly.pop("unconfirmed", None)
    # AMD's nightly channel (named "therock" before AMD's stable and rc channels were added).
    rock = chans.get("amd-nightly") or next(
        (c for c in chans.values() if "therock" in c.get("aliases", [])), chans.get("therock")
    )
    if rock is not None and inputs.therock_releases is not None:
        snap = inputs.therock_releases
        key = f"therock_gen_{snap.commit[:8]}"
        url = snap.url(therock.RELEASES_PATH, therock.REPO_URL)
        used[key] = f"{url} (the device-gfxNNNN extras of the multi-arch index)"
        extras = therock.device_extras(snap.text)
        # RELEASES.md's table is the multi-arch index's (legacy_url). With TheRock's whl-next manifest
        # read as well, the channel's own index (url) takes the manifest's list and this one is kept
        # for the older index; without it, the table stands for both.
        whl_next = therock.whl_next_devices(inputs.therock_whl_next.text) if inputs.therock_whl_next else {}
        if str(rock.get("stream")) in whl_next and rock.get("legacy_url"):
            rock["legacy_archs"] = list(extras)
        else:
            rock["archs"] = list(extras)
            rock.pop("legacy_archs", None)
        srcs = [s for s in rock.get("sources", []) if not s.startswith("therock_gen_")]
        srcs = _add(srcs, key)
        if inputs.therock_matrix is not None:
            msnap = inputs.therock_matrix
            pys = therock.release_pythons(msnap.text)
            pkey = f"therock_gen_py_{msnap.commit[:8]}"
            used[pkey] = (
                f"{msnap.url(therock.RELEASE_MATRIX_PATH, therock.REPO_URL)} (RELEASE_PYTHON_VERSIONS: "
                "the CPythons its torch wheels are built for)"
            )
            rock["python_min"], rock["python_max"] = pys[0], pys[-1]
            srcs = _add(srcs, pkey)
        rock["sources"] = srcs
    if inputs.therock_whl_next is not None:
        _whl_next_archs(chans, inputs.therock_whl_next, used)
    cdoc["sources"] = _sources_table(dict(cdoc.get("sources", {})), csrc, used, cdoc)
