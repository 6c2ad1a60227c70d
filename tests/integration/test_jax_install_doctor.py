"""`rocmkit install --framework jax` and `rocmkit doctor --framework jax`, for real, on this CPU machine.

The real jax and jaxlib wheels (and numpy, scipy, ml_dtypes, opt_einsum) come from a PEP 503
index on 127.0.0.1 built from the distributions installed in the test interpreter
(tests/support/installed_wheels.py; the `test` extra pins jax and jaxlib): nothing is
downloaded. The matrix's PyPI URL (channels.toml) points at that index, as a mirror's copy of
the data would. Then: the install is verified and guarded, a later install that wants another
jaxlib is refused by the guard, and the doctor runs every jax check a CPU can run, passing,
with the jit speedup in the report.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.cli import run_main
from tests.support.engines import in_ci
from tests.support.installed_wheels import closure, wheel_from_installed
from tests.support.pkgindex import IndexServer, make_torch_set, make_wheel

pytestmark = [pytest.mark.integration, pytest.mark.slow]

try:
    JAX = metadata.version("jax")
except metadata.PackageNotFoundError:  # pragma: no cover - the `test` extra installs it
    JAX = ""
if not JAX:
    # In the test extra: absent in CI (.ci/run installs it) is a broken setup, not a skip.
    _WHY = "jax is not installed in the test interpreter (`pip install -e .[test]` installs it)"
    if in_ci():
        pytest.fail(f"CI must have this (.ci/run and scripts/test.sh set it up): {_WHY}", pytrace=False)
    pytest.skip(_WHY, allow_module_level=True)
PY = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(scope="module")
def pypi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexServer]:
    root = tmp_path_factory.mktemp("index")
    for name in closure(("jax", "jaxlib")):
        wheel_from_installed(name, root / "simple")
    # A later install that wants another jaxlib: the guard must refuse it, not swap jaxlib.
    make_wheel(root / "simple", "wants-newer-jaxlib", "1.0", requires=["jaxlib>=99"])
    with IndexServer(root) as srv:
        yield srv


@pytest.fixture(scope="module")
def uv_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One cache for the module: the second install links jaxlib's files instead of unpacking them again.
    return tmp_path_factory.mktemp("uv-cache")


@pytest.fixture
def env(tmp_path: Path, pypi: IndexServer, uv_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "matrices"
    shutil.copytree(REPO / "matrices", data)
    channels = data / "channels.toml"
    text = channels.read_text()
    assert 'pypi = "https://pypi.org/simple"' in text
    channels.write_text(text.replace('pypi = "https://pypi.org/simple"', f'pypi = "{pypi.url}/simple"'))
    monkeypatch.setenv("ROCMKIT_MATRICES_DIR", str(data))
    monkeypatch.setenv("ROCMKIT_ALLOW_INSECURE_INDEX", "1")
    monkeypatch.setenv("ROCMKIT_NO_GPU", "1")
    monkeypatch.setenv("UV_NO_CONFIG", "1")
    monkeypatch.setenv("UV_CACHE_DIR", str(uv_cache))
    monkeypatch.setenv("PIP_INDEX_URL", f"{pypi.url}/simple")
    monkeypatch.setenv("ROCMKIT_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "VIRTUAL_ENV", "UV_CONSTRAINT"):
        monkeypatch.delenv(var, raising=False)
    # Two host devices, so that the collective (jax.psum) has something to sum across on a CPU.
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    return tmp_path


rk = run_main


def _refused(venv: Path, url: str) -> subprocess.CompletedProcess[str]:
    """What `uv pip install wants-newer-jaxlib` does in the guarded venv (bin/activate exports UV_CONSTRAINT)."""
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    env = {**os.environ, "UV_CONSTRAINT": str(venv / "rocmkit-constraints.txt")}
    return subprocess.run(
        [uv, "pip", "install", "--python", str(venv / "bin" / "python"), "wants-newer-jaxlib",
         "--index-url", f"{url}/simple"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )


def test_install_jax_guard_and_doctor(env: Path, pypi: IndexServer, capsys: pytest.CaptureFixture[str]) -> None:
    venv = env / "venv"
    code, out, err = rk(capsys, "install", "--framework", "jax", "--cpu", "--jax", JAX, "--venv", str(venv),
                        "--installer", "uv", "--json")
    assert code == 0, err
    assert f"verified: jax {JAX}, jaxlib {JAX}" in err
    outcome = json.loads(out)
    assert outcome["requirements"] == [f"jax=={JAX}", f"jaxlib=={JAX}"]
    pins = (venv / "rocmkit-constraints.txt").read_text()
    assert f"jax=={JAX}\n" in pins and f"jaxlib=={JAX}\n" in pins
    assert "UV_CONSTRAINT" in (venv / "bin" / "activate").read_text()

    refused = _refused(venv, pypi.url)
    assert refused.returncode != 0 and "jaxlib" in refused.stderr, refused.stderr
    assert metadata.version("jaxlib") == JAX  # (the test interpreter's own, for the record)

    code, out, err = rk(capsys, "doctor", "--framework", "jax", "--venv", str(venv), "--level", "3", "--json",
                        "--set", "jax_jit_repeats=5", "--set", "jax_matmul_size=256", "--jobs", "2")
    report = json.loads(out)
    jax_results = {r["name"]: r for r in report["results"] if r["name"].startswith("jax.")}
    assert set(jax_results) == {"jax.import", "jax.devices", "jax.jit", "jax.matmul", "jax.psum"}, err
    for name, r in jax_results.items():
        assert r["status"] == "pass", (name, r["message"], err)
    # A venv with jax and no torch is not failed for lacking torch: its checks are not run.
    assert not any(r["name"].startswith(("torch.", "triton.", "models.", "attention.")) for r in report["results"])
    assert code == 0, err
    speedups = {f["name"]: f["value"] for f in jax_results["jax.jit"]["figures"] if f["unit"] == "x"}
    assert set(speedups) == {"mlp.speedup", "softmax.speedup", "layer_norm.speedup"}
    assert "jit vs op by op on cpu" in jax_results["jax.jit"]["message"]
    assert jax_results["jax.devices"]["message"] == "cpu: 2 device(s)"
    assert "over 2 cpu devices" in jax_results["jax.psum"]["message"]
    assert report["versions"]["jax"] == JAX


def test_torch_and_jax_in_one_venv_keep_both_pins(
    env: Path, pypi: IndexServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from rocmkit.detect import load_machine
    from rocmkit.resolve import Constraints, resolve

    # torch's CPU wheels from a local copy of PyTorch's cpu index (synthetic builds, as the
    # other install tests use), jax's from the local PyPI above.
    root = env / "whl-root"
    with IndexServer(root) as torch_srv:
        base = torch_srv.url + "/whl"
        plan = resolve(load_machine(None), Constraints(python=PY, index_base=base, cpu=True, framework="torch,jax",
                                                       jax=JAX))
        assert plan.framework == "torch+jax" and plan.torch_version
        make_torch_set(root / "whl" / "cpu", plan.torch_version)
        for req in plan.requirements:
            name, _, version = req.partition("==")
            if name not in ("torch", "jax", "jaxlib") and version:
                target = root / "whl" / "cpu" if "+cpu" in version else pypi.root / "simple"
                if not any(target.glob(f"{name.replace('-', '_')}-{version}-*.whl")):
                    make_wheel(target, name, version)
        venv = env / "both"
        code, _, err = rk(capsys, "install", "--framework", f"torch,jax={JAX}", "--backend", "cpu", "--venv", str(venv),
                          "--index-base", base, "--installer", "uv")
        assert code == 0, err
        assert f"verified: torch {plan.torch_version}" in err and f"jax {JAX}, jaxlib {JAX}" in err
    pins = (venv / "rocmkit-constraints.txt").read_text()
    assert f"torch=={plan.torch_version}\n" in pins and f"jaxlib=={JAX}\n" in pins
    refused = _refused(venv, pypi.url)
    assert refused.returncode != 0 and "jaxlib" in refused.stderr, refused.stderr
