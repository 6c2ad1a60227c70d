"""The WSL2 runtime step on a fake torch in real venvs: AMD's `rm libhsa-runtime64.so*` in
torch/lib, done by `rocmkit install` for a WSL2 ROCm plan, journaled, restored when the install
fails, restored from the journal after a kill -9, and refused when that journal names any other
file. The wheels are served by a real index on 127.0.0.1 and installed by uv."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmkit.install import journal, wsl_runtime
from rocmkit.install.base import Limits
from rocmkit.install.installers import choose_installer
from rocmkit.install.recover import recover_pending
from rocmkit.install.transaction import Transaction
from rocmkit.plan import Backend, Plan
from rocmkit.pyenv import probe
from tests.integration.test_install_e2e import _quiet_user_config, freeze, rk  # noqa: F401 (autouse)
from tests.support.pkgindex import PLATFORM_TAG, IndexServer, make_wheel, torch_files

pytestmark = pytest.mark.integration

TORCH = "2.9.1+rocm7.2"
BUNDLED = {
    "torch/lib/libhsa-runtime64.so": "bundled ROCr (knows /dev/kfd only)\n",
    "torch/lib/libhsa-runtime64.so.1": "bundled ROCr, soname link\n",
    "torch/lib/libtorch_hip.so": "torch's own library: must stay\n",
}


def _torch(folder: Path, hip: str | None) -> None:
    make_wheel(folder, "torch", TORCH, tag=PLATFORM_TAG, files={**torch_files(TORCH, hip=hip), **BUNDLED},
               requires_python=">=3.9")  # fmt: skip


@pytest.fixture(scope="module")
def index_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index")
    _torch(root / "whl/rocm7.2", hip="7.2.53211")
    _torch(root / "whl/cpu-as-rocm7.2", hip=None)  # installs, then fails verification
    return root


@pytest.fixture
def server(index_root: Path) -> Iterator[IndexServer]:
    with IndexServer(index_root) as srv:
        yield srv


@pytest.fixture
def rocm_lib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """/opt/rocm/lib of a WSL2 machine: the runtime torch uses once its own is gone."""
    lib = tmp_path / "opt/rocm/lib"
    lib.mkdir(parents=True)
    (lib / "libhsa-runtime64.so.1.18.0").write_text("ROCr with DXG detection\n")
    monkeypatch.setattr(wsl_runtime, "SYSTEM_LIB", str(lib))
    return lib


def _plan(folder: Path, srv: IndexServer, index: str = "whl/rocm7.2", platform: str | None = "wsl2-x86_64") -> Path:
    plan = Plan(
        backend=Backend.parse("rocm7.2"),
        torch_version=TORCH,
        requirements=(f"torch=={TORCH}",),
        index_urls=(srv.index_url(index),),
        env={"HSA_ENABLE_DXG_DETECTION": "1"},
        platform=platform,
    )
    path = folder / f"plan-{index.replace('/', '_')}-{platform}.json"
    path.write_text(json.dumps(plan.to_dict()))
    return path


def _lib(venv: Path) -> Path:
    (lib,) = venv.glob("lib/python3*/site-packages/torch/lib")
    return lib


def test_wsl_plan_removes_the_bundled_runtime_and_keeps_the_rest(
    tmp_path: Path, server: IndexServer, rocm_lib: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "venv"
    code, _, err = rk(capsys, "--venv", str(venv), "--plan", str(_plan(tmp_path, server)), "--installer", "uv")
    assert code == 0, err
    assert sorted(p.name for p in _lib(venv).iterdir()) == ["libtorch_hip.so"]
    assert "WSL2: removed torch's bundled libhsa-runtime64.so, libhsa-runtime64.so.1" in err
    assert not (venv / journal.JOURNAL_NAME).exists()  # committed
    # The same plan without the WSL platform leaves torch as its wheel made it.
    other = tmp_path / "plain"
    code, _, err = rk(capsys, "--venv", str(other), "--plan", str(_plan(tmp_path, server, platform=None)),
                      "--installer", "uv")  # fmt: skip
    assert code == 0, err
    assert len(list(_lib(other).iterdir())) == 3


def test_no_wsl_runtime_means_nothing_changes(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wsl_runtime, "SYSTEM_LIB", str(tmp_path / "no/rocm/lib"))
    venv = tmp_path / "venv"
    code, _, err = rk(capsys, "--venv", str(venv), "--plan", str(_plan(tmp_path, server)), "--installer", "uv")
    assert code != 0
    assert "needs ROCm's runtime in" in err and "fix:" in err and "Traceback" not in err
    assert not list(venv.glob("lib/python3*/site-packages/torch"))


def test_a_failed_install_after_the_step_restores_the_venv(
    tmp_path: Path, server: IndexServer, rocm_lib: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "venv"
    bad = _plan(tmp_path, server, index="whl/cpu-as-rocm7.2")
    code, _, err = rk(capsys, "--venv", str(venv), "--plan", str(bad), "--installer", "uv")
    assert code != 0
    assert "WSL2: removed" in err and "restored exactly" in err, err
    assert not venv.exists() or "torch" not in freeze(venv)
    assert not list(venv.glob("lib/python3*/site-packages/torch"))
    assert not (venv / journal.JOURNAL_NAME).exists()


def test_a_journal_left_by_a_kill_puts_the_runtime_back_and_names_nothing_else(
    tmp_path: Path, server: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # torch as its wheel made it (no WSL step yet).
    venv = tmp_path / "venv"
    plain = _plan(tmp_path, server, platform=None)
    # pip here (uv elsewhere): both installers go through the same transaction.
    assert rk(capsys, "--venv", str(venv), "--plan", str(plain), "--installer", "pip")[0] == 0
    lib = _lib(venv)
    before = {p.name: p.read_bytes() for p in lib.iterdir()}
    target = probe(venv / "bin/python")
    installer = choose_installer("pip", target, Limits())
    # An install that journaled the step, did it, and was killed (no commit, no restore).
    tx = Transaction(installer, Path(journal.install_folder()) / "wsl-test", wsl_runtime.runtime_files(target))
    tx.manage(wsl_runtime.runtime_files(target))
    assert {p.name for p in wsl_runtime.remove_bundled(target)} == {"libhsa-runtime64.so", "libhsa-runtime64.so.1"}
    assert (venv / journal.JOURNAL_NAME).exists()
    # A journal naming another file than the runtime's is refused (exit 13), nothing restored.
    data = json.loads((venv / journal.JOURNAL_NAME).read_text())
    evil = dict(data, files={**data["files"], str(lib / "libtorch_hip.so"): None})
    seal = json.loads(tx.journal.seal_path.read_text())
    (venv / journal.JOURNAL_NAME).write_text(json.dumps(evil))
    _reseal(tx.journal, seal)  # as only someone who can write rocmkit's own cache could
    with pytest.raises(journal.JournalRefused, match=r"libtorch_hip\.so, which is not a file rocmkit manages"):
        journal.read(target)
    (venv / journal.JOURNAL_NAME).write_text(json.dumps(data))
    _reseal(tx.journal, seal)
    said: list[str] = []
    assert recover_pending(target, installer, said.append)
    assert {p.name: p.read_bytes() for p in lib.iterdir()} == before
    assert not (venv / journal.JOURNAL_NAME).exists()


def _reseal(j: journal.Journal, seal: dict[str, object]) -> None:
    digest = hashlib.sha256(j.path.read_bytes()).hexdigest()
    j.seal_path.write_text(json.dumps({**seal, "digests": [digest]}))


def test_only_runtime_files_in_torch_lib_are_restorable(tmp_path: Path) -> None:
    venv = tmp_path / "v"
    target = probe_like(venv)
    lib = venv / "lib/python3.12/site-packages/torch/lib"
    assert wsl_runtime.is_runtime_file(target, str(lib / "libhsa-runtime64.so.1"))
    assert not wsl_runtime.is_runtime_file(target, str(lib / "libtorch_hip.so"))
    assert not wsl_runtime.is_runtime_file(target, str(lib / "../../torch/lib/x/libhsa-runtime64.so"))
    assert not wsl_runtime.is_runtime_file(target, str(venv / "bin/libhsa-runtime64.so"))


def probe_like(venv: Path):  # type: ignore[no-untyped-def]
    from rocmkit.pyenv import PyEnv

    site = venv / "lib/python3.12/site-packages"
    return PyEnv(executable=venv / "bin/python", version="3.12.3", prefix=venv, purelib=site, platlib=site,
                 stdlib=venv, include=venv, venv=venv)  # fmt: skip
