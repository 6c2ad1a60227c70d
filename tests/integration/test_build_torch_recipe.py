"""The real torch recipe, run end to end by `rocmkit build` against stand-in source repositories.

A torch build takes hours on a GPU box, so the repositories are small local git repos laid out
like the real ones: a `pytorch` repo tagged v2.7.1 with requirements.txt, the Triton pin file and
tools/amd_build/build_amd.py; a `triton` repo whose pinned commit has python/pyproject.toml;
a `vision` repo tagged v0.22.0. Each builds through an in-tree PEP 517 backend that records the
environment it saw. Everything else is the shipped code: the CLI, build.toml loading, the recipe,
the pin step, the step runner, the wheelhouse step; a failure in hipify, then the resume.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from rocmkit.proc.runner import run
from rocmkit.util.paths import matrices_dir
from tests.support.pkgindex import make_wheel

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BACKEND = """
import base64, hashlib, json, os, zipfile

NAME = {name!r}
VERSION_ENV = {version_env!r}
DEFAULT_VERSION = {version!r}
FILES = {files!r}
RECORD_ENV = ("PYTORCH_ROCM_ARCH", "USE_ROCM", "USE_CUDA", "MAX_JOBS", "ROCM_PATH", "FORCE_CUDA")


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
{pre_build}
    version = os.environ.get(VERSION_ENV, DEFAULT_VERSION) if VERSION_ENV else DEFAULT_VERSION
    files = dict(FILES)
    files[NAME + "/_build_env.py"] = "ENV = " + repr({{k: os.environ.get(k) for k in RECORD_ENV}}) + "\\n"
    files[NAME + "/_built_version.py"] = "VERSION = " + repr(version) + "\\n"
    info = f"{{NAME}}-{{version}}.dist-info"
    files[info + "/METADATA"] = f"Metadata-Version: 2.1\\nName: {{NAME}}\\nVersion: {{version}}\\n\\n"
    files[info + "/WHEEL"] = "Wheel-Version: 1.0\\nGenerator: fake\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
    record = []
    for path, text in files.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{{path}},sha256={{digest}},{{len(data)}}")
    record.append(info + "/RECORD,,")
    files[info + "/RECORD"] = "\\n".join(record) + "\\n"
    wheel = f"{{NAME}}-{{version}}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return wheel
"""

PYPROJECT = """[build-system]
requires = []
build-backend = "fakebackend"
backend-path = ["."]

[project]
name = "{name}"
dynamic = ["version"]
"""


def git(*args: str, cwd: Path) -> str:
    result = run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd, timeout=60)
    assert result.ok, result.describe()
    return result.stdout.strip()


def project(
    root: Path, name: str, version: str, version_env: str, files: dict[str, str], pre_build: str
) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(PYPROJECT.format(name=name))
    body = "\n".join("    " + line for line in pre_build.strip().splitlines()) or "    pass"
    (root / "fakebackend.py").write_text(
        BACKEND.format(name=name, version_env=version_env, version=version, files=files, pre_build=body)
    )


def commit_all(repo: Path, message: str, tag: str | None = None) -> str:
    if not (repo / ".git").exists():
        git("init", "--quiet", cwd=repo)
    git("add", ".", cwd=repo)
    git("commit", "--quiet", "-m", message, cwd=repo)
    if tag:
        git("tag", tag, cwd=repo)
    return git("rev-parse", "HEAD", cwd=repo)


@pytest.fixture
def sources(tmp_path: Path) -> dict[str, Path]:
    triton = tmp_path / "repos" / "triton"
    project(triton / "python", "triton", "3.3.1", "", {"triton/__init__.py": "__version__ = '3.3.1'\n"}, "")
    pinned = commit_all(triton, "triton at the pinned commit")
    (triton / "python" / "fakebackend.py").write_text("raise SystemExit('built the wrong Triton commit')\n")
    commit_all(triton, "a later commit torch does not pin")

    torch = tmp_path / "repos" / "pytorch"
    torch_files = {
        "torch/__init__.py": "from torch import version as version\n__version__ = version.__version__\n",
        "torch/version.py": "from torch._built_version import VERSION as __version__\nhip = '6.2.41134-65d174c3e'\ncuda = None\n",
    }
    # torch's build needs the hipified tree: fail if hipify did not run in this checkout first.
    project(
        torch,
        "torch",
        "0",
        "PYTORCH_BUILD_VERSION",
        torch_files,
        "assert os.path.exists('hipified'), 'not hipified'",
    )
    (torch / "requirements.txt").write_text("fake-build-tool\n")
    pin = torch / ".ci" / "docker" / "ci_commit_pins" / "triton.txt"
    pin.parent.mkdir(parents=True)
    pin.write_text(pinned + "\n")
    amd = torch / "tools" / "amd_build" / "build_amd.py"
    amd.parent.mkdir(parents=True)
    amd.write_text(
        "import os, sys\n"
        "if os.environ.get('FAKE_HIPIFY_FAIL') == '1':\n"
        "    print('hipify: cannot parse aten/src/ATen/native/cuda/Foo.cu (FAKE_HIPIFY_FAIL)')\n"
        "    sys.exit(1)\n"
        "open('hipified', 'w').write(os.environ['PYTORCH_ROCM_ARCH'])\n"
        "print('hipified for', os.environ['PYTORCH_ROCM_ARCH'])\n"
    )
    commit_all(torch, "torch 2.7.1", tag="v2.7.1")

    vision = tmp_path / "repos" / "vision"
    # torchvision's build imports torch: fail unless the recipe installed it first.
    project(
        vision, "torchvision", "0.22.0", "", {"torchvision/__init__.py": "import torch\n"}, "import torch"
    )
    commit_all(vision, "vision 0.22.0", tag="v0.22.0")

    # Build tools the recipe pip-installs, served from a local folder (no network in tests).
    tools = tmp_path / "tools"
    for name in ("fake-build-tool", "ninja", "cmake", "wheel", "pybind11"):
        make_wheel(tools, name, "1.0", files={f"{name.replace('-', '_')}_stub/__init__.py": ""})

    matrices = tmp_path / "matrices"
    shutil.copytree(matrices_dir(), matrices)
    (matrices / "build.toml").write_text(
        f'''schema = 1
[sources]
test = "a test fixture"
[release."2.7".torch]
repo = "{torch.as_uri()}"
tag = "v2.7.1"
requirements = "requirements.txt"
sources = ["test"]
confirmed = true
[release."2.7".triton]
repo = "{triton.as_uri()}"
pin_file = ".ci/docker/ci_commit_pins/triton.txt"
setup_dir = "python"
version = "3.3.1"
commit = "{pinned[:10]}"
sources = ["test"]
confirmed = true
[release."2.7".torchvision]
repo = "{vision.as_uri()}"
tag = "v0.22.0"
sources = ["test"]
confirmed = true
'''
    )
    return {"matrices": matrices, "tools": tools}


def test_rocmkit_build_runs_the_torch_recipe_fails_resumes_and_installs(
    tmp_path: Path, sources: dict[str, Path]
) -> None:
    venv = tmp_path / "target-venv"
    assert run([sys.executable, "-m", "venv", str(venv)], timeout=180).ok
    py = venv / "bin" / "python"
    build = tmp_path / "build"
    env = {
        **os.environ,
        "ROCMKIT_MATRICES_DIR": str(sources["matrices"]),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(sources["tools"]),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    cmd = [
        sys.executable, "-m", "rocmkit", "build", "--arch", "gfx1031", "--arch", "gfx1030", "--torch", "2.7",
        "--python", str(py), "--build-dir", str(build), "--jobs", "2", "--no-doctor", "--skip-preflight",
    ]  # fmt: skip

    failed = run(cmd, env={**env, "FAKE_HIPIFY_FAIL": "1"}, timeout=600)
    assert failed.returncode == 7, failed.stdout + failed.stderr
    log = build / "logs" / "06-torch-hipify.log"
    assert "cannot parse aten/src/ATen/native/cuda/Foo.cu" in failed.stderr  # the log's tail
    assert f"log: {log}" in failed.stderr
    state = json.loads((build / "rocmkit-build-state.json").read_text())
    assert [s["status"] for s in state["steps"]] == ["done"] * 5 + ["failed"]

    done = run(cmd, env=env, timeout=600)
    assert done.ok, done.stdout + done.stderr
    assert "resuming: 5 step(s) already done" in done.stderr
    assert "[1/" not in done.stderr and "[6/12] torch-hipify" in done.stderr

    wheelhouse = build / "wheelhouse"
    names = sorted(p.name for p in wheelhouse.glob("*.whl"))
    assert "torch-2.7.1+rocmkit.gfx1031.gfx1030-py3-none-any.whl" in names
    assert "triton-3.3.1-py3-none-any.whl" in names and "torchvision-0.22.0-py3-none-any.whl" in names
    assert (wheelhouse / "rocmkit-lock.txt").exists()
    assert str(wheelhouse / "torch-2.7.1+rocmkit.gfx1031.gfx1030-py3-none-any.whl") in done.stdout

    probe = run(
        [str(py), "-c", "import json, torch, triton, torchvision, torch._build_env as b;"
         "print(json.dumps([torch.__version__, triton.__version__, b.ENV]))"],
        timeout=60,
    )  # fmt: skip
    assert probe.ok, probe.stderr
    version, triton_version, build_env = json.loads(probe.stdout)
    assert version == "2.7.1+rocmkit.gfx1031.gfx1030"
    assert triton_version == "3.3.1"  # the pinned commit, not the later one
    assert build_env == {
        "PYTORCH_ROCM_ARCH": "gfx1031;gfx1030",
        "USE_ROCM": "1",
        "USE_CUDA": "0",
        "MAX_JOBS": "2",
        "ROCM_PATH": os.environ.get("ROCM_PATH") or "/opt/rocm",
        "FORCE_CUDA": None,
    }
    assert (build / "src" / "pytorch" / "hipified").read_text() == "gfx1031;gfx1030"
