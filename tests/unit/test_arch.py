"""The one home of gfx naming rules: parse, flags, family, HSA override <-> gfx, literals."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import rocmkit
from rocmkit import arch


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("gfx90a", "gfx90a"),
        ("GFX90A", "gfx90a"),
        (" gfx90a:sramecc+:xnack- ", "gfx90a"),
        ("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", "gfx942"),
        ("gfx1100", "gfx1100"),
        ("gfx803", "gfx803"),
        ("gfx000", None),  # rocminfo's CPU agent
        ("navi31", None),
        ("gfx", None),
        ("gfx10300", None),
        ("gfx9a0", None),  # the minor is decimal
        ("sm_90", None),
        (None, None),
        (1030, None),
    ],
)
def test_parse_gfx(text: object, want: str | None) -> None:
    assert arch.parse_gfx(text) == want
    assert arch.is_gfx(text) is (want is not None)


def test_strip_features_keeps_any_vendor() -> None:
    assert arch.strip_features("gfx90a:sramecc+:xnack-") == "gfx90a"
    assert arch.strip_features("sm_90") == "sm_90"
    assert arch.base_arch("") is None and arch.base_arch(None) is None and arch.base_arch(":x") is None
    assert arch.base_arch("GFX1031:xnack-") == "gfx1031"


def test_family_is_the_name_prefix() -> None:
    assert arch.family("gfx1031") == "gfx103"
    assert arch.family("gfx90a:xnack-") == "gfx90"


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("10.3.0", "gfx1030"),
        ("9.0.10", "gfx90a"),
        (" 11.0.0 ", "gfx1100"),
        ("9.0.12", "gfx90c"),
        ("12.0.1", "gfx1201"),
        ("9.0.16", None),  # the stepping is one hex digit
        ("10.10.0", None),  # the minor is one decimal digit
        ("0.0.0", None),  # gfx000 is the CPU, not a target
        ("10.3", None),
        ("10.3.0.1", None),
        ("ten.3.0", None),
        ("", None),
        (None, None),
    ],
)
def test_override_to_gfx_has_one_rule(value: str | None, want: str | None) -> None:
    assert arch.override_to_gfx(value) == want


@pytest.mark.parametrize("name", ["gfx803", "gfx900", "gfx90a", "gfx90c", "gfx942", "gfx1030", "gfx1151", "gfx1201"])
def test_override_round_trip(name: str) -> None:
    value = arch.gfx_to_override(name)
    assert value is not None and arch.override_to_gfx(value) == name


def test_gfx_to_override_rejects_non_gfx() -> None:
    assert arch.gfx_to_override("sm_90") is None
    assert arch.gfx_to_override("gfx90a:xnack-") == "9.0.10"


def test_every_gfx_toml_override_parses() -> None:
    from rocmkit.matrix import load_matrix

    m = load_matrix()
    overridden = [a for a in m.archs.values() if a.hsa_override]
    assert overridden  # gfx.toml records overrides for RDNA2/RDNA3 consumer parts
    for a in m.archs.values():
        assert arch.parse_gfx(a.name) == a.name and a.family == arch.family(a.name)
    for a in overridden:
        assert arch.override_to_gfx(a.hsa_override) == a.override_arch in m.archs


def test_wavefront_size() -> None:
    assert arch.wavefront_size("gfx942") == 64 and arch.wavefront_size("gfx90a:xnack-") == 64
    assert arch.wavefront_size("gfx1100") == 32


def test_literals_and_tuples_agree() -> None:
    assert arch.VENDORS == ("amd", "nvidia")
    assert arch.GPU_BACKENDS == ("rocm", "cuda")
    assert arch.BACKENDS == ("rocm", "cuda", "cpu")


def _assigned_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
    return names


def test_gfx_facts_are_defined_once() -> None:
    """Only arch.py defines these names at module level anywhere in rocmkit."""
    once = {"Vendor", "Backend", "GpuBackend", "BackendKind", "override_to_gfx", "override_to_arch",
            "override_arch", "base_arch", "norm_gfx", "strip_features", "parse_gfx",
            # NVIDIA's names: the six parsers these replaced are gone and stay gone.
            "parse_cc", "sm_name", "sm_number", "wheel_archs", "runs_on", "normalize_cuda_arch", "CC_RE", "SM_RE",
            "_sm"}
    root = Path(rocmkit.__file__).parent
    for path in root.rglob("*.py"):
        if path.name == "arch.py" and path.parent == root:
            continue
        clash = once & _assigned_names(ast.parse(path.read_text(encoding="utf-8")))
        assert not clash, f"{path.relative_to(root)} defines {sorted(clash)}; use rocmkit.arch"
        text = path.read_text(encoding="utf-8")
        # An sm_XY spelled by hand (f"sm_{...}") or a compute-capability regex is a seventh parser.
        assert 'f"sm_{' not in text and r"sm_(\d" not in text, f"{path.relative_to(root)}: use rocmkit.arch"


@pytest.mark.parametrize(
    ("text", "cc", "sm", "number"),
    [
        ("9.0", "9.0", "sm_90", 90),
        ("sm_90", "9.0", "sm_90", 90),
        ("SM90", "9.0", "sm_90", 90),
        ("sm_90a", "9.0a", "sm_90a", 90),
        ("8.6", "8.6", "sm_86", 86),
        ("sm_100", "10.0", "sm_100", 100),  # two-digit majors: Blackwell
        ("12.0", "12.0", "sm_120", 120),
        ("sm_100f", "10.0f", "sm_100f", 100),
    ],
)
def test_nvidia_names_have_one_rule(text: str, cc: str, sm: str, number: int) -> None:
    assert arch.parse_cc(text) == cc
    assert arch.sm_name(cc) == sm and arch.sm_name(text) == sm
    assert arch.sm_number(text) == number


@pytest.mark.parametrize("bad", ["", "gfx90a", "sm_9", "1.00", "9.", "sm_90x", "９.０", None, 90])
def test_what_is_not_a_compute_capability(bad: object) -> None:
    assert arch.parse_cc(bad) is None
    with pytest.raises(ValueError, match="not a compute capability"):
        arch.sm_name(bad)  # type: ignore[arg-type]


def test_wheel_arch_lists_and_what_they_run_on() -> None:
    sass, ptx = arch.wheel_archs(["sm_80", "sm_86", "sm_90", "compute_90", "gfx90a", "junk"])
    assert (sass, ptx) == (frozenset({80, 86, 90}), frozenset({90}))
    assert arch.runs_on("9.0", sass, ptx) and arch.runs_on("8.9", sass, ptx)  # 8.9 runs sm_86's SASS
    assert arch.runs_on("10.0", sass, ptx)  # PTX 9.0, JIT-compiled by the driver
    assert not arch.runs_on("7.5", sass, ptx) and not arch.runs_on("junk", sass, ptx)
    assert arch.cc_of(12, 0) == "12.0"
