"""A mirror that needs HTTP Basic auth (``https://user:token@mirror/...``): every step works
through it, and the token is never printed or written.

The index is real: generated wheels served on 127.0.0.1 by a server that answers 401 to
any request without the right Authorization header. resolve's live check, install with uv
and with pip, a hashed lock, a wheelhouse (``--download-only``) and ``matrix refresh`` go
through it; then every byte rocmkit printed, and every file under the test's folder (venvs,
caches, lock, wheelhouse, reports, snapshot), is searched for the token.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmkit.install.base import Sources
from rocmkit.install.pip import PipInstaller
from rocmkit.install.uv import UvInstaller
from rocmkit.plan import Backend, Plan
from rocmkit.pyenv import this_python
from rocmkit.util.redact import conceal, forget_credentials
from tests.conftest import DATA, REPO
from tests.support.cli import CliResult, last_error, rocmkit
from tests.support.pkgindex import IndexServer, make_torch_set
from tests.support.recorded_index import RecordedIndex

pytestmark = pytest.mark.integration

USER, TOKEN = "alice", "tok-Zq93xSECRETvv"
PYTORCH = "https://download.pytorch.org/whl"
TORCH = "2.5.1+rocm6.2"


@pytest.fixture(scope="module")
def index_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("authindex")
    make_torch_set(root / "whl/rocm6.2", TORCH, triton="pytorch-triton-rocm==3.1.0", hip="6.2.41133")
    make_torch_set(root / "whl/cpu", "2.13.0+cpu")
    return root


@pytest.fixture
def server(index_root: Path) -> Iterator[IndexServer]:
    with IndexServer(index_root, basic_auth=(USER, TOKEN)) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # Each test is one "process": credentials kept by an earlier one do not help it.
    forget_credentials()
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("ROCMKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("UV_NO_CONFIG", "1")
    monkeypatch.setenv("PIP_DEFAULT_TIMEOUT", "5")
    monkeypatch.setenv("NETRC", str(home / "no-netrc"))
    for var in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL", "PIP_CONFIG_FILE", "VIRTUAL_ENV"):
        monkeypatch.delenv(var, raising=False)
    yield
    forget_credentials()


def _base(srv: IndexServer, token: str = TOKEN) -> str:
    return f"http://{USER}:{token}@127.0.0.1:{srv.port}/whl"


def _pytorch_plan(folder: Path) -> Path:
    """A saved plan naming download.pytorch.org, as `rocmkit resolve --json` writes it."""
    plan = Plan(
        backend=Backend.parse("rocm6.2"),
        torch_version=TORCH,
        triton="pytorch-triton-rocm==3.1.0",
        requirements=(f"torch=={TORCH}",),
        index_urls=(f"{PYTORCH}/rocm6.2/",),
    )
    path = folder / "plan.json"
    path.write_text(json.dumps(plan.to_dict()))
    return path


def _no_token(*results: CliResult, under: Path | None = None) -> None:
    for res in results:
        assert TOKEN not in res.stdout and TOKEN not in res.stderr, res.stderr
        assert "Traceback" not in res.stderr
    if under is not None:
        for path in under.rglob("*"):
            if path.is_file() and not path.is_symlink():
                assert TOKEN.encode() not in path.read_bytes(), f"the token is in {path}"


def test_resolve_checks_the_authenticated_index_and_shows_user_and_mask(
    server: IndexServer, tmp_path: Path
) -> None:
    env: dict[str, str | None] = {"ROCMKIT_OFFLINE": None}
    res = rocmkit("resolve", "--cpu", "--python", "3.11", "--index-base", _base(server), env=env)
    assert res.code == 0, res.stderr
    shown = f"http://{USER}:***@127.0.0.1:{server.port}/whl"
    assert f"{shown}/cpu serves torch 2.13.0+cpu for Python 3.11" in res.stdout
    assert server.requests and server.requests[0] == "/whl/cpu/torch/"
    assert "the index's token is masked as ***" in res.stdout
    as_json = rocmkit(
        "resolve", "--cpu", "--python", "3.11", "--json", env={**env, "ROCMKIT_INDEX_BASE": _base(server)}
    )
    assert as_json.code == 0, as_json.stderr
    assert json.loads(as_json.stdout)["index_urls"][0] == f"{shown}/cpu"
    # A wrong token is said as such, right after the good one: a credentialed index's answer
    # is never taken from the cache, where every token would share one masked key.
    wrong = rocmkit("resolve", "--cpu", "--python", "3.11", "--index-base", _base(server, "nope"), env=env)
    assert "refused rocmkit (HTTP 401" in wrong.stdout, wrong.stdout + wrong.stderr
    _no_token(res, as_json, wrong, under=tmp_path)


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_install_lock_and_wheelhouse_through_the_mirror(
    installer: str, server: IndexServer, tmp_path: Path
) -> None:
    plan = _pytorch_plan(tmp_path)
    env = {"ROCMKIT_INDEX_BASE": _base(server)}
    venv = tmp_path / "venv"
    inst = rocmkit(
        "install", "--venv", str(venv), "--plan", str(plan), "--installer", installer, "--quiet", env=env
    )
    assert inst.code == 0, inst.stderr
    assert f"verified: torch {TORCH}" in inst.stderr
    assert f"from http://{USER}:***@127.0.0.1:{server.port}/whl/rocm6.2/" in inst.stderr
    assert any(p.endswith(".whl") for p in server.requests) and server.refused == []
    if installer == "pip":
        # pip's other runs (a lock's --report, --from-lock) take the same environment route;
        # pip download is the wheelhouse test's.
        _no_token(inst, under=tmp_path)
        return

    lock = tmp_path / "torch.lock"
    locked = rocmkit("install", "--plan", str(plan), "--lock", str(lock), "--installer", installer, env=env)
    assert locked.code == 0, locked.stderr
    assert f"--index-url http://{USER}:***@127.0.0.1:{server.port}/whl/rocm6.2/" in lock.read_text()

    # Another run: the lock masks the token; ROCMKIT_INDEX_BASE (same host and user) gives it back.
    forget_credentials()
    again = tmp_path / "again"
    from_lock = rocmkit(
        "install",
        "--venv",
        str(again),
        "--from-lock",
        str(lock),
        "--installer",
        installer,
        "--quiet",
        env=env,
    )
    assert from_lock.code == 0, from_lock.stderr
    # Without it, nothing sends the token: the index refuses and rocmkit says so (exit 9).
    forget_credentials()
    bare = rocmkit(
        "install",
        "--venv",
        str(tmp_path / "bare"),
        "--from-lock",
        str(lock),
        "--installer",
        installer,
        "--quiet",
    )
    assert bare.code == 9 and "HTTP 401" in bare.stderr, bare.stderr
    _no_token(inst, locked, from_lock, bare, under=tmp_path)


def test_wheelhouse_download_and_netrc(
    server: IndexServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = _pytorch_plan(tmp_path)
    house = tmp_path / "house"
    res = rocmkit(
        "install", "--plan", str(plan), "--download-only", "--wheelhouse", str(house), "--quiet",
        env={"ROCMKIT_INDEX_BASE": _base(server)},
    )  # fmt: skip
    assert res.code == 0, res.stderr
    assert sorted(p.name.split("-")[0] for p in house.glob("*.whl")) == ["pytorch_triton_rocm", "torch"]
    # The user name alone in the URL, the token in ~/.netrc: rocmkit's check, pip and uv all find it.
    forget_credentials()
    netrc = tmp_path / "home" / ".netrc"
    netrc.write_text(f"machine 127.0.0.1 login {USER} password {TOKEN}\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    base = f"http://{USER}@127.0.0.1:{server.port}/whl"
    res2 = rocmkit(
        "install", "--venv", str(tmp_path / "v"), "--plan", str(plan), "--index-base", base, "--quiet"
    )
    assert res2.code == 0, res2.stderr
    netrc.unlink()  # its own file: the search below is about what rocmkit wrote
    _no_token(res, res2, under=tmp_path)


def test_installers_get_the_token_from_their_environment_never_argv(tmp_path: Path) -> None:
    masked = conceal(f"https://{USER}:{TOKEN}@mirror.example/whl/rocm6.2/")
    sources = Sources(index_urls=(masked, "https://pypi.org/simple"))
    args, env = PipInstaller._source_args(sources), PipInstaller._source_env(sources)
    assert TOKEN not in " ".join(args) and "--index-url" not in args
    assert env["PIP_INDEX_URL"] == f"https://{USER}:{TOKEN}@mirror.example/whl/rocm6.2/"
    assert env["PIP_EXTRA_INDEX_URL"] == "https://pypi.org/simple"
    args, env = UvInstaller._source_args(sources), UvInstaller._source_env(sources)
    assert TOKEN not in " ".join(args) and "--index" not in args
    assert env["UV_INDEX"] == f"https://{USER}:{TOKEN}@mirror.example/whl/rocm6.2/"
    assert env["UV_DEFAULT_INDEX"] == "https://pypi.org/simple"
    # Without credentials nothing moves: the command line says where packages come from.
    plain = Sources(index_urls=("https://pypi.org/simple",))
    assert PipInstaller._source_args(plain) == ["--index-url", "https://pypi.org/simple"]
    assert PipInstaller._source_env(plain) == {}
    assert this_python().executable  # the installers above were never started


def test_matrix_refresh_reads_an_authenticated_simple_index(tmp_path: Path) -> None:
    folder = tmp_path / "matrices"
    shutil.copytree(REPO / "matrices", folder)
    with RecordedIndex(DATA / "upstream" / "pypi", basic_auth=(USER, TOKEN)) as srv:
        url = srv.url.replace("http://", f"http://{USER}:{TOKEN}@")
        res = rocmkit(
            "matrix", "refresh", "--write", "--dir", str(folder), "--from", str(DATA / "upstream"),
            "--simple", url, "--timeout", "10",
        )  # fmt: skip
        refused = list(srv.refused)
    assert res.code == 0, res.stderr
    assert refused == [] and f"reading http://{USER}:***@127.0.0.1" in res.stderr
    assert "redirected" not in res.stderr  # the credentials are not a change of host
    # The data's source lines name the index by its host alone: not even the user name.
    assert all(USER not in p.read_text() for p in folder.glob("*.toml"))
    assert rocmkit("matrix", "check", "--dir", str(folder)).code == 0
    _no_token(res, under=tmp_path)


def test_matrix_refresh_compare_and_its_errors(server: IndexServer, tmp_path: Path) -> None:
    res = rocmkit("matrix", "refresh", "--index", _base(server), "--only", "rocm6.2", "--timeout", "5")
    assert res.code == 0, res.stderr
    assert "torch 2.5.1+rocm6.2 has wheels for Python" in res.stdout
    bad = rocmkit(
        "matrix", "refresh", "--index", _base(server, "nope"), "--only", "rocm6.2", "--timeout", "5"
    )
    assert bad.code == 9
    assert last_error(bad.stderr).startswith(
        f"error: http://{USER}:***@127.0.0.1:{server.port}/whl/rocm6.2/torch/ refused rocmkit (HTTP 401)"
    )
    _no_token(res, bad, under=tmp_path)


def test_reports_snapshot_and_caches_hold_no_token(server: IndexServer, tmp_path: Path) -> None:
    env = {
        "ROCMKIT_INDEX_BASE": _base(server),
        "PIP_INDEX_URL": f"http://bob:{TOKEN}@127.0.0.1:{server.port}/simple",
    }
    junit, prom = tmp_path / "junit.xml", tmp_path / "node.prom"
    doc = rocmkit("doctor", "--level", "0", "--json", "--junit", str(junit), "--prom", str(prom), env=env)
    assert doc.code in (0, 2), doc.stderr
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "node1.json").write_text(doc.stdout)
    fleet = rocmkit("fleet", "summarize", str(reports), "--json", env=env)
    snap = rocmkit("snapshot", str(tmp_path / "snap"), env=env)
    assert snap.code == 0, snap.stderr
    res = rocmkit("resolve", "--offline", env=env)
    assert res.code == 0, res.stderr
    _no_token(doc, fleet, snap, res, under=tmp_path)
    assert os.environ.get("ROCMKIT_INDEX_BASE") is None


def test_the_live_status_line_masks_a_token_uv_prints(server: IndexServer, tmp_path: Path) -> None:
    """On a terminal the status line shows the download an installer says is under way
    ("Downloading ..."), written straight to the terminal (not through the lines rocmkit prints,
    which are redacted). Today's uv masks credentials itself and names packages, not URLs; pip
    names the URL, and an older one, a keyring plugin or an sdist's build may not mask it. A
    ``uv`` first on PATH says it downloads from the index it was given (its environment: the
    real URL), waits for the line to be drawn, and goes on as uv: the terminal's bytes hold no
    token."""
    from rocmkit.install.venv import find_uv
    from tests.support.pty_run import run_on_pty

    real_uv = find_uv()
    assert real_uv is not None
    shims = tmp_path / "shims"
    shims.mkdir()
    shim = shims / "uv"
    shim.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = pip ] && [ "$2" = install ]; then\n'
        '  echo "Downloading ${UV_DEFAULT_INDEX}torch-2.5.1.whl (1.0 MiB)"\n'
        "  sleep 1\n"
        "fi\n"
        f'exec "{real_uv}" "$@"\n'
    )
    shim.chmod(0o755)
    plan = _pytorch_plan(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "ROCMKIT_OFFLINE"}
    env.update(
        ROCMKIT_INDEX_BASE=_base(server),
        PATH=f"{shims}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(REPO),
    )
    venv = tmp_path / "venv"
    argv = ["install", "--venv", str(venv), "--plan", str(plan), "--installer", "uv"]
    run = run_on_pty([sys.executable, "-m", "rocmkit", *argv], env=env, timeout=180)
    assert run.code == 0, run.stderr[-3000:]
    shown = f"Downloading http://{USER}:***@127.0.0.1:{server.port}/whl/rocm6.2/torch-2.5.1.whl"
    # The download line made the status line (so the test sees what it means to), masked.
    assert any(text.startswith(f"uv install: {shown}") for text in run.status_texts()), run.status_texts()
    assert TOKEN not in run.stderr and TOKEN not in run.stdout


def test_pylock_export_through_the_mirror(server: IndexServer, tmp_path: Path) -> None:
    """`resolve --format pylock` has uv resolve the closure against the plan's indexes; the
    plan holds them masked, so a credentialed one reaches uv as an install's does (its
    environment, the real URL), never as ``user:***@`` on its argv (a 401)."""
    capture = DATA / "captures/mi250x-gfx90a-rocm6.2.1"
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    args = ("--capture", str(capture), "--torch", "2.5", "--rocm", "6.2", "--python", py, "--format", "pylock")
    res = rocmkit("resolve", *args, "--index-base", _base(server), env={"ROCMKIT_OFFLINE": None})
    assert res.code == 0, res.stderr
    assert f'name = "torch"\nversion = "{TORCH}"' in res.stdout
    assert f"http://127.0.0.1:{server.port}/whl/rocm6.2/torch-" in res.stdout and server.refused == []
    _no_token(res, under=tmp_path)
