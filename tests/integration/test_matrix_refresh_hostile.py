"""`rocmkit matrix refresh` on hostile upstream data (issue 27, point 5), against the recorded
PyPI pages served on 127.0.0.1:

- a wheel whose METADATA is a real zip bomb (2 MB of deflate, 2 GiB inflated, its directory
  claiming 2 KiB): one error line, nothing written, in a process whose address space is capped
  at 1 GiB (without the cap on inflation it dies with MemoryError);
- project pages that redirect to another host: refused unless the user names that host
  (--allow-redirect), and then the source lines name the host the data came from;
- a plain-http index off the loopback interface for --write: refused without
  --allow-insecure-index (no network needed to see it refused)."""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rocmkit.matrix.write import GENERATED
from tests.conftest import DATA, REPO
from tests.integration.test_matrix_generate_http import _copy_matrices, _run
from tests.support.cli import last_error
from tests.support.recorded_index import RecordedIndex

pytestmark = pytest.mark.integration

RECORDING = DATA / "upstream"
ADDRESS_SPACE = 1 << 30


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def test_a_zip_bomb_metadata_is_one_error_line_not_memory_error(tmp_path: Path) -> None:
    folder = _copy_matrices(tmp_path)
    before = {n: (folder / n).read_bytes() for n in GENERATED}
    with RecordedIndex(RECORDING / "pypi", mode="bomb") as srv:
        proc = subprocess.run(
            [
                sys.executable, "-m", "rocmkit", "matrix", "refresh", "--write", "--dir", str(folder),
                "--from", str(RECORDING), "--simple", srv.url, "--timeout", "20",
            ],
            capture_output=True, text=True, timeout=300, cwd=REPO, preexec_fn=_capped,
        )  # fmt: skip
        wheel_reads = [r for r in srv.requests if r.endswith(".whl")]
    assert wheel_reads, "the METADATA was read by range from the bomb wheel"
    assert proc.returncode == 5, proc.stderr[-3000:]
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert "inflates past rocmkit's cap" in errors[0] and "METADATA" in errors[0]
    assert "MemoryError" not in proc.stderr and "Traceback" not in proc.stderr
    assert {n: (folder / n).read_bytes() for n in GENERATED} == before


def test_a_redirect_to_another_host_is_refused_unless_named_and_then_named_in_the_sources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy_matrices(tmp_path)
    before = {n: (folder / n).read_bytes() for n in GENERATED}
    args = ["matrix", "refresh", "--write", "--dir", str(folder), "--from", str(RECORDING), "--timeout", "10"]
    with RecordedIndex(RECORDING / "pypi", mode="redirect") as srv:
        code, _, err = _run(capsys, *args, "--simple", srv.url)
        assert code == 9, err
        errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1 and "redirected (HTTP 302) to another host, localhost" in errors[0], err
        assert "--allow redirect=localhost" in last_error(err)
        assert {n: (folder / n).read_bytes() for n in GENERATED} == before
        # The compare mode (no --write) obeys the same rule: <base>/simple/torch/ redirects.
        compare = ["matrix", "refresh", "--index", srv.url.rsplit("/", 1)[0], "--only", "simple"]
        code, _, err = _run(capsys, *compare)
        assert code == 9 and "to another host, localhost" in err, err
        code, _, err = _run(capsys, *compare, "--allow-redirect", "localhost")
        assert code == 0, err
        code, _, err = _run(capsys, *args, "--simple", srv.url, "--allow-redirect", "localhost")
        real = f"http://localhost:{srv.port}/simple"
    assert code == 0, err
    assert f"redirected to {real}: the sources name {real}" in err
    torch_toml = (folder / "torch.toml").read_text()
    assert f"{real}/torch/ (PEP 691 page read" in torch_toml
    assert f"127.0.0.1:{srv.port}/simple/torch/ (PEP 691" not in torch_toml


@pytest.mark.parametrize("allowed", [False, True])
def test_write_from_a_plain_http_index_needs_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], allowed: bool
) -> None:
    folder = tmp_path / "matrices"
    shutil.copytree(REPO / "matrices", folder)
    # A port nothing listens on, behind a name that is not loopback: refused before any request,
    # or (allowed) tried and found silent.
    args = ["matrix", "refresh", "--write", "--dir", str(folder), "--from", str(RECORDING)]
    args += ["--simple", "http://mirror.invalid:9/simple", "--timeout", "2"]
    code, _, err = _run(capsys, *args, *(["--allow-insecure-index"] if allowed else []))
    if not allowed:
        assert code == 4, err
        line = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert len(line) == 1 and "plain http" in line[0] and "--allow insecure-index" in last_error(err)
    else:
        assert code == 9, err  # past the check: the (absent) host does not answer
