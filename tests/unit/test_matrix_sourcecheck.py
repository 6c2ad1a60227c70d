"""`rocmkit matrix check --sources`: each fact re-read from its recorded source."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rocmkit.cli import main
from rocmkit.matrix import parse_matrix
from rocmkit.matrix.jaxdata import parse_jax
from rocmkit.matrix.sourcecheck import check_sources
from rocmkit.matrix.sourceread import Sources
from tests.conftest import DATA, REPO

RECORDING = DATA / "upstream"


def _copy(tmp_path: Path, edits: dict[str, list[tuple[str, str]]]) -> Path:
    folder = tmp_path / "matrices"
    shutil.copytree(REPO / "matrices", folder)
    for name, pairs in edits.items():
        path = folder / name
        text = path.read_text()
        for old, new in pairs:
            assert text.count(old) >= 1, old
            text = text.replace(old, new, 1)
        path.write_text(text)
    return folder


def test_the_shipped_data_is_what_its_sources_state() -> None:
    report = check_sources(parse_matrix(REPO / "matrices"), Sources(RECORDING, offline=True))
    assert report.not_stated == [] and report.unreadable == []
    assert report.checked > 200
    # jax.toml too: its releases and torch-xla rows against the recorded PyPI pages.
    both = check_sources(
        parse_matrix(REPO / "matrices"), Sources(RECORDING, offline=True), parse_jax(REPO / "matrices")
    )
    assert both.not_stated == [] and both.unreadable == []
    assert both.checked > report.checked + 100 and both.hand_kept > report.hand_kept


def test_wrong_jax_facts_are_caught(tmp_path: Path) -> None:
    folder = _copy(
        tmp_path,
        {
            "jax.toml": [
                ('version = "0.7.0"\npython_min = "3.11"\npython_max = "3.13"\nreleased = 2025-07-22',
                 'version = "0.7.0"\npython_min = "3.10"\npython_max = "3.13"\nreleased = 2025-07-21'),
                ('{ family = "rocm7", python_max = "3.13", python_min = "3.11", version = "0.7.1" }',
                 '{ family = "rocm7", python_max = "3.14", python_min = "3.11", version = "0.7.1" }'),
            ],
        },
    )  # fmt: skip
    text = (folder / "jax.toml").read_text()
    at = text.index("\n[[torch_xla]]\n")
    (folder / "jax.toml").write_text(text[:at] + text[at:].replace('python_min = "3.', 'python_min = "2.', 1))
    report = check_sources(parse_matrix(folder), Sources(RECORDING, offline=True), parse_jax(folder))
    found = "\n".join(report.not_stated)
    assert "jax.toml release 0.7.0: Python 3.10-3.13, but https://pypi.org/simple/jaxlib/ has CPython 3.11-3.13" in found
    assert "jax.toml release 0.7.0: released 2025-07-21, but https://pypi.org/simple/jaxlib/ first has it on 2025-07-22" in found
    assert (
        "jax.toml release 0.7.1: jax-rocm7-plugin 0.7.1 for Python 3.11-3.14, but "
        "https://pypi.org/simple/jax-rocm7-plugin/ has CPython 3.11-3.13 wheels" in found
    )
    assert "jax.toml torch_xla " in found and "https://pypi.org/simple/torch-xla/ has CPython" in found
    assert len(report.not_stated) == 4


def test_an_amd_channel_that_lists_a_target_its_stream_lacks_is_caught(tmp_path: Path) -> None:
    # TheRock's whl-next manifest serves gfx906's device packages on the dev and nightly streams only.
    folder = _copy(tmp_path, {"channels.toml": [('archs = ["gfx908", "gfx90a",', 'archs = ["gfx906", "gfx908", "gfx90a",')]})
    found = "\n".join(check_sources(parse_matrix(folder), Sources(RECORDING, offline=True)).not_stated)
    assert "channels.toml amd archs: https://github.com/ROCm/TheRock/blob/89553ce3746e/" in found
    assert "serves device packages on the stable stream for gfx908 gfx90a" in found


def test_the_wrong_facts_the_audit_found_are_caught(tmp_path: Path) -> None:
    # The facts the issue names as wrong in the hand-kept data, put back.
    folder = _copy(
        tmp_path,
        {
            "torch.toml": [
                ('python_min = "3.8"\npython_max = "3.12"\nreleased = 2024-01-30', 'python_min = "3.8"\npython_max = "3.11"\nreleased = 2024-01-30'),
                ('  { index = "cu126", sources = ["observed_2026", "ti_626d4e70"] },', '  { index = "cu126", sources = ["observed_2026", "ti_626d4e70"] },\n  { index = "cu128", sources = ["ti_626d4e70"] },'),
            ],
            "channels.toml": [
                ('torch_min = "2.15.0.dev0"', 'torch_min = "2.13.0.dev0"'),
                ('indexes = ["rocm7.2", "rocm7.14", "cu126", "cu130"', 'indexes = ["rocm7.2", "rocm7.14", "cu126", "cu128", "cu130"'),
                ('python_min = "3.10"\npython_max = "3.14"\npackages', 'python_min = "3.9"\npython_max = "3.13"\npackages'),
            ],
        },
    )  # fmt: skip
    text = (folder / "torch.toml").read_text()
    at = text.index('version = "2.13.0"')
    (folder / "torch.toml").write_text(
        text[:at] + text[at:].replace('python_max = "3.14"', 'python_max = "3.15"', 1)
    )
    found = "\n".join(check_sources(parse_matrix(folder), Sources(RECORDING, offline=True)).not_stated)
    assert "release 2.2.0: Python 3.8-3.11, but https://pypi.org/simple/torch/ has CPython 3.8-3.12" in found
    assert (
        "release 2.13.0: Python 3.10-3.15, but https://pypi.org/simple/torch/ has CPython 3.10-3.14" in found
    )
    assert "release 2.12.0 variant cu128: https://github.com/pytorch/test-infra/blob/626d4e708156/" in found
    assert "lists rocm7.1 rocm7.2 cu126 cu130 cu132 cpu" in found
    assert "nightly torch_min 2.13.0.dev0: " in found and "CURRENT_NIGHTLY_VERSION = 2.15.0" in found
    assert "nightly indexes rocm7.2 rocm7.14 cu126 cu128 cu130" in found
    assert "amd-nightly Python 3.9-3.13:" in found and "builds 3.10-3.14" in found


def test_a_source_that_cannot_be_read_is_listed(tmp_path: Path) -> None:
    recording = tmp_path / "upstream"
    shutil.copytree(RECORDING, recording)
    for rev in (recording / "test-infra").iterdir():
        if rev.name.endswith("626d4e7081564c2af7b8ec0216b808371bc4e970"):
            shutil.rmtree(rev)
    report = check_sources(parse_matrix(REPO / "matrices"), Sources(recording, offline=True))
    assert report.unreadable == [
        "torch.toml [sources] ti_626d4e70: "
        "https://github.com/pytorch/test-infra/blob/626d4e708156/tools/scripts/generate_binary_build_matrix.py"
        " (not in the recording, and --offline reads nothing live)"
    ]
    assert report.read_from == {f"the recording {recording}": report.read_from[f"the recording {recording}"]}
    assert "sources read from: the recording " in "\n".join(report.lines())


def test_cli_exit_5_lists_what_is_not_stated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(tmp_path, {"channels.toml": [('torch_min = "2.15.0.dev0"', 'torch_min = "2.13.0.dev0"')]})
    with pytest.raises(SystemExit) as info:
        main(["matrix", "check", "--dir", str(folder), "--sources", "--offline", "--from", str(RECORDING)])
    out, err = capsys.readouterr()
    assert info.value.code == 5
    assert "not stated: channels.toml nightly torch_min 2.13.0.dev0" in out
    assert err.strip() == (
        "error: 1 facts are not stated by the sources they cite\n"
        "fix: correct them (or their sources) and run `rocmkit matrix refresh --write`"
    )
