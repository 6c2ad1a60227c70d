"""What resolve plans is what install lands, or both refuse before anything changes (issue 36).

One index server on 127.0.0.1 for the module, its folders standing for PyTorch's CPU index
(``whl/cpu``: torch and torchaudio, and a torchvision page that lists nothing), PyPI (``pypi``:
timm, which needs torchvision, PyPI's torchvision built for another torch, Triton and numpy) and a
mirror the user's pip configuration names (``mirror``: torch only). The data's PyPI is pointed at
``pypi`` (a copy of matrices/), so nothing here reaches the network. Each case checks that the plan
``resolve`` prints is what ``pip freeze`` shows after ``install``, or that both commands refuse
with the same line and the venv is byte-for-byte as it was.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmkit.install import lock
from rocmkit.install.base import Sources
from rocmkit.install.wheelhouse import LOCK_NAME, lock_from_folder
from rocmkit.matrix import load_matrix
from rocmkit.plan import Backend, Plan
from rocmkit.util.paths import matrices_dir, shipped_matrices_dir
from tests.support.cli import keep_user_config_out, last_error, run_main
from tests.support.pkgindex import IndexServer, closed_port, make_torch_set, make_wheel

pytestmark = pytest.mark.integration

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
REPO = Path(__file__).resolve().parents[2]
UV = shutil.which("uv", path=str(Path(sys.executable).parent)) or "uv"

# The CPU companions of torch 2.13.0 and the data's interpreter Triton, as matrices/torch.toml pairs them.
_REL = load_matrix().torch_release("2.13.0")
assert _REL is not None and _REL.torchvision and _REL.torchaudio
TORCHVISION = f"{_REL.torchvision}+cpu"
TORCHAUDIO = f"{_REL.torchaudio}+cpu"


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[IndexServer, Path]]:
    root = tmp_path_factory.mktemp("closure-index")
    cpu = root / "whl" / "cpu"
    make_torch_set(cpu, "2.13.0+cpu")
    make_wheel(cpu, "torchaudio", TORCHAUDIO, requires=["torch==2.13.0"])
    pypi = root / "pypi"
    make_wheel(pypi, "timm", "1.0.0", requires=["torch", "torchvision"])
    make_wheel(pypi, "tinyextra", "1.0.0", requires=["torch"])
    make_wheel(pypi, "torchvision", _REL.torchvision or "", requires=["torch==2.13.0"])  # PyPI's: another build
    make_wheel(pypi, "triton", "3.8.0")
    make_wheel(pypi, "numpy", "2.0.0")
    make_torch_set(root / "mirror", "2.13.0+cpu")
    data = tmp_path_factory.mktemp("closure-matrices")
    with IndexServer(root) as srv:
        srv.empty = {"torchvision"}  # whl/cpu answers torchvision with a page that lists nothing
        shutil.copytree(shipped_matrices_dir(), data, dirs_exist_ok=True)
        channels = data / "channels.toml"
        channels.write_text(channels.read_text().replace('"https://pypi.org/simple"', f'"{srv.index_url("pypi")}"'))
        yield srv, data


@pytest.fixture
def env(
    rig: tuple[IndexServer, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[IndexServer]:
    srv, data = rig
    keep_user_config_out(tmp_path / "home", monkeypatch)
    monkeypatch.delenv("ROCMKIT_OFFLINE")
    monkeypatch.setenv("ROCMKIT_MATRICES_DIR", str(data))
    matrices_dir.cache_clear()  # the folder is read once per process
    monkeypatch.setenv("ROCMKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ROCMKIT_ALLOW_INSECURE_INDEX", "1")
    monkeypatch.setenv("PIP_INDEX_URL", srv.index_url("pypi"))
    yield srv
    matrices_dir.cache_clear()


def snapshot(venv: Path) -> dict[str, str]:
    """Every file of the venv with its sha256 (a link: where it points)."""
    out = {}
    for path in sorted(venv.rglob("*")):
        rel = str(path.relative_to(venv))
        if path.is_symlink():
            out[rel] = "-> " + str(path.readlink())
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def make_venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    return path


def freeze(venv: Path) -> dict[str, str]:
    text = subprocess.run(
        [UV, "pip", "freeze", "--python", str(venv / "bin/python")], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return dict(line.split("==", 1) for line in text.splitlines() if "==" in line)


def planned(plan: dict[str, object]) -> dict[str, str | None]:
    """The plan's closure: {name: pinned version, or None where it pins none}."""
    reqs = [*plan["requirements"], *(p["requirement"] for p in plan["with_packages"])]  # type: ignore[misc, attr-defined]
    return {r.split("==")[0]: (r.split("==")[1] if "==" in r else None) for r in reqs}


def same(plan: dict[str, str | None], frozen: dict[str, str]) -> None:
    assert set(plan) == set(frozen), (plan, frozen)
    for name, version in plan.items():
        assert version is None or frozen[name] == version, (name, version, frozen[name])


def test_a_with_package_needing_a_build_no_source_serves_is_refused_before_anything_changes(
    env: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planned index is down; --fallback-index turns to the user's sources, which hold torch
    2.13.0+cpu but only PyPI's torchvision (built for another torch). timm needs torchvision:
    refused by resolve and install alike, naming timm, the missing build and the fixes."""
    dead = f"http://127.0.0.1:{closed_port()}/whl"
    monkeypatch.setenv("ROCMKIT_INDEX_BASE", dead)
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", env.index_url("mirror"))
    venv = make_venv(tmp_path / "venv")
    before = snapshot(venv)
    code, _, err = run_main(capsys, "resolve", "--fallback-index", "--with", "timm")
    assert code == 6, err
    said = last_error(err)
    assert f"--with timm needs torchvision, and no source the install uses serves torchvision=={TORCHVISION}" in said
    assert f"would give torchvision {_REL.torchvision}, a build for another torch" in said, err
    assert "\nfix: install without --with timm" in said
    code, _, err = run_main(capsys, "install", "--venv", str(venv), "--with", "timm", "--fallback-index")
    assert code == 6, err
    assert last_error(err) == said
    assert snapshot(venv) == before
    # Without --with timm the same sources install torch, said as resolve says it.
    code, out, err = run_main(capsys, "resolve", "--fallback-index", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["torch_version"] == "2.13.0+cpu"
    assert f"torchvision=={TORCHVISION}" in plan["unserved"]
    code, out, err = run_main(capsys, "install", "--venv", str(venv), "--fallback-index", "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["requirements"] == plan["requirements"]


def test_an_empty_page_is_none_and_the_plan_lands_as_printed_then_is_kept(
    env: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = env.url + "/whl"
    monkeypatch.setenv("ROCMKIT_INDEX_BASE", base)
    code, out, err = run_main(capsys, "resolve", "--json")
    assert code == 0, err
    plan = json.loads(out)
    # The torchvision page lists nothing: that is "none", as a 404 is; the plan does not pin it.
    assert plan["torch_version"] == "2.13.0+cpu"
    assert not any(r.startswith("torchvision") for r in plan["requirements"])
    assert plan["unserved"] == [f"torchvision=={TORCHVISION}"]
    venv = tmp_path / "venv"
    code, out, err = run_main(capsys, "install", "--venv", str(venv), "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["requirements"] == plan["requirements"]
    # timm needs the torchvision built for this torch, which no source serves: refused first.
    code, _, err = run_main(capsys, "install", "--venv", str(venv), "--with", "timm")
    assert code == 6 and "--with timm needs torchvision" in err, err
    assert not venv.exists()
    # The whole closure, as uv resolves it from the sources the install uses, before installing.
    code, out, err = run_main(capsys, "resolve", "--closure", "--json")
    assert code == 0, err
    closure = dict(c.split("==") for c in json.loads(out)["closure"])
    code, _, err = run_main(capsys, "install", "--venv", str(venv), "--installer", "uv")
    assert code == 0, err
    same(planned(plan), freeze(venv))
    assert freeze(venv) == closure
    guard = (venv / "rocmkit-constraints.txt").read_text()
    assert "torch==2.13.0+cpu" in guard and "torchvision" not in guard.split("# Left out")[0].split("\n#")[-1]

    # A newer torch appears on the index; --with on this venv keeps the torch rocmkit put there.
    make_torch_set(env.root / "whl" / "cpu", "2.14.0+cpu")
    monkeypatch.setenv("ROCMKIT_CACHE_DIR", str(tmp_path / "cache2"))
    code, out, err = run_main(capsys, "resolve", "--json")
    assert code == 0 and json.loads(out)["torch_version"] == "2.14.0+cpu", err
    code, out, err = run_main(capsys, "resolve", "--venv", str(venv), "--with", "tinyextra", "--json")
    assert code == 0, err
    kept = json.loads(out)
    assert kept["torch_version"] == "2.13.0+cpu"
    assert any(r.startswith("the plan keeps torch 2.13.0+cpu, which rocmkit installed") for r in kept["reasons"])
    code, out, err = run_main(capsys, "install", "--venv", str(venv), "--with", "tinyextra", "--installer", "uv", "--json")
    assert code == 0, err
    assert "the plan keeps torch 2.13.0+cpu" in err
    same(planned(kept), freeze(venv))
    # torch's index goes away: the venv holds the torch kept, so what is added comes from the
    # plan's other index (PyPI here), said; nothing is fetched from anywhere else.
    before = freeze(venv)
    monkeypatch.setenv("ROCMKIT_INDEX_BASE", f"http://127.0.0.1:{closed_port()}/whl")
    monkeypatch.setenv("ROCMKIT_CACHE_DIR", str(tmp_path / "cache3"))
    make_wheel(env.root / "pypi", "tinyextra2", "1.0.0", requires=["torch"])
    code, _, err = run_main(capsys, "install", "--venv", str(venv), "--with", "tinyextra2", "--installer", "uv")
    assert code == 0, err
    assert "(kept), so what is added comes from" in err
    assert freeze(venv) == {**before, "tinyextra2": "1.0.0"}
    monkeypatch.setenv("ROCMKIT_INDEX_BASE", base)
    # A source that does not hold the closure is said before anything is installed.
    code, _, err = run_main(capsys, "resolve", "--venv", str(venv), "--with", "nosuchpkg", "--closure")
    assert code == 6, err
    assert "the plan's closure does not resolve from" in err and "nosuchpkg" in err
    # Replacing it is asked for by name.
    code, out, err = run_main(
        capsys, "resolve", "--venv", str(venv), "--with", "tinyextra", "--upgrade", "--json"
    )
    assert code == 0 and json.loads(out)["torch_version"] == "2.14.0+cpu", err
    (env.root / "whl" / "cpu" / next(p.name for p in (env.root / "whl/cpu").glob("torch-2.14.0*"))).unlink()


def test_an_index_listing_only_old_builds_does_not_steer_the_plan_down(
    env: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = env.root
    make_torch_set(root / "old" / "cpu", "2.9.0+cpu")
    make_torch_set(root / "near" / "cpu", "2.12.1+cpu")
    (root / "none" / "cpu").mkdir(parents=True)
    make_wheel(root / "none" / "cpu", "numpy", "2.0.0")  # an index, whose torch page lists nothing
    monkeypatch.setenv("ROCMKIT_INDEX_BASE", env.url + "/near")
    code, out, err = run_main(capsys, "resolve", "--json")
    assert code == 0 and json.loads(out)["torch_version"] == "2.12.1+cpu", err  # the newest it lists
    monkeypatch.setenv("ROCMKIT_INDEX_BASE", env.url + "/old")
    code, _, err = run_main(capsys, "resolve")
    assert code == 6, err
    assert "the newest build of this kind it lists for Python" in err and "torch 2.9.0+cpu" in err
    assert "past the support window" in err and "--torch 2.9" in err
    code, out, err = run_main(capsys, "resolve", "--torch", "2.9", "--json")
    assert code == 0 and json.loads(out)["torch_version"] == "2.9.0+cpu", err  # asked by name
    venv = make_venv(tmp_path / "venv")
    before = snapshot(venv)
    code, _, err = run_main(capsys, "install", "--venv", str(venv))
    assert code == 6 and "past the support window" in err, err
    assert snapshot(venv) == before
    monkeypatch.setenv("ROCMKIT_INDEX_BASE", env.url + "/none")
    code, _, err = run_main(capsys, "resolve")
    assert code == 6, err
    assert f"no +cpu build is listed for Python {PY}" in err


def test_the_live_check_does_not_follow_a_redirect_to_another_host(
    env: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # 127.0.0.1 sends /moved/ to localhost: the same machine, another host name.
    env.redirect["/moved/"] = f"http://localhost:{env.port}/whl/"
    try:
        monkeypatch.setenv("ROCMKIT_INDEX_BASE", env.url + "/moved")
        code, out, err = run_main(capsys, "resolve", "--json")
        assert code == 0, err
        reasons = json.loads(out)["reasons"]
        assert any("redirected (HTTP 302) to another host, localhost" in r and "--allow redirect=localhost" in r for r in reasons)
        code, out, err = run_main(capsys, "resolve", "--json", "--allow-redirect", "localhost")
        assert code == 0, err
        assert json.loads(out)["torch_version"] == "2.13.0+cpu"
    finally:
        env.redirect.clear()


def test_a_wheelhouse_guards_only_what_it_holds(
    env: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    house = tmp_path / "house"
    make_torch_set(house, "2.13.0+cpu")
    plan = Plan(
        backend=Backend.parse("cpu"),
        torch_version="2.13.0+cpu",
        requirements=("torch==2.13.0+cpu", f"torchvision=={TORCHVISION}", f"torchaudio=={TORCHAUDIO}"),
        companions=(f"torchvision=={TORCHVISION}", f"torchaudio=={TORCHAUDIO}"),
        index_urls=(env.url + "/whl/cpu",),
        python=PY,
    )
    (house / LOCK_NAME).write_text(lock.render(lock_from_folder(house), Sources(find_links=(str(house),)), plan))
    venv = tmp_path / "venv"
    code, _, err = run_main(capsys, "install", "--venv", str(venv), "--wheelhouse", str(house))
    assert code == 0, err
    pins = [line for line in (venv / "rocmkit-constraints.txt").read_text().splitlines() if not line.startswith("#")]
    assert pins == ["torch==2.13.0+cpu"]
    assert freeze(venv) == {"torch": "2.13.0+cpu"}


def test_install_plans_the_torch_xformers_pairs_with_as_resolve_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Offline, from the sourced pairing data: resolve and install --dry-run name the same torch."""
    capture = str(REPO / "tests/data/captures/mi300x8-rocm-smi-stas00")
    code, out, err = run_main(capsys, "resolve", "--capture", capture, "--with", "xformers", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["torch_version"] == "2.10.0+rocm7.1"
    venv = tmp_path / "v"
    code, out, err = run_main(capsys, "install", "--capture", capture, "--venv", str(venv), "--with", "xformers", "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["requirements"] == plan["requirements"]
    assert "with xformers==0.0.35 (prebuilt wheel)" in err and not venv.exists()


def test_the_doctor_remedy_for_a_mismatched_torchvision_fixes_it(
    env: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PyPI's torchvision beside a CPU torch (what issue 36 found landing): the command doctor's
    models.companions names puts in the torchvision built for this torch."""
    import shlex

    from rocmkit.doctor.checks.models import matching_set_command

    fix = env.root / "fix" / "cpu"
    make_torch_set(fix, "2.13.0+cpu")
    make_wheel(fix, "torchvision", TORCHVISION, requires=["torch==2.13.0"])
    make_wheel(fix, "torchaudio", TORCHAUDIO, requires=["torch==2.13.0"])
    venv = make_venv(tmp_path / "venv")
    python = str(venv / "bin/python")
    for req, index in (("torch==2.13.0+cpu", "fix/cpu"), (f"torchvision=={_REL.torchvision}", "pypi")):
        subprocess.run(
            [UV, "pip", "install", "-q", "--python", python, "--no-deps", req, "--index-url", env.index_url(index)],
            check=True, timeout=120,
        )
    assert freeze(venv)["torchvision"] == _REL.torchvision
    monkeypatch.setenv("ROCMKIT_INDEX_BASE", env.url + "/fix")
    command = matching_set_command("2.13.0+cpu", prefix=str(venv))
    assert command == f"rocmkit install --venv {venv} --torch 2.13.0 --backend cpu"
    code, _, err = run_main(capsys, *shlex.split(command)[1:], "--installer", "uv")
    assert code == 0, err
    frozen = freeze(venv)
    assert (frozen["torch"], frozen["torchvision"], frozen["torchaudio"]) == ("2.13.0+cpu", TORCHVISION, TORCHAUDIO)


def test_with_timm_the_newest_torch_whose_torchvision_is_served_wins(
    env: IndexServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One resolution of the whole closure: the index serves torch 2.13.0+cpu without its
    torchvision, and 2.12.1+cpu with it. timm needs torchvision, so 2.12.1 is planned (said as a
    trade) by resolve and install alike, and lands as printed."""
    old = load_matrix().torch_release("2.12.1")
    assert old is not None and old.torchvision and old.torchaudio
    idx = env.root / "older" / "cpu"
    make_torch_set(idx, "2.13.0+cpu")
    make_wheel(idx, "torchaudio", TORCHAUDIO, requires=["torch==2.13.0"])
    make_torch_set(idx, "2.12.1+cpu")
    make_wheel(idx, "torchvision", f"{old.torchvision}+cpu", requires=["torch==2.12.1"])
    make_wheel(idx, "torchaudio", f"{old.torchaudio}+cpu", requires=["torch==2.12.1"])
    monkeypatch.setenv("ROCMKIT_INDEX_BASE", env.url + "/older")
    code, out, err = run_main(capsys, "resolve", "--json")
    assert code == 0 and json.loads(out)["torch_version"] == "2.13.0+cpu", err  # alone: the newest
    code, out, err = run_main(capsys, "resolve", "--with", "timm", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["torch_version"] == "2.12.1+cpu"
    assert f"torchvision=={old.torchvision}+cpu" in plan["requirements"]
    assert plan["reasons"][0] == (
        "torch 2.12.1, not 2.13.0: the newest release whose torchvision (needed by timm) the sources serve "
        "for this build"
    )
    venv = tmp_path / "venv"
    code, _, err = run_main(capsys, "install", "--venv", str(venv), "--with", "timm", "--installer", "uv")
    assert code == 0, err
    same(planned(plan), freeze(venv))
