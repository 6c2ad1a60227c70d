"""Every file loader under structure-aware fuzzing: a value, or rocmkit's own error.

Inputs are built the way a hostile or careless sender would: valid documents
(a plan, a lock, a doctor report, bench results, a capture's env.json, a
recorded environment state, an install journal, a matrix file) with fields
swapped for arbitrary JSON/TOML values, numbers swapped for ``NaN`` /
``Infinity`` / ``1e400`` / huge integers, text cut, nested deeper than any
parser's recursion, and bytes that are not UTF-8. The property for each: it
loads, or it raises a :class:`rocmkit.errors.RocmkitError`, never anything else;
and the JSON/TOML loaders' memory stays within a bound of the input's size.

Profiles: a short run by default (CI); ``ROCMKIT_FUZZ=long`` for thousands of
examples per loader (``ROCMKIT_FUZZ_EXAMPLES=N`` to choose).
"""

from __future__ import annotations

import copy
import json
import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocmkit.errors import RocmkitError
from tests.conftest import REPO

_LONG = os.environ.get("ROCMKIT_FUZZ", "") == "long"
EXAMPLES = int(os.environ.get("ROCMKIT_FUZZ_EXAMPLES", "5000" if _LONG else "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)

# -- strategies ---------------------------------------------------------------------------

ODD_NUMBERS = ("NaN", "Infinity", "-Infinity", "1e400", "-1e400", "9" * 5000, "-0", "1e-400")

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["", "torch==2.5.1", "https://u:t@x/simple", "--index-url=x", "A=1; touch /tmp/x", "²"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def mutated_dict(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """``base`` with a few fields (at any depth) replaced, removed or added."""
    data = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        node: Any = data
        # Walk down a random path of dicts/lists.
        for _ in range(draw(st.integers(0, 3))):
            if isinstance(node, dict) and node:
                child = node[draw(st.sampled_from(sorted(node, key=str)))]
            elif isinstance(node, list) and node:
                child = node[draw(st.integers(0, len(node) - 1))]
            else:
                break
            if not isinstance(child, dict | list):
                break
            node = child
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if isinstance(node, dict):
            keys = sorted(node, key=str)
            if action == "replace" and keys:
                node[draw(st.sampled_from(keys))] = draw(json_values)
            elif action == "delete" and keys:
                del node[draw(st.sampled_from(keys))]
            else:
                node[draw(st.text(max_size=12))] = draw(json_values)
        elif isinstance(node, list):
            if action == "replace" and node:
                node[draw(st.integers(0, len(node) - 1))] = draw(json_values)
            elif action == "delete" and node:
                node.pop(draw(st.integers(0, len(node) - 1)))
            else:
                node.append(draw(json_values))
    return data


@st.composite
def mutated_text(draw: st.DrawFn, text: str) -> str:
    """Text-level damage: a number made odd, a cut, a deep nest, a line dropped or repeated."""
    how = draw(st.sampled_from(["number", "cut", "nest", "lines", "splice"]))
    if how == "number":
        import re

        spots = [m.span() for m in re.finditer(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text)]
        if spots:
            a, b = draw(st.sampled_from(spots))
            return text[:a] + draw(st.sampled_from(ODD_NUMBERS)) + text[b:]
        return text
    if how == "cut":
        a = draw(st.integers(0, len(text)))
        return text[:a]
    if how == "nest":
        depth = draw(st.sampled_from([65, 1000, 100_000]))
        at = draw(st.integers(0, len(text)))
        opener = draw(st.sampled_from(["[", "{", '{"a":'])) * depth
        return text[:at] + opener + text[at:]
    lines = text.splitlines(True)
    if how == "lines" and lines:
        i = draw(st.integers(0, len(lines) - 1))
        return "".join(lines[:i] + lines[i + 1 :] + lines[i : i + 1] * draw(st.integers(0, 3)))
    at = draw(st.integers(0, len(text)))
    return text[:at] + draw(st.text(max_size=30)) + text[at:]


def json_documents(base: dict[str, Any]) -> st.SearchStrategy[str]:
    """A valid document damaged in its structure, or in its text, or both."""
    structural = mutated_dict(base).map(lambda d: json.dumps(d))
    return st.one_of(structural, structural.flatmap(mutated_text), mutated_text(json.dumps(base, indent=1)))


def value_or_own_error(load: Callable[[], object]) -> None:
    try:
        load()
    except RocmkitError as exc:
        assert "\n" not in exc.one_line()  # one line, naming what is wrong


# -- the documents ------------------------------------------------------------------------

PLAN: dict[str, Any] = {
    "schema": "rocmkit.plan/1",
    "backend": "rocm6.2",
    "channel": "stable",
    "torch_version": "2.5.1+rocm6.2",
    "triton": "pytorch-triton-rocm==3.1.0",
    "requirements": ["torch==2.5.1+rocm6.2", "torchvision==0.20.1+rocm6.2"],
    "companions": ["torchvision==0.20.1+rocm6.2"],
    "index_urls": ["https://download.pytorch.org/whl/rocm6.2"],
    "env": {"HSA_OVERRIDE_GFX_VERSION": "10.3.0", "HIP_VISIBLE_DEVICES": "0"},
    "warnings": ["w"],
    "reasons": ["r"],
    "python": "3.11",
}


def _report() -> dict[str, Any]:
    from tests.unit.test_fleet_summarize import make_report

    data: dict[str, Any] = make_report("n1").to_dict()
    return data


def _suite() -> dict[str, Any]:
    from rocmkit.bench.results import ModelResult, SuiteResult

    data: dict[str, Any] = SuiteResult(
        backend="cpu",
        device="x86_64",
        mode="infer",
        dtype="fp32",
        size="tiny",
        repeat=5,
        models=(ModelResult(name="mlp", status="pass", speedup=1.5),),
        versions={"torch": "2.13.0"},
    ).to_dict()
    return data


def _state() -> dict[str, Any]:
    from rocmkit.install.state import Dist, EnvState

    dist = Dist(name="torch", version="2.5.1", fingerprint="f" * 64, dist_info="/v/lib/torch-2.5.1.dist-info")
    return EnvState(python="/v/bin/python", dists={"torch": dist}, files={"/v/pip.conf": None}).to_dict()


def _journal() -> dict[str, Any]:
    from rocmkit.install.journal import Journal
    from rocmkit.install.state import EnvState

    return Journal(
        path=Path("/v/rocmkit-journal.json"),
        prefix="/v",
        installer="pip",
        intent=("torch==2.5.1",),
        workdir=Path("/c/install/x"),
        before=EnvState.from_dict(_state()),
        files={"/v/pip.conf": b"[install]\n", "/v/bin/activate": None},
        wheels={"torch": Path("/c/install/x/wheels/torch.whl")},
        children=[(1234, "5678")],
    ).to_dict()


# -- properties -----------------------------------------------------------------------------


@FUZZ
@given(text=st.one_of(json_documents(PLAN), json_values.map(json.dumps)))
def test_safe_json_loader_value_or_error_with_bounded_memory(text: str) -> None:
    from rocmkit.util.safeload import loads_json

    tracemalloc.start()
    try:
        value_or_own_error(lambda: loads_json(text, "fuzz.json"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * len(text.encode()) + (4 << 20)


@FUZZ
@given(text=json_documents(PLAN))
def test_plan_loader(text: str) -> None:
    from rocmkit.plan import Plan
    from rocmkit.util.safeload import loads_json

    value_or_own_error(lambda: Plan.from_dict(loads_json(text, "plan.json")))


@FUZZ
@given(data=st.data())
def test_lock_loader(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    from rocmkit.install import lock
    from rocmkit.install.base import Locked, Sources
    from rocmkit.plan import Plan

    plan = Plan.from_dict(PLAN)
    entries = [
        Locked(name="torch", version="2.5.1+rocm6.2", hashes=("a" * 64,)),
        Locked(name="pytorch-triton-rocm", version="3.1.0", hashes=("b" * 64, "c" * 64)),
    ]
    text = lock.render(entries, Sources(index_urls=plan.index_urls), plan)
    damaged = data.draw(mutated_text(text))
    raw = damaged.encode("utf-8", "surrogatepass")
    if data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(raw)))
        raw = raw[:at] + b"\xff\xfe" + raw[at:]
    path = tmp_path_factory.mktemp("lock") / "torch.lock"
    path.write_bytes(raw)
    value_or_own_error(lambda: lock.parse(path))


@FUZZ
@given(text=json_documents(_report()))
def test_doctor_report_loader(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    from rocmkit.fleet.load import read_report

    path = tmp_path_factory.mktemp("report") / "r.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    value_or_own_error(lambda: read_report(path))


@FUZZ
@given(text=json_documents(_suite()))
def test_bench_results_loader(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    from rocmkit.bench.saved import load_saved as _load

    path = tmp_path_factory.mktemp("bench") / "b.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    value_or_own_error(lambda: _load(path))


@FUZZ
@given(text=json_documents({"ROCMKIT_INDEX_BASE": "https://m/whl", "HIP_VISIBLE_DEVICES": "0,1"}))
def test_capture_env_json_loader(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    from rocmkit.sources import CaptureSource

    cap = tmp_path_factory.mktemp("cap")
    (cap / "cmd").mkdir()
    (cap / "env.json").write_text(text, encoding="utf-8", errors="surrogatepass")
    value_or_own_error(lambda: CaptureSource(cap).environ())


@FUZZ
@given(text=json_documents(_journal()))
def test_install_journal_and_state_loaders(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    from rocmkit.install.journal import Journal
    from rocmkit.install.state import EnvState
    from rocmkit.util.safeload import loads_json

    def load() -> None:
        data = loads_json(text, "journal")
        Journal.from_dict(Path("j.json"), data)
        if isinstance(data, dict):
            EnvState.from_dict(data.get("before"))

    value_or_own_error(load)


def _journal_in_venv() -> dict[str, Any]:
    """A journal with placeholder paths and ids (the same bytes every example: Hypothesis replays
    draws), put in place by :func:`test_install_journal_as_read_from_a_venv`."""
    from rocmkit.install.journal import Journal
    from rocmkit.install.state import EnvState

    return Journal(
        path=Path("/FUZZ-VENV/rocmkit-journal.json"),
        prefix="/FUZZ-VENV",
        installer="pip",
        intent=("torch==2.5.1",),
        workdir=Path("/FUZZ-WORK"),
        before=EnvState.from_dict(_state()),
        files={"/FUZZ-VENV/pip.conf": b"[install]\n", "/FUZZ-VENV/bin/activate": None},
        wheels={"torch": Path("/FUZZ-WORK/wheels/torch-2.5.1-py3-none-any.whl")},
        children=[(1234, "5678")],
        pid=4321,
        started="2026-01-01T00:00:00Z",
        boot="b",
        venv_id=(111111, 222222),
    ).to_dict()


@FUZZ
@given(data=st.data())
def test_install_journal_as_read_from_a_venv(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    """The whole read: the damaged journal in a real venv folder (its mode drawn too), its seal
    in rocmkit's install folder re-made over the damaged bytes half the time, so that the damage
    reaches the checks after the seal (files to restore, backup paths, children)."""
    import hashlib
    import tempfile

    from rocmkit.install import journal
    from rocmkit.pyenv import PyEnv

    text = data.draw(json_documents(_journal_in_venv()))
    mode = data.draw(st.sampled_from([0o600, 0o644, 0o664, 0o666]))
    sealed = data.draw(st.booleans())
    prefix = tmp_path_factory.mktemp("venv")
    st_venv = prefix.stat()
    work = Path(tempfile.mkdtemp(dir=journal.install_folder()))
    for placeholder, real in (
        ("/FUZZ-VENV", str(prefix)),
        ("/FUZZ-WORK", str(work)),
        ("111111", str(st_venv.st_dev)),
        ("222222", str(st_venv.st_ino)),
    ):
        text = text.replace(placeholder, real)
    target = PyEnv(
        executable=prefix / "bin/python", prefix=prefix, venv=prefix, version="3.11.7",
        purelib=prefix, platlib=prefix, stdlib=prefix, include=prefix, has_pip=False,
    )  # fmt: skip
    path = journal.journal_path(target)
    raw = text.encode("utf-8", "surrogatepass")
    path.write_bytes(raw)
    os.chmod(path, mode)
    if sealed:
        seal = {"schema": journal.SEAL_SCHEMA, "journal": str(path), "digests": [hashlib.sha256(raw).hexdigest()]}
        (work / journal.SEAL_NAME).write_text(json.dumps(seal))
    value_or_own_error(lambda: journal.read(target))


MATRIX_FILES = ("gfx.toml", "nvidia.toml", "torch.toml", "rocm.toml", "channels.toml")


@FUZZ
@given(data=st.data())
def test_matrix_loader(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    from rocmkit.matrix.load import parse_matrix

    name = data.draw(st.sampled_from(MATRIX_FILES))
    text = (REPO / "matrices" / name).read_text()
    folder = tmp_path_factory.mktemp("matrices")
    for other in MATRIX_FILES:
        (folder / other).symlink_to(REPO / "matrices" / other)
    (folder / name).unlink()
    (folder / name).write_text(data.draw(mutated_text(text)), encoding="utf-8", errors="surrogatepass")
    value_or_own_error(lambda: parse_matrix(folder))


@FUZZ
@given(data=st.data())
def test_platforms_loader(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    from rocmkit.matrix.platforms import parse_platforms

    path = tmp_path_factory.mktemp("matrices") / "platforms.toml"
    text = (REPO / "matrices" / "platforms.toml").read_text()
    path.write_text(data.draw(mutated_text(text)), encoding="utf-8", errors="surrogatepass")
    value_or_own_error(lambda: parse_platforms(path))


@FUZZ
@given(text=st.one_of(json_values.map(lambda v: f"x = {json.dumps(v)}\n"), mutated_text('a = 1\n[b]\nc = [1, 2.5]\n')))
def test_safe_toml_loader(text: str) -> None:
    from rocmkit.util.safeload import loads_toml

    value_or_own_error(lambda: loads_toml(text, "fuzz.toml"))


TOOL_JSON = sorted(
    p.read_text(encoding="utf-8", errors="replace")
    for p in (REPO / "tests/data/captures").rglob("*.json")
    if p.parent.name == "cmd" and p.stat().st_size < 200_000
)


@FUZZ
@given(data=st.data())
def test_tool_json_parsers_on_damaged_real_output(data: st.DataObject) -> None:
    """Real amd-smi / rocm-smi JSON with numbers made NaN, Infinity, 1e400 or 5000 digits long,
    cut, or nested past recursion: records come back with sane values, never an exception."""
    from rocmkit.parsers import amd_smi, rocm_smi

    text = data.draw(st.sampled_from(TOOL_JSON))
    for _ in range(data.draw(st.integers(1, 3))):
        text = data.draw(mutated_text(text))
    for parse in (amd_smi.parse_static_json, rocm_smi.parse_json):
        for gpu in parse(text).gpus:
            assert gpu.memory_bytes is None or 0 < gpu.memory_bytes < 2**60


PYPROJECT = """[project]
name = "demo"
version = "0.1.0"
dependencies = ["numpy>=1.26", "torch"]

[tool.uv]
index-strategy = "first-index"

[[tool.uv.index]]
name = "pytorch"
url = "https://download.pytorch.org/whl/rocm6.2"
explicit = true

[tool.uv.sources]
torch = { index = "pytorch" }
"""

PIP_CONF = """[global]
index-url = https://u:t@mirror.example/simple
timeout = 60

[install]
constraint = /v/rocmkit-constraints.txt
find-links =
    /srv/wheels
    https://x.example/links
"""


@FUZZ
@given(data=st.data())
def test_pyproject_reader_and_writer(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    """`install --project`: the pyproject.toml it rewrites, damaged or not UTF-8."""
    from rocmkit.companions.export import apply_to_pyproject
    from rocmkit.install.carry import read_pyproject
    from rocmkit.plan import Plan

    path = tmp_path_factory.mktemp("project") / "pyproject.toml"
    raw = data.draw(mutated_text(PYPROJECT)).encode("utf-8", "surrogatepass")
    if data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(raw)))
        raw = raw[:at] + data.draw(st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\r"])) + raw[at:]
    path.write_bytes(raw)
    value_or_own_error(lambda: apply_to_pyproject(read_pyproject(path), Plan.from_dict(PLAN)))


@FUZZ
@given(data=st.data())
def test_pip_conf_reader(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    """A venv's pip.conf, which the guard reads and rewrites."""
    from rocmkit.install.guard import _pip_conf_text, read_pip_conf

    path = tmp_path_factory.mktemp("venv") / "pip.conf"
    text = data.draw(
        st.one_of(
            mutated_text(PIP_CONF),
            st.text(alphabet=st.sampled_from("[]=:%\n \tab#;"), max_size=80),
            st.lists(st.sampled_from(["[global]", "[install]", "a = 1", "a=2", " cont", "[", "= x", "%("])).map(
                "\n".join
            ),
        )
    )
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    value_or_own_error(lambda: read_pip_conf(path))
    value_or_own_error(lambda: _pip_conf_text(path, Path("/v/rocmkit-constraints.txt")))


def _overlay_loaders() -> dict[str, Callable[[Path], object]]:
    from rocmkit.companions.data import parse_companions
    from rocmkit.containers.images import parse_images
    from rocmkit.doctor.apu import parse_apu
    from rocmkit.doctor.sku import parse_skus
    from rocmkit.matrix.amd_targets import parse_amd_targets
    from rocmkit.matrix.jaxdata import parse_jax
    from rocmkit.matrix.platforms import parse_platforms
    from rocmkit.source_build.refs import load_build_matrix

    return {
        "companions.toml": parse_companions,
        "jax.toml": parse_jax,
        "images.toml": lambda d: parse_images(d / "images.toml"),
        "sku.toml": lambda d: parse_skus(d / "sku.toml"),
        "apu.toml": lambda d: parse_apu(d / "apu.toml"),
        "platforms.toml": lambda d: parse_platforms(d / "platforms.toml"),
        "amd_targets.toml": parse_amd_targets,
        "build.toml": lambda d: load_build_matrix(d / "build.toml"),
    }


@FUZZ
@given(data=st.data())
def test_overlay_data_files(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    """Every other data file an overlay serves (`matrix refresh --write` copies them all), damaged
    or not UTF-8, through its own loader; and the overlay's trust check on the folder."""
    from rocmkit.util.paths import overlay_problem

    loaders = _overlay_loaders()
    name = data.draw(st.sampled_from(sorted(loaders)))
    folder = tmp_path_factory.mktemp("overlay")
    for item in (REPO / "matrices").glob("*.toml"):
        if item.name != name:
            (folder / item.name).write_bytes(item.read_bytes())
    raw = data.draw(mutated_text((REPO / "matrices" / name).read_text())).encode("utf-8", "surrogatepass")
    if data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(raw)))
        raw = raw[:at] + b"\xff" + raw[at:]
    (folder / name).write_bytes(raw)
    assert overlay_problem(folder) is None
    value_or_own_error(lambda: loaders[name](folder))
