"""The compiled matrix cache: read back without the loader, never stale, never untrusted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rocmkit.matrix import compiled, load
from rocmkit.util.paths import matrices_dir


@pytest.fixture()
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[Path]]:
    monkeypatch.setenv("ROCMKIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "matrices"
    shutil.copytree(matrices_dir(), folder)
    parsed: list[Path] = []
    real = load.parse_matrix

    def counting(directory: Path):  # type: ignore[no-untyped-def]
        parsed.append(directory)
        return real(directory)

    monkeypatch.setattr(load, "parse_matrix", counting)
    compiled.clear()
    return folder, parsed


def test_a_second_process_reads_the_compiled_matrix(setup: tuple[Path, list[Path]]) -> None:
    folder, parsed = setup
    first = compiled.load_matrix(folder)
    compiled.clear()  # as a new process would start
    second = compiled.load_matrix(folder)
    assert len(parsed) == 1
    assert second == first
    assert second.pci_device("0x744c") == first.pci_device("0x744c")


def test_an_edited_matrix_file_is_parsed_again(setup: tuple[Path, list[Path]]) -> None:
    folder, parsed = setup
    compiled.load_matrix(folder)
    with (folder / "gfx.toml").open("a", encoding="utf-8") as f:
        f.write("\n# an edit\n")
    compiled.clear()
    compiled.load_matrix(folder)
    assert len(parsed) == 2


def test_a_file_others_can_write_is_not_trusted(setup: tuple[Path, list[Path]]) -> None:
    folder, parsed = setup
    compiled.load_matrix(folder)
    (pickled,) = (Path(compiled._cache_folder())).glob("*.pickle")
    pickled.chmod(0o666)
    compiled.clear()
    compiled.load_matrix(folder)
    assert len(parsed) == 2


def test_a_corrupt_cache_file_is_a_miss(setup: tuple[Path, list[Path]]) -> None:
    folder, parsed = setup
    compiled.load_matrix(folder)
    (pickled,) = (Path(compiled._cache_folder())).glob("*.pickle")
    pickled.write_bytes(b"not a pickle")
    compiled.clear()
    assert compiled.load_matrix(folder).archs
    assert len(parsed) == 2
