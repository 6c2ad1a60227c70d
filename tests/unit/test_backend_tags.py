"""The typed backend (rocmkit/plan.py ``Backend``): every tag the resolvers make, on every real
capture, and every backend name in the data, parses to one record and prints back to the same
string; plans, locks and JSON keep the tag; and no module but plan.py reads a tag by its prefix."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import rocmkit
from rocmkit.companions.data import load_companions
from rocmkit.detect import load_machine
from rocmkit.errors import DataError, RocmkitError
from rocmkit.machine import Machine
from rocmkit.matrix import load_matrix
from rocmkit.matrix.jaxdata import load_jax
from rocmkit.plan import Backend, Plan
from rocmkit.resolve import Constraints, resolve
from tests.conftest import CAPTURES

ROOT = Path(rocmkit.__file__).parent
REPO = ROOT.parent


def _captures() -> list[Path]:
    """tests/data's captures, and the shared ones beside the checkout where it has them
    (../shared/captures, as /work/main has)."""
    found = {p.name: p for p in CAPTURES.iterdir() if (p / "cmd").is_dir() or (p / "root").is_dir()}
    for shared in (REPO.parent / "shared" / "captures", REPO.parent.parent / "shared" / "captures"):
        if shared.is_dir():
            for p in shared.iterdir():
                found.setdefault(p.name, p)
    return [found[k] for k in sorted(found)]


def _asks() -> list[dict[str, object]]:
    """Every way a plan is asked for: the default, each --channel, --cpu, each --rocm and --cuda
    release the data has, and each framework."""
    m = load_matrix()
    asks: list[dict[str, object]] = [{}, {"cpu": True}, {"framework": "jax"}, {"framework": "torch-xla"},
                                     {"framework": "torch,jax"}, {"framework": "jax", "cpu": True}]
    asks += [{"channel": name} for name in sorted(m.channels)]
    asks += [{"rocm": index.rocm} for index in m.rocm_indexes.values()]
    asks += [{"cuda": toolkit.version} for toolkit in m.cuda_toolkits]
    return asks


def _plans(machine: Machine) -> Iterator[Plan]:
    for ask in _asks():
        try:
            yield resolve(machine, Constraints(python="3.12", **ask))  # type: ignore[arg-type]
        except RocmkitError:
            continue  # no plan for this ask on this machine: nothing printed


def _round_trips(backend: Backend) -> None:
    tag = str(backend)
    assert Backend.parse(tag) == backend, tag
    assert str(Backend.parse(tag)) == tag


@pytest.mark.parametrize("capture", _captures(), ids=lambda p: p.name)
def test_every_tag_the_resolvers_make_round_trips(capture: Path) -> None:
    seen: set[str] = set()
    for plan in _plans(load_machine(capture)):
        _round_trips(plan.backend)
        # The plan file keeps the string; reading it back gives the same record.
        data = json.loads(json.dumps(plan.to_dict()))
        assert data["backend"] == str(plan.backend)
        assert Plan.from_dict(data).backend == plan.backend
        seen.add(str(plan.backend))
    assert seen, f"{capture.name}: no plan at all"


def test_the_captures_reach_every_kind_of_tag() -> None:
    """The captures above are not all one kind: PyTorch's ROCm, CUDA and CPU indexes, AMD's
    channels and JAX's plugin families are each made on some capture."""
    made = {
        (b.source, b.kind)
        for capture in _captures()
        for plan in _plans(load_machine(capture))
        for b in [plan.backend]
    }
    assert {("pytorch", "rocm"), ("pytorch", "cuda"), ("pytorch", "cpu"), ("amd", "rocm"),
            ("jax", "rocm"), ("jax", "cuda")} <= made


def test_every_backend_name_in_the_data_round_trips() -> None:
    m = load_matrix()
    names = {v.index for r in m.torch_releases for v in r.variants}
    names |= set(m.rocm_indexes)
    names |= {toolkit.tag for toolkit in m.cuda_toolkits}
    for chan in m.channels.values():
        names |= set(chan.indexes)
    names |= {p.family for p in load_jax().plugins}
    names |= {b for build in load_companions().builds for b in build.backends}
    for name in sorted(names):
        backend = Backend.parse(name)
        assert str(backend) == name
        assert backend.kind in ("rocm", "cuda", "cpu")
    # torch.toml's variants: the kind the loader stored is the parser's.
    for release in m.torch_releases:
        for variant in release.variants:
            assert variant.kind == variant.backend.kind and variant.backend.pytorch_index


@pytest.mark.parametrize(
    ("tag", "kind", "toolkit", "source", "channel", "variant"),
    [
        ("rocm6.2", "rocm", "6.2", "pytorch", None, None),
        ("rocm6.2.4", "rocm", "6.2.4", "pytorch", None, None),
        ("cu128", "cuda", "12.8", "pytorch", None, None),
        ("cu118", "cuda", "11.8", "pytorch", None, None),
        ("cpu", "cpu", None, "pytorch", None, None),
        ("xpu", "xpu", None, "pytorch", None, None),
        ("rocm7", "rocm", "7", "jax", None, None),
        ("cuda13", "cuda", "13", "jax", None, None),
        ("amd-nightly-gfx942-gfx1100", "rocm", None, "amd", "nightly", "gfx942-gfx1100"),
        ("amd-stable-all", "rocm", None, "amd", "stable", "all"),
        ("amd-nightly-9-targets", "rocm", None, "amd", "nightly", "9-targets"),
        # Plans from older rocmkits and the forms install writes without resolve.
        ("therock-gfx1151", "rocm", None, "therock", None, "gfx1151"),
        ("therock-gfx94X-dcgpu", "rocm", None, "therock", None, "gfx94X-dcgpu"),
        ("rocm", "rocm", None, "pytorch", None, None),  # a source build whose torch.version.hip said no release
        ("unknown", None, None, "lock", None, None),  # a lock without a rocmkit plan
    ],
)
def test_each_form_parses_to_its_fields(
    tag: str, kind: str | None, toolkit: str | None, source: str, channel: str | None, variant: str | None
) -> None:
    backend = Backend.parse(tag)
    assert (backend.kind, backend.toolkit, backend.source, backend.channel, backend.variant) == (
        kind, toolkit, source, channel, variant
    )
    _round_trips(backend)


@pytest.mark.parametrize("tag", ["", "foo", "cu", "cuda", "rocmX", "amd-nightly", "amd--x", "CPU", "cu12.8"])
def test_what_is_no_tag_is_refused(tag: str) -> None:
    assert Backend.read(tag) is None
    with pytest.raises(ValueError, match="not a backend rocmkit knows"):
        Backend.parse(tag)


def test_a_plan_file_naming_no_backend_is_refused_in_one_line() -> None:
    data = Plan(backend=Backend.parse("rocm6.2")).to_dict()
    with pytest.raises(DataError, match="names no backend rocmkit knows: 'gpu9'"):
        Plan.from_dict({**data, "backend": "gpu9"})


# --- No prefix reads outside plan.py -------------------------------------------------------------

# The heads of backend tags (rocm, rocm6., cu, cu13, cuda, amd-, therock, xpu; not "rocmkit."): a
# prefix read with one of these outside plan.py parses a tag by hand.
_HEAD = re.compile(r"^(rocm|cu|cuda|amd|therock|xpu)([0-9.-]|$)")
# Where such a call reads something that is no backend tag, and what it reads instead.
_NOT_TAGS = {
    ("sources.py", 'entry.name.startswith("rocm")'): "folder names under /opt (/opt/rocm-6.2.1)",
    ("sources.py", 'name.startswith("rocm")'): "folder names under /opt (/opt/rocm-6.2.1)",
    ("bench/harness.py", 'device.startswith("cuda")'): "torch device strings (cuda:0)",
    ("bench/harness.py", 'opts.device.startswith("cuda")'): "torch device strings (cuda:0)",
}


def _is_head(node: ast.expr) -> bool:
    values = node.elts if isinstance(node, ast.Tuple) else [node]
    return any(isinstance(v, ast.Constant) and isinstance(v.value, str) and _HEAD.match(v.value) for v in values)


def prefix_reads(source: str) -> list[str]:
    """Each ``x.startswith(head)`` / ``x.removeprefix(head)`` / ``x[len(head):]`` in ``source``
    whose head is a backend tag's, as written."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "removeprefix")
            and node.args
            and _is_head(node.args[0])
        ) or (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Slice)
            and isinstance(node.slice.lower, ast.Call)
            and isinstance(node.slice.lower.func, ast.Name)
            and node.slice.lower.func.id == "len"
            and node.slice.lower.args
            and _is_head(node.slice.lower.args[0])
        ):
            found.append(ast.get_source_segment(source, node) or ast.dump(node))
    return found


def test_no_module_but_plan_reads_a_backend_tag_by_prefix() -> None:
    offenders = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "plan.py":
            continue
        for segment in prefix_reads(path.read_text(encoding="utf-8")):
            if (rel, segment) not in _NOT_TAGS:
                offenders.append(f"{rel}: {segment}")
    assert not offenders, "read the fields of rocmkit.plan.Backend instead:\n" + "\n".join(offenders)


def test_the_prefix_guard_sees_each_spelling() -> None:
    code = (
        'a.startswith("rocm")\nb.startswith(("therock", "amd-"))\nc.removeprefix("rocm")\n'
        'd.startswith("cu")\ne[len("rocm"):]\nf.startswith("cu13")\ng.startswith("rocm6.")\n'
        'ok.startswith("gfx")\nok2.startswith("therock_gen_")\n'
    )
    assert len(prefix_reads(code)) == 7
