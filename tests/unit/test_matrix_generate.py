"""The generator on recorded upstream inputs (tests/data/upstream), no network.

The shipped torch.toml and channels.toml must be exactly what the generator makes
from the recordings; a release the index adds is written with no hand edit.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from rocmkit.errors import DataError
from rocmkit.matrix import parse_matrix
from rocmkit.matrix.fields import read_toml
from rocmkit.matrix.generate import cuda_of_requires
from rocmkit.matrix.inputs import build_inputs, recorded_index, recorded_upstream, recording_meta
from rocmkit.matrix.render import header_of, render
from rocmkit.matrix.upstream import testinfra, therock
from rocmkit.matrix.upstream.history import recorded_history
from rocmkit.matrix.upstream.testinfra import read_build_matrix, read_release_versions, releases_from_history
from rocmkit.matrix.write import GENERATED, TOP_ORDER, plan_refresh, write_refresh
from tests.conftest import DATA, REPO

RECORDING = DATA / "upstream"
MATRICES = REPO / "matrices"


def _inputs(recording: Path = RECORDING):  # type: ignore[no-untyped-def]
    pages, meta = recorded_index(recording)
    m = recording_meta(recording)
    return build_inputs(
        index_url=m["index_url"],
        pages=pages,
        metadata=meta,
        upstream=recorded_upstream(recording),
        read_on=m["read_on"],
    )


def _history() -> list[testinfra.Snapshot]:
    return recorded_history(RECORDING / "test-infra", testinfra.BUILD_MATRIX_PATH)


# -- readers -------------------------------------------------------------------


def test_build_matrix_reader_on_the_recorded_head() -> None:
    bm = read_build_matrix(_history()[-1].text)
    assert (bm.stable, bm.candidate, bm.nightly) == ("2.13.0", "2.14.0", "2.15.0")
    assert bm.channels["release"].indexes == ("rocm7.1", "rocm7.2", "cu126", "cu130", "cu132", "cpu")
    assert bm.channels["nightly"].rocm == ("7.2", "7.14")
    # Free-threaded builds (3.14t) are not separate Python spans.
    assert bm.channels["release"].pythons == ("3.10", "3.11", "3.12", "3.13", "3.14")
    assert bm.no_windows == ("13.4",)


def test_history_rebuilds_each_release_from_its_go_live_revision() -> None:
    builds = releases_from_history(_history())
    assert "2.0.1" not in builds  # went live before the recorded history starts
    # The 2023-2024 revisions: 2.1.x went out for ROCm 5.5 and 5.6, 2.2.x for 5.6 and 5.7, 2.3.x for 5.7 and 6.0.
    assert builds["2.1.0"].build.rocm == ("5.5", "5.6") and builds["2.1.2"].build.rocm == ("5.5", "5.6")
    assert builds["2.2.1"].build.rocm == ("5.6", "5.7") and builds["2.3.0"].build.rocm == ("5.7", "6.0")
    b = builds["2.12.0"]
    assert b.channel == "release" and b.snapshot.commit.startswith("626d4e70")
    # 2.12.0 was never built for cu128 (the data once said it was).
    assert b.build.indexes == ("rocm7.1", "rocm7.2", "cu126", "cu130", "cu132", "cpu")
    assert builds["2.10.0"].build.rocm == ("7.0", "7.1")
    assert builds["2.14.0"].channel == "test" and "rocm7.14" in builds["2.14.0"].build.indexes
    assert builds["2.15.0"].channel == "nightly"


def test_build_matrix_reader_refuses_what_it_cannot_read() -> None:
    with pytest.raises(DataError, match="not valid Python"):
        read_build_matrix("CUDA_ARCHES_DICT = {")
    with pytest.raises(DataError, match="CUDA_ARCHES_DICT is missing"):
        read_build_matrix("CURRENT_STABLE_VERSION = '2.1.0'\n")
    # Computed values are never executed: a call is not a literal.
    text = _history()[-1].text.replace('CURRENT_STABLE_VERSION = "2.13.0"', "CURRENT_STABLE_VERSION = f()")
    with pytest.raises(DataError, match="CURRENT_STABLE_VERSION is missing"):
        read_build_matrix(text)


def test_release_versions_sh() -> None:
    (snap,) = recorded_history(RECORDING / "test-infra", testinfra.RELEASE_VERSIONS_PATH)
    rv = read_release_versions(snap.text)
    assert rv["PYTORCH_VERSION"] == "2.12.1" and rv["TORCHVISION_VERSION"] == "0.27.1"
    assert rv["TRITON_VERSION"] == "3.7.1"


def test_therock_readers() -> None:
    (rel,) = recorded_history(RECORDING / "therock", therock.RELEASES_PATH)
    extras = therock.device_extras(rel.text)
    assert {"gfx942", "gfx1151", "gfx1103", "gfx900", "gfx1010"} <= set(extras)
    (mat,) = recorded_history(RECORDING / "therock", therock.RELEASE_MATRIX_PATH)
    assert therock.release_pythons(mat.text) == ("3.10", "3.11", "3.12", "3.13", "3.14")
    with pytest.raises(DataError):
        therock.device_extras("# no table here\n")


def test_whl_next_manifest_reader() -> None:
    # TheRock's ownership manifest at 89553ce3: gfx900/gfx906/gfx90c device packages on dev and
    # nightly only, gfx1250 on every stream (bkc has nothing else); family packages (gfx110x) are no target.
    (snap,) = recorded_history(RECORDING / "therock", therock.WHL_NEXT_PATH)
    devices = therock.whl_next_devices(snap.text)
    assert set(devices) == {"dev", "nightly", "rc", "bkc", "stable", "stable-staging"}
    assert devices["bkc"] == ("gfx1250",)
    assert {"gfx900", "gfx906", "gfx90c"} <= set(devices["nightly"])
    assert devices["stable"] == devices["rc"] and not {"gfx900", "gfx906", "gfx90c"} & set(devices["stable"])
    assert len(devices["stable"]) == 25 and "gfx1250" in devices["stable"] and "gfx110x" not in devices["nightly"]
    # A package that lists its own streams; one whose torchvision package is missing is no target.
    text = (
        "streams:\n  known:\n    - nightly\n    - stable\n  groups:\n    all:\n      - nightly\n      - stable\n"
        "  default: all\npython_indexes:\n  - public_base: /rocm/whl-next\n    packages:\n"
        "      amd-torch-device-gfx942:\n      amd-torchvision-device-gfx942:\n"
        "      rocm-sdk-device-gfx942:\n        streams:\n          - nightly\n"
        "      amd-torch-device-gfx950:\n      rocm-sdk-device-gfx950:\n"
    )
    assert therock.whl_next_devices(text) == {"nightly": ("gfx942",), "stable": ()}
    for bad in ("streams: {known: [nightly]}\n", "python_indexes: []\n", "streams:\n  known:\n    - nightly\n"):
        with pytest.raises(DataError, match=r"rocm_whl_next_ownership\.yaml"):
            therock.whl_next_devices(bad)


def test_cuda_of_requires_dist() -> None:
    assert cuda_of_requires(('cuda-toolkit[cublas,cudart]==13.0.3; platform_system == "Linux"',)) == "cu130"
    assert cuda_of_requires(("nvidia-cuda-runtime-cu12==12.4.127; platform_system == 'Linux'",)) == "cu124"
    assert cuda_of_requires(("filelock",)) is None


# -- the generator ---------------------------------------------------------------


def test_shipped_data_is_exactly_what_the_generator_makes() -> None:
    result = plan_refresh(MATRICES, _inputs())
    assert result.changed == [], result.diff()[:4000]


def test_a_companion_its_own_metadata_admits_is_confirmed(tmp_path: Path) -> None:
    # torchvision 0.24.1 and torchaudio 2.9.1 (both Requires-Dist torch==2.9.1, published with it):
    # a hand mark that calls them unconfirmed is dropped by the generator.
    folder = tmp_path / "matrices"
    shutil.copytree(MATRICES, folder)
    path = folder / "torch.toml"
    text = path.read_text()
    at = text.index('version = "2.9.1"')
    path.write_text(text[:at] + text[at:].replace("variants = [", 'unconfirmed = ["torchvision", "torchaudio"]\nvariants = [', 1))
    assert not next(r for r in parse_matrix(folder).torch_releases if r.version == "2.9.1").is_confirmed("torchvision")
    write_refresh(folder, plan_refresh(folder, _inputs()), source_dir=folder)
    rel = next(r for r in parse_matrix(folder).torch_releases if r.version == "2.9.1")
    assert (rel.torchvision, rel.torchaudio) == ("0.24.1", "2.9.1") and rel.unconfirmed == ()


def test_render_round_trips_the_shipped_files() -> None:
    for name in GENERATED:
        text = (MATRICES / name).read_text()
        assert render(read_toml(MATRICES / name), header=header_of(text), top_order=TOP_ORDER[name]) == text


def test_generated_facts_the_issue_names() -> None:
    m = parse_matrix(MATRICES)
    rel = {r.version: r for r in m.torch_releases}
    assert {"2.14.0", "2.14.1", "2.15.0"} <= set(rel)
    assert (rel["2.15.0"].python_min, rel["2.15.0"].python_max) == ("3.11", "3.15")
    assert rel["2.15.0"].released == "2026-10-28" and rel["2.14.1"].released == "2026-09-30"
    assert rel["2.13.0"].python_max == "3.14"  # no cp315 wheel exists
    assert rel["2.12.0"].variant("cu128") is None  # never built
    assert rel["2.2.0"].python_max == "3.12"
    # Linux-only builds: cu129 from 2.9.1 to 2.11.0 (test-infra appends 12.9 for Linux), cu134 (no Windows).
    for version in ("2.9.1", "2.10.0", "2.11.0"):
        cu129 = rel[version].variant("cu129")
        assert cu129 is not None and cu129.linux_only and cu129.is_confirmed(), version
    assert rel["2.9.0"].variant("cu129") is None and rel["2.12.0"].variant("cu129") is None
    cu134 = rel["2.15.0"].variant("cu134")
    assert cu134 is not None and cu134.linux_only
    assert not any(v.linux_only for v in rel["2.13.0"].variants)
    assert (rel["2.14.0"].torchvision, rel["2.14.1"].torchvision, rel["2.15.0"].torchvision) == (
        "0.29.0",
        "0.29.1",
        "0.29.2",
    )
    assert rel["2.15.0"].torchaudio == "2.11.1" and rel["2.14.0"].torchaudio == "2.11.0"
    nightly = m.channels["nightly"]
    assert "cu128" not in nightly.indexes and nightly.torch_min == "2.15.0.dev0" and nightly.is_confirmed()
    assert (m.channels["therock"].python_min, m.channels["therock"].python_max) == ("3.10", "3.14")
    # Every fact names a source defined in its file.
    for r in m.torch_releases:
        assert r.sources and all(s in m.sources["torch.toml"] for s in r.sources)


def _add_release(recording: Path) -> None:
    """A torch 2.16.0 on the index (cu134 build on PyPI) and a test-infra revision where it went
    live with a new ROCm 7.16 index: what the next release looks like to the generator."""
    page = json.loads((recording / "pypi" / "torch.json").read_text())
    for py in ("312", "313", "314"):
        name = f"torch-2.16.0-cp{py}-cp{py}-manylinux_2_28_x86_64.whl"
        page["files"].append(
            {"filename": name, "url": f"https://files.example/{name}", "size": 1, "upload-time": "2026-12-09T12:00:00Z"}
        )
        (recording / "pypi" / "metadata" / f"{name}.metadata").write_text(
            "Metadata-Version: 2.4\nName: torch\nVersion: 2.16.0\n"
            'Requires-Dist: cuda-toolkit[cudart]==13.4.1; platform_system == "Linux"\n'
            'Requires-Dist: triton~=3.10.0; platform_system == "Linux"\n'
        )
    (recording / "pypi" / "torch.json").write_text(json.dumps(page))
    history = recording / "test-infra"
    head = sorted(p for p in history.iterdir() if p.is_dir() and (p / testinfra.BUILD_MATRIX_PATH).exists())[-1]
    text = (head / testinfra.BUILD_MATRIX_PATH).read_text()
    text = text.replace('CURRENT_STABLE_VERSION = "2.13.0"', 'CURRENT_STABLE_VERSION = "2.16.0"')
    text = re.sub(r'("release": \["7\.1", "7\.2"\])', '"release": ["7.14", "7.16"]', text)
    text = re.sub(r'"release": \["12\.6", "13\.0", "13\.2"\]', '"release": ["13.0", "13.2", "13.4"]', text)
    new = history / "2026-12-09_0123456789abcdef0123456789abcdef01234567" / testinfra.BUILD_MATRIX_PATH
    new.parent.mkdir(parents=True)
    new.write_text(text)


def test_a_new_release_is_found_and_written_with_no_hand_edit(tmp_path: Path) -> None:
    recording = tmp_path / "upstream"
    shutil.copytree(RECORDING, recording)
    _add_release(recording)
    folder = tmp_path / "matrices"
    shutil.copytree(MATRICES, folder)
    result = plan_refresh(folder, _inputs(recording))
    # The new test-infra revision is also the nightly lists' newest source, so channels.toml may move too.
    assert "torch.toml" in result.changed
    assert "torch 2.16.0: new release" in "\n".join(result.outcome.notes)
    written = write_refresh(folder, result, source_dir=folder)
    assert str(folder / "torch.toml") in written
    m = parse_matrix(folder)
    rel = m.torch_release("2.16.0")
    assert rel is not None and rel.released == "2026-12-09"
    assert (rel.python_min, rel.python_max) == ("3.12", "3.14")
    assert [v.index for v in rel.variants] == ["rocm7.14", "rocm7.16", "cu130", "cu132", "cu134", "cpu"]
    assert all(v.is_confirmed() for v in rel.variants)  # a go-live revision confirms them
    assert "rocm7.16" in m.rocm_indexes and not m.rocm_indexes["rocm7.16"].is_confirmed("archs")
    # Running it again changes nothing: the written data is what the sources say.
    assert plan_refresh(folder, _inputs(recording)).changed == []


def test_a_generated_file_that_does_not_load_is_never_written(tmp_path: Path) -> None:
    recording = tmp_path / "upstream"
    shutil.copytree(RECORDING, recording)
    _add_release(recording)
    folder = tmp_path / "matrices"
    shutil.copytree(MATRICES, folder)
    # nvidia.toml without the cu134 row: the generated 2.16.0+cu134 cannot load.
    nv = folder / "nvidia.toml"
    nv.write_text(nv.read_text().split('[[cuda]]\nversion = "13.4"')[0])
    before = (folder / "torch.toml").read_bytes()
    with pytest.raises(DataError, match="cu134"):
        plan_refresh(folder, _inputs(recording))
    assert (folder / "torch.toml").read_bytes() == before


def test_refresh_without_dir_writes_an_overlay_that_show_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rocmkit.cli import main
    from rocmkit.matrix import clear_cache
    from rocmkit.util.paths import matrices_dir, shipped_matrices_dir

    recording = tmp_path / "upstream"
    shutil.copytree(RECORDING, recording)
    _add_release(recording)
    monkeypatch.setenv("ROCMKIT_DATA_DIR", str(tmp_path / "data"))
    matrices_dir.cache_clear()
    shipped = {p.name: p.read_bytes() for p in shipped_matrices_dir().glob("*.toml")}

    def run(*argv: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as info:
            main([*argv])
            raise SystemExit(0)
        out, err = capsys.readouterr()
        return int(info.value.code or 0), out, err

    try:
        code, out, err = run("matrix", "refresh", "--write", "--from", str(recording))
        assert code == 0, err
        overlay = tmp_path / "data" / "matrices"
        assert f"wrote {overlay / 'torch.toml'}" in err and "+version = \"2.16.0\"" in out
        # The switch of data source is said where the data goes (stdout), with the way back.
        assert f"rocmkit now reads its data from {overlay}, not the data it shipped with" in out
        assert f"To go back to the shipped data: rm -r {overlay}\n" in out
        # Every data file is in the overlay (it is a whole data folder), and the shipped data is untouched.
        assert sorted(p.name for p in overlay.glob("*.toml")) == sorted(shipped)
        assert {p.name: p.read_bytes() for p in shipped_matrices_dir().glob("*.toml")} == shipped
        matrices_dir.cache_clear()
        clear_cache()
        code, out, err = run("matrix", "show")
        assert code == 0 and any(line.startswith("2.16.0 ") for line in out.splitlines())
        assert f"data: {overlay} (an overlay written by `rocmkit matrix refresh --write`" in err
        assert "its index was read on 2026-12-03" in err and "newest torch 2.16.0 (2026-12-09)" in err
        # An older rocmkit's refresh (issue 39): its stamp loses to the shipped data and its
        # gfx.toml is its own copy. A new refresh writes the overlay whole: no old copy is kept.
        (overlay / "written-by-rocmkit").write_text("0.0.1\n")
        (overlay / "gfx.toml").write_text((overlay / "gfx.toml").read_text() + "# an older refresh's copy\n")
        matrices_dir.cache_clear()
        clear_cache()
        code, out, err = run("matrix", "refresh", "--write", "--from", str(recording))
        assert code == 0, err
        assert (overlay / "gfx.toml").read_bytes() == shipped["gfx.toml"]
        # Once more: nothing changes, so nothing is written and the data in use stays.
        matrices_dir.cache_clear()
        clear_cache()
        mtime = (overlay / "torch.toml").stat().st_mtime_ns
        code, out, err = run("matrix", "refresh", "--write", "--from", str(recording))
        assert code == 0 and "nothing to write" in err and "now reads" not in out + err, err
        assert (overlay / "torch.toml").stat().st_mtime_ns == mtime
    finally:
        matrices_dir.cache_clear()
        clear_cache()
