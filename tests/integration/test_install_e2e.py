"""End-to-end `rocmkit install` with pip and uv against a real index on 127.0.0.1.

Every install here is real: generated wheels named and tagged like PyTorch's,
served as PEP 503/691/658 indexes, installed by pip or uv into fresh venvs;
the environment is compared before/after with `pip freeze --all` and with
rocmkit's RECORD fingerprints.

Installs default to uv (rocmkit's own default, and seconds faster here); pip has one test per
behaviour it drives: install and upgrade, restore after a failure midway, a hashed lock, and an
offline wheelhouse.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmkit.install.state import diff, snapshot
from rocmkit.plan import Backend, Plan
from rocmkit.pyenv import probe
from tests.support.cli import keep_user_config_out, last_error, run_main
from tests.support.pkgindex import PLATFORM_TAG, IndexServer, make_torch_set, make_wheel

pytestmark = pytest.mark.integration

UV = str(Path(sys.executable).parent / "uv")
TRITON_31 = f"pytorch_triton_rocm-3.1.0-{PLATFORM_TAG}.whl"
TORCH_251 = f"torch-2.5.1+rocm6.2-{PLATFORM_TAG}.whl"


def build_index(root: Path) -> None:
    make_torch_set(
        root / "whl/rocm6.1", "2.4.1+rocm6.1", triton="pytorch-triton-rocm==3.0.0", hip="6.1.40091"
    )
    make_torch_set(
        root / "whl/rocm6.2", "2.5.1+rocm6.2", triton="pytorch-triton-rocm==3.1.0", hip="6.2.41133"
    )
    # A "ROCm" index that actually serves a CPU build: install succeeds, verification must not.
    make_torch_set(root / "whl/cpu-as-rocm", "2.5.1+rocm6.2", triton="pytorch-triton-rocm==3.1.0", hip=None)
    # PyPI-like: a companion that wants another torch (the CUDA build from PyPI).
    make_wheel(root / "pypi", "transformers", "4.99.0", requires=["torch==2.6.0"])
    make_wheel(root / "pypi", "accelerate", "1.0.0", requires=["torch>=2.0"])
    make_torch_set(root / "pypi", "2.6.0", cuda="12.4")
    # A torch whose own dependency the index lacks: the install's resolution fails.
    make_torch_set(
        root / "whl/missing-dep", "2.5.1+rocm6.2", triton="pytorch-triton-rocm==3.1.0", hip="6.2.41133",
        extra_requires=["nosuchdep==1.0"],
    )


@pytest.fixture(autouse=True)
def _quiet_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keep_user_config_out(tmp_path / "home", monkeypatch)
    monkeypatch.setenv("PIP_DEFAULT_TIMEOUT", "5")


@pytest.fixture(scope="module")
def index_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index")
    build_index(root)
    return root


@pytest.fixture
def server(index_root: Path) -> Iterator[IndexServer]:
    with IndexServer(index_root) as srv:
        yield srv


def write_plan(
    folder: Path, srv: IndexServer, backend: str, torch: str, triton: str, index: str = ""
) -> Path:
    plan = Plan(
        backend=Backend.parse(backend),
        torch_version=torch,
        triton=triton,
        requirements=(f"torch=={torch}",),
        index_urls=(srv.index_url(index or f"whl/{backend}"),),
    )
    path = folder / f"plan-{backend}-{index.replace('/', '_')}.json"
    path.write_text(json.dumps(plan.to_dict()))
    return path


def plan_61(folder: Path, srv: IndexServer) -> Path:
    return write_plan(folder, srv, "rocm6.1", "2.4.1+rocm6.1", "pytorch-triton-rocm==3.0.0")


def plan_62(folder: Path, srv: IndexServer, index: str = "") -> Path:
    return write_plan(folder, srv, "rocm6.2", "2.5.1+rocm6.2", "pytorch-triton-rocm==3.1.0", index)


def rk(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return run_main(capsys, "install", *args)


def freeze(venv: Path) -> str:
    """`uv pip freeze` (pip's output format, without pip's 1-2 s start-up on this machine)."""
    result = subprocess.run(
        [UV, "pip", "freeze", "--python", str(venv / "bin/python")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout


def pip_freeze_all(venv: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin/python"), "freeze", "--all"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return result.stdout


def setup_61(capsys: pytest.CaptureFixture[str], tmp_path: Path, srv: IndexServer) -> Path:
    """A venv holding torch 2.4.1+rocm6.1 (installed with uv: fast), the state to protect."""
    venv = tmp_path / "venv"
    code, _, err = rk(capsys, "--venv", str(venv), "--plan", str(plan_61(tmp_path, srv)), "--installer", "uv")
    assert code == 0, err
    return venv


def corrupt_member(wheel: Path, member: str) -> None:
    """Flip bytes inside one member's data: the zip opens and METADATA reads, extraction fails."""
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo(member)
    data = bytearray(wheel.read_bytes())
    offset = info.header_offset
    name_len = int.from_bytes(data[offset + 26 : offset + 28], "little")
    extra_len = int.from_bytes(data[offset + 28 : offset + 30], "little")
    start = offset + 30 + name_len + extra_len
    for i in range(start, start + min(info.compress_size, 8)):
        data[i] ^= 0xFF
    wheel.write_bytes(bytes(data))


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_install_upgrade_guard_and_companions(
    installer: str, tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "venv"
    code, _, err = rk(
        capsys, "--venv", str(venv), "--plan", str(plan_61(tmp_path, server)), "--installer", installer
    )
    assert code == 0, err
    assert "created the virtual environment" in err
    assert "verified: torch 2.4.1+rocm6.1, hip 6.1.40091, triton 3.0.0" in err

    code, out, err = rk(
        capsys,
        "--venv",
        str(venv),
        "--plan",
        str(plan_62(tmp_path, server)),
        "--installer",
        installer,
        "--json",
    )
    assert code == 0, err
    outcome = json.loads(out)
    assert outcome["schema"] == "rocmkit.install/1"
    assert outcome["verification"]["hip"] == "6.2.41133"
    assert "torch 2.4.1+rocm6.1->2.5.1+rocm6.2" in outcome["changes"]
    assert freeze(venv).splitlines() == ["pytorch-triton-rocm==3.1.0", "torch==2.5.1+rocm6.2"]

    # The guard: a later plain `pip install` of a package wanting another torch is refused ...
    pypi = server.index_url("pypi")
    later = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin/python"),
            "install",
            "--index-url",
            pypi,
            "transformers",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert later.returncode != 0
    assert "torch==2.5.1+rocm6.2" in later.stdout + later.stderr
    # ... and so is `uv pip install` in the activated venv (bin/activate exports UV_CONSTRAINT).
    later_uv = subprocess.run(
        ["bash", "-c", f'. "{venv}/bin/activate" && "{UV}" pip install --index-url {pypi} transformers'],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert later_uv.returncode != 0
    assert "torch==2.5.1+rocm6.2" in later_uv.stderr
    assert freeze(venv).splitlines() == ["pytorch-triton-rocm==3.1.0", "torch==2.5.1+rocm6.2"]


def test_guard_lets_companions_through_when_they_fit(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "venv"
    plan = json.loads(plan_62(tmp_path, server).read_text())
    plan["index_urls"].append(server.index_url("pypi"))
    path = tmp_path / "plan-extra.json"
    path.write_text(json.dumps(plan))
    code, _, err = rk(capsys, "--venv", str(venv), "--plan", str(path), "--with", "accelerate")
    assert code == 0, err
    assert freeze(venv).splitlines() == [
        "accelerate==1.0.0",
        "pytorch-triton-rocm==3.1.0",
        "torch==2.5.1+rocm6.2",
    ]
    code, _, err = rk(capsys, "--venv", str(tmp_path / "v2"), "--plan", str(path), "--with", "transformers")
    assert code == 7
    assert "environment restored exactly" in err


def test_failed_verification_restores_the_previous_build(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = setup_61(capsys, tmp_path, server)
    target = probe(venv / "bin/python")
    guard_files = (venv / "pip.conf", venv / "rocmkit-constraints.txt", venv / "bin/activate")
    before_freeze = freeze(venv)
    before = snapshot(target, guard_files)

    bad = plan_62(tmp_path, server, index="whl/cpu-as-rocm")
    code, _, err = rk(capsys, "--venv", str(venv), "--plan", str(bad), "--installer", "uv")
    assert code == 7, err
    assert "torch.version.hip is empty: this torch is not a ROCm build" in err
    assert "backed up pytorch-triton-rocm, torch" in err
    assert "restored exactly" in err
    assert freeze(venv) == before_freeze
    # Exact: same versions, same files (RECORD fingerprints), same guard files, byte for byte.
    assert diff(before, snapshot(target, guard_files)).empty


def test_broken_wheel_midway_with_pip_restores_exactly(
    tmp_path: Path, index_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    shutil.copytree(index_root, root)
    # pip installs pytorch-triton-rocm first, then fails extracting torch: a real partial change.
    corrupt_member(root / "whl/rocm6.2" / TORCH_251, "torch/version.py")
    with IndexServer(root) as srv:
        venv = setup_61(capsys, tmp_path, srv)
        target = probe(venv / "bin/python")
        guard_files = (venv / "pip.conf", venv / "rocmkit-constraints.txt", venv / "bin/activate")
        before_files = snapshot(target, guard_files)
        before = pip_freeze_all(venv)
        code, _, err = rk(
            capsys, "--venv", str(venv), "--plan", str(plan_62(tmp_path, srv)), "--installer", "pip"
        )
    assert code == 7, err
    assert "rocmkit:   uninstalled" not in err  # nothing new stayed behind
    assert "reinstalled pytorch-triton-rocm==3.0.0" in err
    assert "restored exactly" in err
    assert pip_freeze_all(venv) == before
    assert "pytorch-triton-rocm==3.0.0\ntorch==2.4.1+rocm6.1\n" in before
    # Exact with pip too: same files (RECORD fingerprints) and guard files, byte for byte.
    assert diff(before_files, snapshot(target, guard_files)).empty


def test_index_going_away_midway_leaves_environment_unchanged(
    tmp_path: Path, index_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with IndexServer(index_root) as srv:
        venv = setup_61(capsys, tmp_path, srv)
        before = freeze(venv)
        # uv fetches both wheels at once: the torch download is cut off and the index is gone from
        # then on. (pip's restore after a failure midway: test_broken_wheel_midway_with_pip_...)
        srv.stop_at(TORCH_251)
        code, _, err = rk(
            capsys, "--venv", str(venv), "--plan", str(plan_62(tmp_path, srv)), "--installer", "uv"
        )
        assert any(r.endswith(TORCH_251) for r in srv.requests)
    assert code == 7, err
    assert "restored exactly" in err
    assert freeze(venv) == before


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_lock_then_hash_mismatch_is_refused(
    installer: str,
    tmp_path: Path,
    index_root: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "root"
    shutil.copytree(index_root, root)
    with IndexServer(root) as srv:
        lock = tmp_path / "torch.lock"
        code, _, err = rk(
            capsys, "--plan", str(plan_62(tmp_path, srv)), "--lock", str(lock), "--installer", installer
        )
        assert code == 0, err
        text = lock.read_text()
        assert "torch==2.5.1+rocm6.2 \\\n    --hash=sha256:" in text
        assert "pytorch-triton-rocm==3.1.0 \\\n    --hash=sha256:" in text
        assert "# rocmkit-plan: " in text

        good = tmp_path / "good"
        code, _, err = rk(capsys, "--venv", str(good), "--from-lock", str(lock), "--installer", installer)
        assert code == 0, err
        assert "verified: torch 2.5.1+rocm6.2" in err

        # A plain hashed requirements file (no rocmkit-plan line) installs too, unguarded.
        plain = tmp_path / "plain.lock"
        plain.write_text(
            "".join(line for line in text.splitlines(True) if not line.startswith("# rocmkit-plan"))
        )
        code, _, err = rk(
            capsys, "--venv", str(tmp_path / "plain"), "--from-lock", str(plain), "--installer", installer
        )
        assert code == 0, err
        assert "the lock carries no rocmkit plan; installing it without guard or verification" in err
        assert not (tmp_path / "plain/rocmkit-constraints.txt").exists()

        # The index now serves a different torch file under the same name.
        (root / "whl/rocm6.2" / TORCH_251).unlink()
        make_wheel(
            root / "whl/rocm6.2", "torch", "2.5.1+rocm6.2", tag=PLATFORM_TAG, files={"torch/__init__.py": ""}
        )
        venv = setup_61(capsys, tmp_path, srv)
        before = freeze(venv)
        # uv would reuse the good file it cached above (which matches the lock); make it fetch.
        monkeypatch.setenv("UV_NO_CACHE", "1")
        code, _, err = rk(capsys, "--venv", str(venv), "--from-lock", str(lock), "--installer", installer)
    assert code == 7, err
    assert "sha256 does not match the lock" in err
    assert freeze(venv) == before


def test_wheelhouse_made_once_installs_twice_offline(
    tmp_path: Path, index_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    house = tmp_path / "house"
    with IndexServer(index_root) as srv:
        code, _, err = rk(
            capsys, "--plan", str(plan_62(tmp_path, srv)), "--download-only", "--wheelhouse", str(house)
        )
        assert code == 0, err
    # The server is gone: anything that touches the network now fails.
    assert sorted(p.name for p in house.glob("*.whl")) == [TRITON_31, TORCH_251]
    for installer in ("uv", "pip"):
        venv = tmp_path / f"node-{installer}"
        code, out, err = rk(
            capsys, "--venv", str(venv), "--wheelhouse", str(house), "--installer", installer, "--json"
        )
        assert code == 0, err
        assert json.loads(out)["offline"] is True
        assert "verified: torch 2.5.1+rocm6.2, hip 6.2.41133, triton 3.1.0" in err
        assert freeze(venv).splitlines() == ["pytorch-triton-rocm==3.1.0", "torch==2.5.1+rocm6.2"]


@pytest.mark.parametrize("compile_flag", [(), ("--no-compile",)])
def test_the_check_writes_the_byte_code_of_what_it_imports(
    tmp_path: Path,
    server: IndexServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    compile_flag: tuple[str, ...],
) -> None:
    """The verification's imports write their .pyc files (pip compiles at install whatever
    PYTHONDONTWRITEBYTECODE says, and every later `import torch` reads them); --no-compile
    leaves none."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    venv = tmp_path / "venv"
    code, _, err = rk(
        capsys,
        "--venv",
        str(venv),
        "--plan",
        str(plan_62(tmp_path, server)),
        "--installer",
        "uv",
        *compile_flag,
    )
    assert code == 0, err
    assert "verified: torch 2.5.1+rocm6.2" in err
    site = probe(venv / "bin/python").purelib
    torch_pyc = sorted(p.name for p in (site / "torch").rglob("*.pyc"))
    triton_pyc = sorted(p.name for p in (site / "triton").rglob("*.pyc"))
    if compile_flag:
        assert torch_pyc == [] and triton_pyc == []
    else:
        assert any(name.startswith("__init__.") for name in torch_pyc), torch_pyc
        assert any(name.startswith("version.") for name in torch_pyc), torch_pyc
        assert triton_pyc, "import triton wrote no byte code"


def test_an_empty_venv_skips_the_dry_run_a_full_one_backs_up_after_it(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resolver's dry run only names what an install would replace, to back it up: a venv
    with nothing installed skips it (half a second with uv), one with torch runs it."""
    from rocmkit.install.uv import UvInstaller

    calls: list[str] = []
    real_dry_run = UvInstaller.dry_run

    def counted(self: UvInstaller, spec: object) -> object:
        calls.append("dry-run")
        return real_dry_run(self, spec)  # type: ignore[arg-type]

    monkeypatch.setattr(UvInstaller, "dry_run", counted)
    venv = tmp_path / "venv"
    subprocess.run([UV, "venv", "-q", str(venv)], check=True, timeout=60)
    code, _, err = rk(
        capsys, "--venv", str(venv), "--plan", str(plan_61(tmp_path, server)), "--installer", "uv"
    )
    assert code == 0, err
    assert calls == [] and "verified: torch 2.4.1+rocm6.1" in err
    code, _, err = rk(
        capsys, "--venv", str(venv), "--plan", str(plan_62(tmp_path, server)), "--installer", "uv"
    )
    assert code == 0, err
    assert calls == ["dry-run"]
    assert "backed up pytorch-triton-rocm, torch" in err


def test_a_failing_install_into_an_empty_venv_leaves_it_as_it_was(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """No dry run in an empty venv: uv's own resolution is the one that fails, and the venv is
    restored exactly (no guard files, no journal, activate byte for byte), with uv's reason."""
    venv = tmp_path / "venv"
    subprocess.run([UV, "venv", "-q", str(venv)], check=True, timeout=60)
    activate = (venv / "bin/activate").read_bytes()
    before = sorted(str(p.relative_to(venv)) for p in venv.rglob("*"))
    bad = plan_62(tmp_path, server, index="whl/missing-dep")
    code, _, err = rk(capsys, "--venv", str(venv), "--plan", str(bad), "--installer", "uv")
    assert code == 7, err
    last = last_error(err)
    assert last.startswith("error: uv could not resolve the planned packages: ") and "nosuchdep" in last, last
    assert "guard" not in last  # the plan's own closure, not the guard, is why
    assert "environment restored exactly" in last
    assert (venv / "bin/activate").read_bytes() == activate
    # uv's own lock file (`.lock`, made by any uv run on the venv) is the one file allowed.
    after = sorted(str(p.relative_to(venv)) for p in venv.rglob("*"))
    assert [f for f in after if f != ".lock"] == [f for f in before if f != ".lock"]
