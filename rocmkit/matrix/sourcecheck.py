"""``rocmkit matrix check --sources``: re-read each fact's source and list what it does not state.

Independent of the generator (which would only agree with itself): every
confirmed fact that cites a machine-readable source is checked against that
source as a reader would check it:

* ``ti_<commit>``: pytorch/test-infra's ``generate_binary_build_matrix.py`` at that
  commit: a variant of torch X.Y.Z must be in the lists of the channel where that
  file names X.Y.Z (release: ``CURRENT_STABLE_VERSION``, test: ``..._CANDIDATE_...``,
  nightly: ``..._NIGHTLY_...``); the nightly channel's ``torch_min`` and index list;
* ``ti_rv_<commit>``: ``release/release_versions.sh``: the companions' versions;
* ``pypi_torch`` / ``pypi_torchvision`` / ``pypi_torchaudio``: the simple index's
  page: the release's CPython span and upload day, and that the companion exists;
* ``therock_gen_*``: TheRock's ``RELEASES.md`` (device extras) and its release
  matrix script (CPythons);
* ``pt_<commit>``: pytorch/pytorch's ``.ci/docker/manywheel/build.sh``: a ROCm index's
  arch list is the ``PYTORCH_ROCM_ARCH`` of the branch that names its version;
* ``therock_gen_whl_next_<commit>``: TheRock's whl-next ownership manifest: an AMD channel's
  archs are the targets with device packages on its stream;
* jax.toml (``pypi_jax``, ``pypi_torch_xla``): :mod:`rocmkit.matrix.jaxcheck`;
* companions.toml (a wheel's code objects): :mod:`rocmkit.companions.sourcecheck`, passed in.

The report says where the sources were read from (the recording, a clone, or live), and
each source that could not be read, with the reason.

A fact's source is read from a recording (``tests/data/upstream`` layout: files
at their commits, the index pages of one date) when it holds it, else live
(GitHub's raw files at the commit, the index) unless ``offline``. Facts whose
sources are all hand-kept (a RELEASE.md row, an issue thread) are counted, not
judged: no program can re-read prose. Facts marked unconfirmed are not checked:
the data already says no source confirms them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from rocmkit.matrix.model import Matrix, TorchRelease, TorchVariant
from rocmkit.matrix.sourceread import GITHUB_BLOB, Report, Sources, check_release_wheels
from rocmkit.matrix.upstream import testinfra, therock
from rocmkit.matrix.upstream.testinfra import BuildMatrix, ChannelBuild
from rocmkit.pkgindex.pages import (
    ProjectPage,
    Wheel,
)

if TYPE_CHECKING:
    from rocmkit.matrix.jaxdata import JaxData

_CHANNEL_OF = {"release": "stable", "test": "candidate", "nightly": "nightly"}


def _url_of(text: str) -> str | None:
    m = GITHUB_BLOB.search(text)
    return m.group(0) if m else None


def _index_of(text: str) -> tuple[str, str] | None:
    """ "https://pypi.org/simple/torch/ (PEP 691 page read ...)" -> ("https://pypi.org/simple", "torch")."""
    m = re.match(r"(https?://\S+?)/([A-Za-z0-9._-]+)/\s", text + " ")
    return (m.group(1), m.group(2)) if m else None


def _finals(page: ProjectPage, name: str, version: str) -> list[Wheel]:
    return [w for w in page.wheels(name) if w.public == version and not w.local]


def _channel_for(bm: BuildMatrix, version: str) -> ChannelBuild | None:
    for channel, attr in _CHANNEL_OF.items():
        if getattr(bm, attr) == version and channel in bm.channels:
            return testinfra.with_linux_extra(bm.channels[channel], bm.linux_extra)
    return None


def check_sources(
    m: Matrix,
    sources: Sources,
    jax: JaxData | None = None,
    more: Sequence[Callable[[Sources, Report], None]] = (),
) -> Report:
    """Every confirmed machine-sourced fact of ``m`` (and of ``jax``, jax.toml, when given) re-read;
    ``more`` are the checks of other data files (companions.toml's), run before the report is
    closed (matrix/ knows no feature that owns a file: the registry, datafiles.py, passes them)."""
    rep = Report()
    texts = m.sources.get("torch.toml", {})

    def build_matrix(key: str) -> BuildMatrix | None:
        url = _url_of(texts.get(key, ""))
        text = sources.github_file(url) if url else None
        if text is None:
            rep.unreadable.append(f"torch.toml [sources] {key}: {url or texts.get(key)}")
            return None
        return testinfra.read_build_matrix(text, where=url or key)

    cache: dict[str, BuildMatrix | None] = {}

    def bm_of(key: str) -> BuildMatrix | None:
        if key not in cache:
            cache[key] = build_matrix(key)
        return cache[key]

    for rel in m.torch_releases:
        _check_release(rel, m, texts, sources, bm_of, rep)
    _check_rocm_indexes(m, texts, sources, rep)
    _check_channels(m, sources, rep)
    if jax is not None:
        from rocmkit.matrix.jaxcheck import check_jax

        check_jax(jax, sources, rep)
    for check in more:
        check(sources, rep)
    rep.unreadable = sorted({_with_reason(line, sources.failures) for line in rep.unreadable})
    rep.read_from = dict(sources.origins)
    return rep


def _with_reason(line: str, failures: dict[str, str]) -> str:
    """An unreadable source's line, with why it could not be read."""
    for url, why in failures.items():
        if url in line or url.rstrip("/") in line:
            return f"{line} ({why})"
    return line


def _check_rocm_indexes(m: Matrix, texts: dict[str, str], sources: Sources, rep: Report) -> None:
    """A ROCm index's arch list that cites pytorch's build script is that script's list."""
    from rocmkit.matrix.upstream import pytorch

    for index in m.rocm_indexes.values():
        keys = [k for k in index.sources if k.startswith("pt_")]
        if not keys or not index.is_confirmed("archs"):
            continue
        for key in keys:
            url = _url_of(texts.get(key, ""))
            text = sources.github_file(url) if url else None
            if text is None:
                rep.unreadable.append(f"torch.toml [sources] {key}: {url or texts.get(key)}")
                continue
            rep.checked += 1
            said = pytorch.rocm_archs(text, index.rocm)
            if set(said) != set(index.archs):
                rep.not_stated.append(
                    f"torch.toml rocm_index {index.name} archs {' '.join(index.archs)}: {url} builds "
                    f"ROCm {index.rocm} with {' '.join(said)}"
                )


def _is_ti(key: str) -> bool:
    return key.startswith("ti_") and not key.startswith("ti_rv_")


def _check_release(
    rel: TorchRelease,
    m: Matrix,
    texts: dict[str, str],
    sources: Sources,
    bm_of: Callable[[str], BuildMatrix | None],
    rep: Report,
) -> None:
    where = f"torch.toml release {rel.version}"
    machine = [s for s in rel.sources if _is_ti(s) or s.startswith(("ti_rv_", "pypi_"))]
    if not machine:
        rep.hand_kept += 1
    if "pypi_torch" in rel.sources:
        loc = _index_of(texts.get("pypi_torch", ""))
        page = sources.page(*loc) if loc else None
        if page is None:
            rep.unreadable.append(f"torch.toml [sources] pypi_torch: {texts.get('pypi_torch')}")
        else:
            wheels = _finals(page, "torch", rel.version)
            python = (rel.python_min, rel.python_max)
            check_release_wheels(rep, where, page, f"torch {rel.version}", wheels, python, rel.released)
    for name, version in (("torchvision", rel.torchvision), ("torchaudio", rel.torchaudio)):
        key = f"pypi_{name}"
        if version is None or key not in rel.sources or not rel.is_confirmed(name):
            continue
        loc = _index_of(texts.get(key, ""))
        page = sources.page(*loc) if loc else None
        if page is None:
            rep.unreadable.append(f"torch.toml [sources] {key}: {texts.get(key)}")
            continue
        rep.checked += 1
        if not _finals(page, name, version):
            rep.not_stated.append(f"{where}: {name} {version}, which {page.url} does not have")
    for key in (s for s in rel.sources if s.startswith("ti_rv_")):
        url = _url_of(texts.get(key, ""))
        text = sources.github_file(url) if url else None
        if text is None:
            rep.unreadable.append(f"torch.toml [sources] {key}: {url}")
            continue
        rv = testinfra.read_release_versions(text)
        rep.checked += 1
        if rv.get("PYTORCH_VERSION") != rel.version:
            rep.not_stated.append(f"{where}: {url} is about torch {rv.get('PYTORCH_VERSION')}")
            continue
        for name, version in (("torchvision", rel.torchvision), ("torchaudio", rel.torchaudio)):
            said = rv.get(f"{name.upper()}_VERSION")
            if said and version and said != version:
                rep.not_stated.append(f"{where}: {name} {version}, but {url} says {said}")
    ti = [s for s in rel.sources if _is_ti(s)]
    for v in rel.variants:
        _check_variant(rel, v, ti, texts, bm_of, lambda: _pypi_cuda(rel, texts, sources), rep)
        if v.kind == "cuda" and v.triton and "pypi_torch" in v.sources and v.is_confirmed("triton"):
            _check_cuda_triton(rel, v, texts, sources, rep)
    # What the go-live revision lists and the data lacks.
    for key in ti:
        bm = bm_of(key)
        build = bm.channels.get("release") if bm is not None and bm.stable == rel.version else None
        if build is None:
            continue
        for index in build.indexes:
            if rel.variant(index) is None:
                rep.not_stated.append(
                    f"{where}: {_url_of(texts[key])} lists {index} for it; torch.toml does not"
                )


def _check_variant(
    rel: TorchRelease,
    v: TorchVariant,
    release_ti: list[str],
    texts: dict[str, str],
    bm_of: Callable[[str], BuildMatrix | None],
    pypi_cuda: Callable[[], str | None],
    rep: Report,
) -> None:
    if not v.is_confirmed():
        return
    keys = [s for s in v.sources if _is_ti(s)] or ([] if v.sources else release_ti)
    on_pypi = v.kind == "cuda" and "pypi_torch" in v.sources
    if not keys and not on_pypi:
        rep.hand_kept += 1
        return
    said: list[str] = []
    contradicted = False
    for key in keys:
        bm = bm_of(key)
        if bm is None:
            return
        build = _channel_for(bm, rel.version)
        if build is not None and v.index in build.indexes:
            rep.checked += 1
            return
        if build is not None:
            # The file names this release and lists its builds: a variant outside them is wrong.
            contradicted = True
            said.append(f"{_url_of(texts[key])} lists {' '.join(build.indexes)}")
        else:
            said.append(f"{_url_of(texts[key])} does not name torch {rel.version}")
    if on_pypi:
        cuda = pypi_cuda()
        if cuda == v.index:
            rep.checked += 1
            return
        if cuda == UNREAD:
            return  # the page is listed as unreadable; nothing can be said
        said.append(f"the PyPI wheel's Requires-Dist names {cuda or 'no CUDA runtime'}")
    hand = [s for s in v.sources if not (_is_ti(s) or s.startswith(("ti_rv_", "pypi_")))]
    if hand and not contradicted:
        rep.hand_kept += 1  # the machine-readable sources are silent on it; a hand-kept one carries it
        return
    rep.checked += 1
    rep.not_stated.append(f"torch.toml release {rel.version} variant {v.index}: " + "; ".join(said))


UNREAD = "?"  # the PyPI page or the wheel's metadata could not be read


def _check_cuda_triton(rel: TorchRelease, v: TorchVariant, texts: dict[str, str], sources: Sources, rep: Report) -> None:
    """PyPI's CUDA build requires exactly the Triton the variant names (``==`` or ``~=``)."""
    from rocmkit.matrix.generate import triton_of_requires

    loc = _index_of(texts.get("pypi_torch", ""))
    page = sources.page(*loc) if loc else None
    if page is None:
        return  # listed as unreadable by the release's own check
    linux = sorted(
        (w for w in _finals(page, "torch", rel.version) if w.is_linux_x86_64()), key=lambda w: w.file.filename
    )
    requires = sources.requires(page, linux[0]) if linux else None
    if requires is None:
        return
    rep.checked += 1
    said = triton_of_requires(requires)
    if said != v.triton:
        rep.not_stated.append(
            f"torch.toml release {rel.version} variant {v.index}: triton {v.triton}, but PyPI's wheel "
            f"requires {said or 'no Triton'}"
        )


def _pypi_cuda(rel: TorchRelease, texts: dict[str, str], sources: Sources) -> str | None:
    """The CUDA of PyPI's own torch wheel of ``rel`` (its cuda-toolkit / nvidia-cuda-runtime pin);
    None when it names none, ``UNREAD`` when it cannot be read."""
    from rocmkit.matrix.generate import cuda_of_requires

    loc = _index_of(texts.get("pypi_torch", ""))
    page = sources.page(*loc) if loc else None
    if page is None:
        return UNREAD
    linux = sorted(
        (w for w in _finals(page, "torch", rel.version) if w.is_linux_x86_64()), key=lambda w: w.file.filename
    )
    if not linux:
        return None
    requires = sources.requires(page, linux[0])
    return cuda_of_requires(requires) if requires is not None else UNREAD


def _check_channels(m: Matrix, sources: Sources, rep: Report) -> None:
    texts = m.sources.get("channels.toml", {})
    nightly = m.channels.get("nightly")
    if nightly is not None:
        for key in (s for s in nightly.sources if _is_ti(s)):
            url = _url_of(texts.get(key, ""))
            text = sources.github_file(url) if url else None
            if text is None:
                rep.unreadable.append(f"channels.toml [sources] {key}: {url}")
                continue
            bm = testinfra.read_build_matrix(text, where=url or key)
            build = bm.channels.get("nightly")
            if nightly.is_confirmed("torch_min"):
                rep.checked += 1
                if not bm.nightly or _v(nightly.torch_min) != _v(f"{bm.nightly}.dev0"):
                    rep.not_stated.append(
                        f"channels.toml nightly torch_min {nightly.torch_min}: {url} has "
                        f"CURRENT_NIGHTLY_VERSION = {bm.nightly}"
                    )
            if build is not None and nightly.is_confirmed("indexes"):
                rep.checked += 1
                if set(nightly.indexes) != set(build.indexes):
                    rep.not_stated.append(
                        f"channels.toml nightly indexes {' '.join(nightly.indexes)}: {url} lists "
                        f"{' '.join(build.indexes)}"
                    )
    # AMD's channels: amd-nightly against RELEASES.md and the release matrix script; every AMD
    # channel citing the whl-next ownership manifest against its stream's device packages.
    for chan in {id(c): c for c in m.channels.values() if c.kind == "amd"}.values():
        for key in chan.sources:
            if not key.startswith("therock_gen_"):
                continue
            url = _url_of(texts.get(key, ""))
            text = sources.github_file(url) if url else None
            if text is None:
                rep.unreadable.append(f"channels.toml [sources] {key}: {url}")
                continue
            if url and url.endswith(therock.WHL_NEXT_PATH):
                if not chan.is_confirmed("archs"):
                    continue
                rep.checked += 1
                served = therock.whl_next_devices(text).get(chan.stream or "")
                if served is None or set(chan.archs) != set(served):
                    rep.not_stated.append(
                        f"channels.toml {chan.name} archs: {url} serves device packages on the "
                        f"{chan.stream} stream for {' '.join(served) if served else 'no target'}"
                    )
            elif url and url.endswith(therock.RELEASES_PATH):
                # RELEASES.md's table is the multi-arch index's: legacy_archs where the channel has them.
                field_name, listed = ("legacy_archs", chan.legacy_archs) if chan.legacy_archs else ("archs", chan.archs)
                rep.checked += 1
                extras = set(therock.device_extras(text))
                if set(listed) != extras:
                    rep.not_stated.append(
                        f"channels.toml {chan.name} {field_name}: {url} has device extras for {' '.join(sorted(extras))}"
                    )
            elif url and url.endswith(therock.RELEASE_MATRIX_PATH):
                rep.checked += 1
                pys = therock.release_pythons(text)
                if pys and (chan.python_min, chan.python_max) != (pys[0], pys[-1]):
                    rep.not_stated.append(
                        f"channels.toml {chan.name} Python {chan.python_min}-{chan.python_max}: {url} builds "
                        f"{pys[0]}-{pys[-1]}"
                    )


def _v(text: str | None) -> Version | None:
    try:
        return Version(text) if text else None
    except InvalidVersion:
        return None
