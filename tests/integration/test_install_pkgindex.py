"""The test package index itself (contract 4): real wheels, real PEP 503/691/658 pages."""

from __future__ import annotations

import base64
import hashlib
import json
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.support.pkgindex import JSON_TYPE, PLATFORM_TAG, IndexServer, make_torch_set, make_wheel

pytestmark = pytest.mark.integration


def _get(url: str, accept: str = "text/html") -> tuple[str, bytes]:
    req = urllib.request.Request(url, headers={"Accept": accept})
    with urllib.request.urlopen(req, timeout=5) as resp:
        return resp.headers["Content-Type"], resp.read()


def test_wheel_is_named_like_the_real_ones_and_record_hashes_match(tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path, "torch", "2.5.1+rocm6.2", tag=PLATFORM_TAG, requires=["pytorch-triton-rocm==3.1.0"]
    )
    assert wheel.name == f"torch-2.5.1+rocm6.2-{PLATFORM_TAG}.whl"
    with zipfile.ZipFile(wheel) as zf:
        record = zf.read("torch-2.5.1+rocm6.2.dist-info/RECORD").decode()
        meta = zf.read("torch-2.5.1+rocm6.2.dist-info/METADATA").decode()
        for line in record.splitlines():
            path, digest, size = line.rsplit(",", 2)
            if not digest:
                continue
            data = zf.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == f"sha256={expected}"
            assert int(size) == len(data)
    assert "Requires-Dist: pytorch-triton-rocm==3.1.0" in meta
    # Same inputs, same bytes: lock-file hashes stay stable across runs.
    again = make_wheel(
        tmp_path / "b", "torch", "2.5.1+rocm6.2", tag=PLATFORM_TAG, requires=["pytorch-triton-rocm==3.1.0"]
    )
    assert again.read_bytes() == wheel.read_bytes()


def test_server_speaks_pep503_691_658_and_can_go_away(tmp_path: Path) -> None:
    index = tmp_path / "whl" / "rocm6.2"
    torch_wheel = make_torch_set(index, "2.5.1+rocm6.2", triton="pytorch-triton-rocm==3.1.0", hip="6.2")[-1]
    with IndexServer(tmp_path) as srv:
        base = srv.index_url("whl/rocm6.2")
        assert base == srv.url + "/whl/rocm6.2/"
        ctype, body = _get(base)
        assert ctype == "text/html"
        assert 'href="torch/"' in body.decode() and 'href="pytorch-triton-rocm/"' in body.decode()

        _, body = _get(base + "torch/")
        page = body.decode()
        digest = hashlib.sha256(torch_wheel.read_bytes()).hexdigest()
        assert f"torch-2.5.1%2Brocm6.2-{PLATFORM_TAG}.whl#sha256={digest}" in page
        assert "data-core-metadata=" in page

        ctype, body = _get(base + "torch/", JSON_TYPE)
        assert ctype == JSON_TYPE
        data = json.loads(body)
        assert data["files"][0]["hashes"]["sha256"] == digest

        _, meta = _get(base + f"torch-2.5.1%2Brocm6.2-{PLATFORM_TAG}.whl.metadata")
        assert b"Requires-Dist: pytorch-triton-rocm==3.1.0" in meta
        _, blob = _get(base + f"torch-2.5.1%2Brocm6.2-{PLATFORM_TAG}.whl")
        assert blob == torch_wheel.read_bytes()

        with pytest.raises(urllib.error.HTTPError):
            _get(base + "nosuchproject/")
        srv.stop_serving()
        with pytest.raises(urllib.error.URLError):
            _get(base)
