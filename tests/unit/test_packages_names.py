"""Package facts have one home: canonical names, the pin reader, the Triton distributions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import rocmkit
from rocmkit.packages import (
    TRITON_DISTRIBUTIONS,
    canonical,
    is_triton,
    parse_pin,
    requirement_name,
    triton_pin,
    wheel_escape,
)


@pytest.mark.parametrize(
    ("text", "name", "version", "plain"),
    [
        ("torch==2.5.1", "torch", "2.5.1", True),
        ("torch==2.5.1+rocm6.2", "torch", "2.5.1+rocm6.2", True),
        ("Pytorch_Triton.ROCm==3.1.0", "Pytorch_Triton.ROCm", "3.1.0", True),
        ("torch[opt] == 2.5.1 ; python_version > '3.9'", "torch", "2.5.1", False),
        ("torch==2.5.1 \\", "torch", "2.5.1", False),  # pip/uv compile output
        ("torch==2.5.1 --hash=sha256:00", "torch", "2.5.1", False),
        ("torch==2.5,<3", "torch", "2.5", False),
    ],
)
def test_parse_pin(text: str, name: str, version: str, plain: bool) -> None:
    pin = parse_pin(text)
    assert pin is not None
    assert (pin.name, pin.version, pin.plain) == (name, version, plain)
    assert str(pin) == f"{canonical(name)}=={version}"


@pytest.mark.parametrize("text", ["torch", "torch>=2.5", "torch = 2.5", "==2.5", "", "# torch==2.5"])
def test_not_a_pin(text: str) -> None:
    assert parse_pin(text) is None


def test_names_are_pep503_canonical() -> None:
    assert canonical("Pytorch_Triton.ROCm") == "pytorch-triton-rocm"
    assert requirement_name("  TorchVision>=0.20 ; extra == 'x'") == "torchvision"
    assert requirement_name("; nothing") is None
    assert is_triton("pytorch_triton_rocm") and is_triton("Triton") and not is_triton("torch")
    assert wheel_escape("pytorch-triton.ROCm") == "pytorch_triton_ROCm"
    assert set(TRITON_DISTRIBUTIONS) == {"triton", "triton-rocm", "pytorch-triton", "pytorch-triton-rocm"}


def test_triton_pin_reads_old_and_new_requires_dist() -> None:
    assert triton_pin(["pytorch-triton-rocm==3.1.0; platform_system == 'Linux'"]) == "pytorch-triton-rocm==3.1.0"
    assert triton_pin(["triton (==2.1.0) ; extra == 'x'"]) == "triton==2.1.0"
    assert triton_pin(["numpy", "triton>=3"]) == "triton"
    assert triton_pin(["numpy==2.0"]) is None


def _string_constants(tree: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_package_facts_are_defined_once() -> None:
    """No module but packages.py spells a name normaliser or lists the Triton distributions."""
    root = Path(rocmkit.__file__).parent
    for path in root.rglob("*.py"):
        if path == root / "packages.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(root)
        assert "[-_.]+" not in _string_constants(tree), f"{rel} normalises names itself; use packages.canonical"
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
        assert not defined & {"canonical", "_canonical", "TRITON_DISTRIBUTIONS", "TRITON_NAMES", "_PIN", "_CHANGE"}, rel
        assert "pytorch-triton-rocm" not in _string_constants(tree) or rel.name == "torch_env.py", rel
