"""The shipped matrices load, answer contract 1, and bad data fails with a clear, located error."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from rocmkit.arch import override_to_gfx
from rocmkit.errors import DataError
from rocmkit.matrix import FILES, load_matrix, parse_matrix
from rocmkit.util.paths import matrices_dir
from tests.conftest import CAPTURES


def test_contract_lookups() -> None:
    m = load_matrix()
    dev = m.pci_device("0x744c")
    assert dev is not None
    assert (dev.pci_id, dev.product, dev.arch, dev.integrated) == (
        "0x744c",
        "Radeon RX 7900 XTX",
        "gfx1100",
        False,
    )
    assert m.pci_device("0x744C") == dev == m.pci_device("744c")
    assert m.pci_device("0xffff") is None
    arch = m.gfx_arch("gfx1031")
    assert arch is not None
    assert (arch.family, arch.generation, arch.integrated, arch.hsa_override) == (
        "gfx103",
        "RDNA2",
        False,
        "10.3.0",
    )
    assert "Radeon RX 6700 XT" in arch.products
    assert m.gfx_arch("gfx1100") is not None and m.gfx_arch("gfx1100").hsa_override is None
    assert m.gfx_arch("gfx9999") is None
    assert m.nvidia_compute_capability("NVIDIA H100 80GB HBM3") == "9.0"
    assert m.nvidia_compute_capability("NVIDIA GeForce GTX 1050 Ti") == "6.1"
    assert m.nvidia_compute_capability("NVIDIA A10") == "8.6"
    assert m.nvidia_compute_capability("NVIDIA A100-SXM4-80GB") == "8.0"
    assert m.nvidia_compute_capability("NVIDIA GeForce RTX 5090") == "12.0"
    assert m.nvidia_compute_capability("Matrox G200") is None


def test_load_is_cached() -> None:
    assert load_matrix() is load_matrix()


def test_products_named_in_the_task_are_covered() -> None:
    m = load_matrix()
    products = " | ".join(p for a in m.archs.values() for p in a.products)
    for name in (
        "MI100", "MI210", "MI250", "MI250X", "MI300X", "MI300A", "MI325X", "MI355X", "RX 6800", "RX 7900 XTX",
        "RX 9070 XT", "W6800", "W7900", "780M", "890M", "8060S", "Radeon VII", "MI50", "MI60",
    ):  # fmt: skip
        assert name in products, name


def test_overrides_stay_in_one_family() -> None:
    m = load_matrix()
    for arch in m.archs.values():
        if arch.hsa_override:
            gfx = override_to_gfx(arch.hsa_override)
            assert gfx is not None, arch.hsa_override
            target = m.archs[gfx]
            assert target.family == arch.family and target.name != arch.name
    assert m.archs["gfx1101"].override_arch == "gfx1100"
    assert m.archs["gfx1032"].override_arch == "gfx1030"
    assert override_to_gfx("9.0.10") == "gfx90a"


def _capture_pci_ids(folder: Path) -> list[str]:
    """Device ids as the real tools printed them: rocminfo's Chip ID, rocm-smi's device column."""
    ids: list[str] = []
    for path in (folder / "cmd").glob("*.txt"):
        text = path.read_text(errors="replace")
        ids += re.findall(r"Chip ID:\s+\d+\((0x[0-9a-f]{4})\)", text)
        ids += re.findall(r"^\d+\s+\S+\s+(0x[0-9a-f]{4}),", text, re.M)
        ids += re.findall(r"\[(0x[0-9a-f]{4}) :", text)
        ids += re.findall(r"Card Model:\s+(0x[0-9a-f]{4})", text)
    return [i for i in ids if i != "0x0000"]


def test_every_pci_id_in_the_captures_is_known_with_the_right_arch() -> None:
    m = load_matrix()
    seen = 0
    for folder in sorted(CAPTURES.iterdir()):
        expected = json.loads((folder / "expected.json").read_text())
        archs = {g["gfx"] for g in expected["gpus"] if g.get("gfx")}
        for pci_id in _capture_pci_ids(folder):
            dev = m.pci_device(pci_id)
            assert dev is not None, f"{folder.name}: {pci_id} missing from gfx.toml"
            if archs:
                assert dev.arch in archs, f"{folder.name}: {pci_id} is {dev.arch}, capture says {archs}"
            seen += 1
    assert seen >= 10


def test_every_fact_names_a_source() -> None:
    m = load_matrix()
    facts = [*m.archs.values(), *m.pci.values(), *m.nvidia_gpus, *m.cuda_toolkits, *m.rocm_indexes.values()]
    facts += [*m.torch_releases, *m.rocm_releases, *m.channels.values(), *m.family_indexes]
    facts += [v for r in m.torch_releases for v in r.variants]
    for fact in facts:
        assert fact.sources, fact
    for file, table in m.sources.items():
        assert table, file


def test_first_release_with_gfx1151_is_2_11() -> None:
    m = load_matrix()
    first = next(r for r in m.torch_releases if any("gfx1151" in v.archs for v in r.of_kind("rocm")))
    assert first.version == "2.11.0"


# -- bad data -------------------------------------------------------------------


@pytest.fixture
def copy_dir(tmp_path: Path) -> Path:
    for name in FILES:
        shutil.copy(matrices_dir() / name, tmp_path / name)
    return tmp_path


def _edit(folder: Path, file: str, old: str, new: str) -> None:
    path = folder / file
    text = path.read_text()
    assert old in text, f"fixture text not in {file}: {old!r}"
    path.write_text(text.replace(old, new, 1))


BAD = [
    (
        "gfx.toml",
        'generation = "RDNA2"',
        'genration = "RDNA2"',
        "unknown key 'genration' (did you mean 'generation'?)",
    ),
    ("gfx.toml", 'id = "0x744c"', 'id = "0x744G"', "pci '0x744G'"),
    ("gfx.toml", 'id = "0x7448"', 'id = "0x744c"', "duplicate pci id '0x744c'"),
    (
        "gfx.toml",
        'hsa_override = "10.3.0"',
        'hsa_override = "11.0.0"',
        "crosses from family gfx103 to gfx110",
    ),
    ("gfx.toml", 'hsa_override = "10.3.0"', 'hsa_override = "ten"', "hsa_override = 'ten' is not a version"),
    ("gfx.toml", 'sources = ["amdgpu_ids", "llvm"]', 'sources = ["amdgpu_idz"]', "did you mean 'amdgpu_ids'"),
    ("nvidia.toml", 'ga_driver = "570.26"', 'ga_driver = "570.x"', "cuda '12.8': ga_driver = '570.x'"),
    ("nvidia.toml", 'pattern = "P100"', 'pattern = "P100("', "not a valid regular expression"),
    # Python warns (FutureWarning: possible nested set): a warning is not a valid pattern either.
    ("nvidia.toml", 'pattern = "P100"', 'pattern = "P100[[a]"', "not a valid regular expression"),
    (
        "torch.toml",
        'version = "2.5.1"',
        'version = "2.5.1-rocm"',
        "version = '2.5.1-rocm' is not a valid version",
    ),
    ("torch.toml", 'version = "2.5.1"', 'version = "2.5.0"', "duplicate release '2.5.0'"),
    ("torch.toml", 'torchvision = "0.20.1"', 'torchvison = "0.20.1"', "did you mean 'torchvision'"),
    ("torch.toml", '{ index = "rocm6.2", triton', '{ index = "rocm6.9", triton', "has no [[rocm_index]] row"),
    (
        "torch.toml",
        "pytorch-triton-rocm==3.1.0",
        "pytorch-triton-rocm>=3.1.0",
        "must pin one version with '=='",
    ),
    ("torch.toml", 'python_min = "3.9"', 'python_min = "3.99"', "is newer than python_max"),
    ("torch.toml", '"gfx1030", "gfx1100"]', '"gfx1030", "gfx1100x"]', "which gfx.toml does not define"),
    ("rocm.toml", 'version = "6.2"', 'version = "6.x"', "version = '6.x' is not a version"),
    ("rocm.toml", 'userspace_max = "6.4"', 'userspace_max = "5.0"', "is newer than userspace_max"),
    ("channels.toml", 'name = "nightly"', 'name = "stable"', "duplicate channel 'stable'"),
    ("channels.toml", 'url = "{base}/{index}"', 'url = "{base}"', "must contain {index}"),
    ("torch.toml", 'unconfirmed = ["triton"]', 'unconfirmed = ["tritn"]', "unconfirmed names 'tritn'"),
    (
        "torch.toml",
        '{ index = "cu121", sources = ["moi90", "ti_29912dec"] }',
        '{ index = "cu118" }',
        "duplicate variant in release",
    ),
    (
        "torch.toml",
        'incomplete_archs = ["gfx906"]',
        'incomplete_archs = ["gfx9066"]',
        "gfx.toml does not define",
    ),
    ("channels.toml", 'archs = ["gfx1151"]', 'archs = ["gfx1151x"]', "family_index 'gfx1151'"),
    ("channels.toml", 'legacy_url = "https://rocm.nightlies.amd.com/whl-multi-arch/"\n', "",
     "legacy_archs names the device packages of legacy_url"),
    ("channels.toml", 'legacy_archs = ["gfx950",', 'legacy_archs = ["gfx9500",', "legacy_archs names 'gfx9500'"),
    ("gfx.toml", "schema = 1", "schema = 2", "schema = 2"),
    ("gfx.toml", "[[arch]]", "[[arch]", "not valid TOML"),
]


@pytest.mark.parametrize(("file", "old", "new", "message"), BAD, ids=[b[3][:40] for b in BAD])
def test_bad_data_is_a_located_error(copy_dir: Path, file: str, old: str, new: str, message: str) -> None:
    _edit(copy_dir, file, old, new)
    with pytest.raises(DataError) as info:
        parse_matrix(copy_dir)
    text = info.value.one_line()
    assert text.startswith(f"error: {file}"), text
    assert message in text, text
    assert info.value.exit_code == 5


def test_missing_file(copy_dir: Path) -> None:
    (copy_dir / "rocm.toml").unlink()
    with pytest.raises(DataError, match=r"rocm\.toml is missing"):
        parse_matrix(copy_dir)


def test_copy_of_shipped_data_is_valid(copy_dir: Path) -> None:
    assert parse_matrix(copy_dir).pci_device("0x7550") is not None
