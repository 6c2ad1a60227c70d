"""`rocmkit matrix refresh` against a real PEP 503/691 index served on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmkit.cli import main
from rocmkit.errors import NetworkError
from rocmkit.matrix import load_matrix
from rocmkit.matrix.refresh import compare
from tests.support.cli import last_error
from tests.support.pkgindex import IndexServer, make_torch_set, make_wheel

pytestmark = pytest.mark.integration

TAGS = (
    "cp310-cp310-manylinux_2_28_x86_64",
    "cp311-cp311-manylinux_2_28_x86_64",
    "cp312-cp312-manylinux_2_28_x86_64",
)


def _index(root: Path) -> Path:
    rocm62 = root / "whl" / "rocm6.2"
    # torch 2.5.1+rocm6.2 as published: three CPythons, Triton pinned in Requires-Dist.
    for tag in TAGS:
        make_torch_set(rocm62, "2.5.1+rocm6.2", triton="pytorch-triton-rocm==3.1.0", hip="6.2", tag=tag)
    make_wheel(rocm62, "torchvision", "0.20.1+rocm6.2", tag=TAGS[1])
    make_wheel(rocm62, "torchaudio", "2.5.1+rocm6.2", tag=TAGS[1])
    # Out of scope: older than the matrix covers, and a pre-release.
    make_torch_set(rocm62, "1.13.1+rocm6.2", tag=TAGS[1])
    make_torch_set(rocm62, "2.17.0.dev20261101+rocm6.2", tag=TAGS[1])
    # A release the matrix does not know yet.
    make_torch_set(rocm62, "2.16.0+rocm6.2", triton="triton-rocm==3.8.0", hip="6.2", tag=TAGS[1])
    # rocm6.1: 2.5.1 exists (the matrix marks it unconfirmed) but pins another Triton.
    rocm61 = root / "whl" / "rocm6.1"
    make_torch_set(rocm61, "2.5.1+rocm6.1", triton="pytorch-triton-rocm==3.0.0", hip="6.1", tag=TAGS[1])
    return root


def test_refresh_reports_what_the_matrix_lacks_or_has_wrong(tmp_path: Path) -> None:
    with IndexServer(_index(tmp_path)) as srv:
        report = compare(load_matrix(), srv.url + "/whl", only=["rocm6.2", "rocm6.1", "rocm7.2"], timeout=5)
        metadata_reads = [r for r in srv.requests if r.endswith(".metadata")]
    kinds = {(f.kind, f.index, f.release) for f in report.findings}
    messages = "\n".join(f.message for f in report.findings)
    assert report.indexes == ("rocm6.2", "rocm6.1")
    assert ("new-release", "rocm6.2", "2.16.0") in kinds
    assert not any(f.release in ("1.13.1", "2.17.0.dev20261101") for f in report.findings)
    assert "torch 2.16.0+rocm6.2 is on the index (Python 3.11-3.11) but not in torch.toml" in messages
    assert ("python", "rocm6.2", "2.5.1") in kinds  # wheels for 3.10-3.12, matrix says 3.9-3.12
    assert ("missing", "rocm6.2", "2.5.0") in kinds  # listed in torch.toml, not on this index
    assert ("triton", "rocm6.1", "2.5.1") in kinds
    assert "requires pytorch-triton-rocm==3.0.0; torch.toml says pytorch-triton-rocm==3.1.0" in messages
    assert ("missing", "rocm7.2", None) in kinds  # the index has no rocm7.2 at all
    # The 2.5.1+rocm6.2 Triton pin matches: no triton finding for it.
    assert ("triton", "rocm6.2", "2.5.1") not in kinds
    assert ("companion", "rocm6.2", "2.5.1") not in kinds
    assert metadata_reads, "Requires-Dist must come from the PEP 658 .metadata file"


def test_refresh_cli_json_and_unreachable_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with IndexServer(_index(tmp_path)) as srv:
        url = srv.url
        with pytest.raises(SystemExit) as info:
            main(
                [
                    "matrix",
                    "refresh",
                    "--index",
                    url + "/whl",
                    "--only",
                    "rocm6.2",
                    "--json",
                    "--timeout",
                    "5",
                ]
            )
            raise SystemExit(0)
    out, err = capsys.readouterr()
    assert (info.value.code or 0) == 0, err
    data = json.loads(out)
    assert data["schema"] == "rocmkit.matrix-refresh/1" and data["indexes"] == ["rocm6.2"]
    assert any(f["kind"] == "new-release" for f in data["findings"])
    # The server is gone now: one line, exit code 9.
    with pytest.raises(NetworkError, match="does not answer"):
        compare(load_matrix(), url + "/whl", only=["rocm6.2"], timeout=2)
    with pytest.raises(SystemExit) as info:
        main(["matrix", "refresh", "--index", url + "/whl", "--only", "cpu", "--timeout", "2"])
    out, err = capsys.readouterr()
    assert info.value.code == 9 and err.count("\n") >= 1 and "does not answer" in last_error(err)
