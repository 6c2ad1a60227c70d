"""`rocmkit install --with` a package whose build needs torch: the build sees the venv's own torch,
never the higher "torch" a package index offers beside it. Real uv installs and real builds
against indexes on 127.0.0.1; the sdist records torch.__version__ as its build saw it.

- an unknown package (from the indexes, under the guard): its isolated build gets torch through
  the guard's build constraints, so only the venv's torch release;
- a library that companions.toml builds from source: built without isolation, in the venv, and
  torch's version and files are compared before and after.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmkit.plan import Backend, Plan
from rocmkit.util.paths import matrices_dir, shipped_matrices_dir
from tests.support.cli import keep_user_config_out, last_error, run_main
from tests.support.pkgindex import IndexServer, make_torch_recording_sdist, make_torch_set, make_wheel

pytestmark = pytest.mark.integration

TORCH = "2.5.1+rocm6.2"
UV = str(Path(sys.executable).parent / "uv")
TRITON = "pytorch-triton-rocm==3.1.0"


@pytest.fixture(autouse=True)
def _quiet_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keep_user_config_out(tmp_path / "home", monkeypatch)
    monkeypatch.setenv("ROCMKIT_OFFLINE", "1")


@pytest.fixture(scope="module")
def index_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index")
    # Beside the venv's torch, a decoy torch of a higher version that an isolated build would
    # take, and sdists whose build records the torch it saw.
    for index in (root / "whl/rocm6.2", root / "pypi"):
        make_torch_recording_sdist(index)
        make_torch_recording_sdist(index, "laterbuild", "2.0")
        make_torch_set(index, "9.9.0", cuda="12.4")
    make_torch_set(root / "whl/rocm6.2", TORCH, triton=TRITON, hip="6.2.41133")
    make_wheel(root / "whl/rocm6.2", "timmish", "1.0", requires=["torchvision==0.20.1"])
    make_wheel(root / "whl/rocm6.2", "torchvision", "0.20.1", requires=["torch==9.9.0"])
    return root


@pytest.fixture
def server(index_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[IndexServer]:
    with IndexServer(index_root) as srv:
        # The user's default index stands for PyPI (rocmkit adds it after the plan's index).
        monkeypatch.setenv("PIP_INDEX_URL", srv.index_url("pypi"))
        yield srv


def plan_file(folder: Path, srv: IndexServer, companions: tuple[str, ...] = ()) -> Path:
    plan = Plan(
        backend=Backend.parse("rocm6.2"),
        torch_version=TORCH,
        triton=TRITON,
        requirements=(f"torch=={TORCH}", *companions),
        companions=companions,
        index_urls=(srv.index_url("whl/rocm6.2"),),
        python=f"{sys.version_info.major}.{sys.version_info.minor}",
    )
    path = folder / "plan.json"
    path.write_text(json.dumps(plan.to_dict()))
    return path


rk = run_main


def built_with(venv: Path, module: str = "recordtorch") -> str:
    """The torch the module's build saw, and the venv's torch now."""
    code = f"import {module}, torch; print({module}.BUILT_WITH, torch.__version__)"
    result = subprocess.run(
        [str(venv / "bin/python"), "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.strip()


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_an_sdist_needing_torch_builds_against_the_venvs_torch(
    installer: str, tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """The index serves a higher torch (9.9.0) beside the venv's: an isolated build left to itself
    takes it. With rocmkit, pip's and uv's builds get the venv's torch release only."""
    venv = tmp_path / "venv"
    plan = plan_file(tmp_path, server)
    args = ("--venv", str(venv), "--plan", str(plan), "--installer", installer)
    code, _, err = rk(capsys, "install", *args, "--with", "recordtorch")
    assert code == 0, err
    # Built in an isolated environment whose torch the guard pinned: the venv's release, not 9.9.0.
    assert built_with(venv) == f"{TORCH} {TORCH}"
    # The sdist was fetched and built: from torch's index or from PyPI after it (754a628 adds the
    # user's default index for plain --with packages; pip, unlike uv, ranks the same file on two
    # indexes without preferring the first). torch came from torch's index alone, and no build
    # fetched the decoy that both serve.
    fetched = [r for r in server.requests if r.endswith("/recordtorch-1.0.tar.gz")]
    assert set(fetched) <= {"/whl/rocm6.2/recordtorch-1.0.tar.gz", "/pypi/recordtorch-1.0.tar.gz"} and fetched
    torch_files = [r for r in server.requests if r.rsplit("/", 1)[-1].startswith("torch-")]
    assert torch_files and all(r.startswith(f"/whl/rocm6.2/torch-{TORCH}-") for r in torch_files), torch_files
    # Later, the user's own plain install of such an sdist (pip reads the venv's pip.conf; uv in
    # the activated venv reads UV_BUILD_CONSTRAINT): its build cannot get the decoy torch.
    later = "laterbuild"
    if installer == "pip":
        argv = [sys.executable, "-m", "pip", "--python", str(venv / "bin/python"), "install", later]
        argv += ["--index-url", server.index_url("whl/rocm6.2"), "--no-cache-dir"]
        user = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    else:
        script = f". {venv}/bin/activate && {UV} pip install {later} --index-url {server.index_url('whl/rocm6.2')} --no-cache"
        user = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300)
    assert user.returncode == 0, user.stdout + user.stderr
    assert built_with(venv, later) == f"{TORCH} {TORCH}"  # built against the venv's torch, which stayed


def test_a_library_built_from_source_sees_no_other_torch(
    tmp_path: Path,
    server: IndexServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    # companions.toml with one more library, built from source for ROCm.
    data = tmp_path / "matrices"
    shutil.copytree(shipped_matrices_dir(), data)
    with (data / "companions.toml").open("a") as fh:
        fh.write(
            '\n[[companion]]\nname = "recordtorch"\nmodule = "recordtorch"\ncheck = "companion.recordtorch"\n'
            'pins_torch = true\nsources = ["fa_setup"]\n\n'
            '[[build]]\ncompanion = "recordtorch"\nversion = "1.0"\nbackend = "rocm"\nkind = "source"\n'
            'index = "pypi"\nbuild_env = { MAX_JOBS = "{max_jobs}" }\nbuild_requires = ["torch"]\n'
            'sources = ["fa_setup"]\n'
        )
    monkeypatch.setenv("ROCMKIT_MATRICES_DIR", str(data))
    matrices_dir.cache_clear()  # the folder is read once per process
    request.addfinalizer(matrices_dir.cache_clear)
    venv = tmp_path / "venv"
    plan = plan_file(tmp_path, server)
    code, out, err = rk(capsys, "install", "--venv", str(venv), "--plan", str(plan), "--with", "recordtorch", "--json")
    assert code == 0, err
    assert "building recordtorch==1.0 against this environment's torch 2.5.1+rocm6.2" in err
    assert "without build isolation (MAX_JOBS=" in err
    assert "torch's version and files are unchanged" in err
    assert built_with(venv) == f"{TORCH} {TORCH}"
    # It is tied to this torch: the guard pins it beside torch.
    constraints = (venv / "rocmkit-constraints.txt").read_text()
    assert f"torch=={TORCH}" in constraints and "recordtorch==1.0" in constraints
    assert json.loads(out)["action"] == "installed"


def test_the_guard_pins_no_companion_that_was_left_out(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan names torchvision; its index does not answer and the user's wheelhouse holds
    torch but no torchvision: it is left out, and the guard does not pin it (a later install
    pulling torchvision would be unresolvable). A later --with that cannot fit the guard fails
    naming the conflicting pin and the fix, not with the installer's bare error."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/whl/rocm6.2/"
    house = tmp_path / "house"
    make_torch_set(house, TORCH, triton=TRITON, hip="6.2.41133")
    monkeypatch.setenv("PIP_FIND_LINKS", str(house))
    tv = "torchvision==0.20.1+rocm6.2"
    plan = Plan(
        backend=Backend.parse("rocm6.2"),
        torch_version=TORCH,
        triton=TRITON,
        requirements=(f"torch=={TORCH}", tv),
        companions=(tv,),
        index_urls=(dead,),
    )
    saved = tmp_path / "plan.json"
    saved.write_text(json.dumps(plan.to_dict()))
    venv = tmp_path / "venv"
    code, _, err = rk(capsys, "install", "--venv", str(venv), "--plan", str(saved), "--fallback-index")
    assert code == 0, err
    assert f"{tv} was not installed" in err
    constraints = (venv / "rocmkit-constraints.txt").read_text()
    pins = [line for line in constraints.splitlines() if not line.startswith("#")]
    assert f"torch=={TORCH}" in pins and not any("torchvision" in p for p in pins)
    assert f"# Left out by this install, so not pinned: {tv}." in constraints
    # timmish needs a torchvision built for torch 9.9.0: nothing fits beside the guarded torch.
    monkeypatch.delenv("PIP_FIND_LINKS")
    code, _, err = rk(capsys, "install", "--venv", str(venv), "--plan", str(plan_file(tmp_path, server)), "--with", "timmish")
    assert code == 7, err
    last = last_error(err)
    assert f"timmish cannot be installed beside the guard's torch=={TORCH}" in last, last
    assert "fix: " in last and "rocmkit install --torch" in last
