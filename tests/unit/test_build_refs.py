"""matrices/build.toml: the shipped file validates; bad data names the file and the entry."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from rocmkit.errors import DataError, NoPlanError
from rocmkit.source_build.refs import load_build_matrix, parse_build_matrix, read_build_matrix

GOOD: dict[str, Any] = {
    "schema": 1,
    "sources": {"a": "https://example.org/a", "b": "https://example.org/b", "c": "https://example.org/c"},
    "release": {
        "2.7": {
            "torch": {
                "repo": "https://github.com/pytorch/pytorch.git",
                "tag": "v2.7.1",
                "requirements": "requirements.txt",
                "sources": ["a"],
                "confirmed": True,
            },
            "triton": {
                "repo": "https://github.com/triton-lang/triton.git",
                "pin_file": ".ci/docker/ci_commit_pins/triton.txt",
                "setup_dir": "python",
                "version": "3.3.1",
                "sources": ["b"],
                "confirmed": False,
            },
            "torchvision": {
                "repo": "https://github.com/pytorch/vision.git",
                "tag": "v0.22.0",
                "sources": ["c"],
                "confirmed": True,
            },
        }
    },
}
PATH = Path("/data/build.toml")


def mutate(fn: Any) -> dict[str, Any]:
    data = copy.deepcopy(GOOD)
    fn(data)
    return data


def test_shipped_matrix_is_valid_and_sourced() -> None:
    m = load_build_matrix()
    assert m.release_keys()[0] == max(m.release_keys(), key=lambda k: tuple(map(int, k.split("."))))
    assert {"2.5", "2.7", "2.9", "2.12"} <= set(m.release_keys())
    for key in m.release_keys():
        rel = m.releases[key]
        assert rel.torch.tag.startswith(f"v{key}.")
        assert rel.torch.repo.startswith("https://") and rel.triton.repo.startswith("https://")
        assert rel.triton.pin_file.startswith(".ci/docker/ci_commit_pins/")
        for ref in (rel.torch, rel.triton, rel.torchvision):
            assert ref.source.strip()
        if rel.triton.commit is not None:
            assert re.fullmatch(r"[0-9a-f]{7,40}", rel.triton.commit)


def test_release_lookup() -> None:
    m = parse_build_matrix(GOOD, PATH)
    assert m.release("2.7").torch.tag == "v2.7.1"
    assert m.release("2.7.1").key == "2.7"
    assert m.release("v2.7.1+rocm6.3").key == "2.7"
    assert m.release(None).key == "2.7"
    with pytest.raises(NoPlanError, match=r"builds torch 2\.7 from tag v2\.7\.1, not 2\.7\.0"):
        m.release("2.7.0")
    with pytest.raises(NoPlanError, match=r"no build recipe for torch 3\.0") as err:
        m.release("3.0")
    assert err.value.fix == "pick one of: 2.7"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["release"]["2.7"]["triton"].update(comit="abcdef12"),
            r"build.toml: release\.\"2\.7\"\.triton: unknown key 'comit' \(did you mean 'commit'\?\)",
        ),
        (
            lambda d: d["release"]["2.7"].update(tritton={}),
            r"release\.\"2\.7\": unknown key 'tritton' \(did you mean 'triton'\?\)",
        ),
        (lambda d: d.update(releases={}), r"top level: unknown key 'releases' \(did you mean 'release'\?\)"),
        (lambda d: d["release"]["2.7"]["torch"].pop("tag"), r"release\.\"2\.7\"\.torch: missing required key 'tag'"),
        (lambda d: d["release"]["2.7"].pop("torchvision"), r"missing \[torchvision\] section"),
        (lambda d: d["release"]["2.7"]["torch"].update(tag="2.7.1"), r"tag '2\.7\.1' is not vX\.Y\.Z"),
        (
            lambda d: d["release"]["2.7"]["torch"].update(tag="v2.8.0"),
            r"tag v2\.8\.0 does not belong to 2\.7",
        ),
        (lambda d: d["release"]["2.7"]["torch"].update(confirmed="yes"), r"confirmed must be true or false"),
        (lambda d: d["release"]["2.7"]["triton"].update(commit="XYZ"), r"is not a 7-40 digit"),
        (lambda d: d["release"]["2.7"]["torchvision"].update(sources=[]), r"sources is empty: every fact names at least one source"),
        (lambda d: d["release"]["2.7"]["torchvision"].pop("sources"), r"missing required key 'sources'"),
        (
            lambda d: d["release"]["2.7"]["torchvision"].update(sources=["d"]),
            r"sources names 'd', which \[sources\] does not define",
        ),
        (lambda d: d.pop("sources"), r"missing \[sources\] table"),
        (lambda d: d.update(schema="rocmkit.build/1"), r"schema = 'rocmkit\.build/1', this rocmkit reads schema = 1"),
        (lambda d: d["release"].update({"2": d["release"]["2.7"]}), r'release\."2": key must be "X\.Y"'),
    ],
)
def test_bad_data_is_a_data_error_naming_the_entry(change: Any, message: str) -> None:
    with pytest.raises(DataError, match=message):
        parse_build_matrix(mutate(change), PATH)


def test_bad_toml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "build.toml"
    path.write_text('schema = 1\n[release."2.7"\n')
    with pytest.raises(DataError, match=r"build\.toml: not valid TOML"):
        read_build_matrix(path)
    with pytest.raises(DataError, match=r"missing\.toml is missing"):
        read_build_matrix(tmp_path / "missing.toml")


def test_sources_and_confirmed_come_through() -> None:
    m = parse_build_matrix(GOOD, PATH)
    rel = m.release("2.7")
    assert rel.torch.source == "https://example.org/a" and rel.torch.confirmed
    assert not rel.triton.confirmed and rel.unconfirmed() == ("triton",)


def test_every_data_file_is_registered_and_valid() -> None:
    """matrices/ holds no file the registry (and so `matrix check`) does not validate."""
    from rocmkit.datafiles import data_files, registered_names
    from rocmkit.util.paths import shipped_matrices_dir

    folder = shipped_matrices_dir()
    # Every TOML file, in subfolders too (matrices/bench/).
    found = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.toml"))
    assert found == sorted(registered_names())
    for entry in data_files():
        assert entry.load(folder) is not None
