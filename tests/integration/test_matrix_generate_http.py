"""`rocmkit matrix refresh --write` against the recorded PyPI pages served on 127.0.0.1.

Three index behaviours (PEP 658 metadata; no metadata but Range requests; neither) and
the bad answers (garbage, an HTML error page, 50 MB, a trickle): exit 9, one line, nothing written.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from rocmkit.cli import main
from rocmkit.matrix.write import GENERATED
from tests.conftest import DATA, REPO
from tests.support.recorded_index import RecordedIndex

pytestmark = pytest.mark.integration

RECORDING = DATA / "upstream"
MANIFEST = json.loads((RECORDING / "manifest.json").read_text())
READ_ON = MANIFEST["read_on"]
JAX_READ_ON = MANIFEST["jax_read_on"]  # the jax pages were recorded on another day
SHIPPED_URL = "https://pypi.org/simple"


def _copy_matrices(tmp: Path) -> Path:
    out = tmp / "matrices"
    shutil.copytree(REPO / "matrices", out)
    return out


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
        raise SystemExit(0)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def _generated_over(
    server: RecordedIndex, folder: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    code, _, err = _run(
        capsys,
        "matrix", "refresh", "--write", "--dir", str(folder), "--from", str(RECORDING),
        "--simple", server.url, "--timeout", "10",
    )  # fmt: skip
    return code, err


@pytest.mark.parametrize("mode", ["pep658", "range"])
def test_served_index_gives_the_shipped_data(
    mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy_matrices(tmp_path)
    with RecordedIndex(RECORDING / "pypi", mode=mode) as srv:
        code, err = _generated_over(srv, folder, capsys)
        url = srv.url
        metadata_reads = [r for r in srv.requests if r.endswith(".metadata")]
    assert code == 0, err
    for name in GENERATED:
        # The pages were read today from 127.0.0.1; the shipped data read them on the recording's date.
        got = (
            (folder / name)
            .read_text()
            .replace(url, SHIPPED_URL)
            .replace(f"read {dt.date.today()}", f"read {JAX_READ_ON if name == 'jax.toml' else READ_ON}")
        )
        assert got == (REPO / "matrices" / name).read_text(), f"{name} differs ({mode})"
    if mode == "pep658":
        assert metadata_reads, "PEP 658 metadata must be used when served"
    else:
        assert not metadata_reads
        assert srv.full_wheel_bodies == 0, "a wheel was requested whole instead of by range"


def test_index_with_neither_metadata_nor_ranges_leaves_those_facts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy_matrices(tmp_path)
    with RecordedIndex(RECORDING / "pypi", mode="none") as srv:
        code, err = _generated_over(srv, folder, capsys)
    assert code == 0, err
    assert "no metadata readable" in err
    # Tags and dates still come from the page; the data stays loadable.
    code, out, _ = _run(capsys, "matrix", "check", "--dir", str(folder))
    assert code == 0 and "2.15.0" in out


@pytest.mark.parametrize("mode", ["garbage", "html-error", "huge", "trickle"])
def test_bad_index_answers_exit_9_and_write_nothing(
    mode: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy_matrices(tmp_path)
    before = {n: (folder / n).read_bytes() for n in GENERATED}
    with RecordedIndex(RECORDING / "pypi", mode=mode) as srv:
        code, _, err = _run(
            capsys,
            "matrix", "refresh", "--write", "--dir", str(folder), "--from", str(RECORDING),
            "--simple", srv.url, "--timeout", "1",
        )  # fmt: skip
    assert code == 9, err
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err
    assert {n: (folder / n).read_bytes() for n in GENERATED} == before
    assert not list(folder.glob(".*.tmp")), "no temporary file may be left behind"
