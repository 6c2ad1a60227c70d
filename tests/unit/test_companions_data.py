"""matrices/companions.toml: it loads, each fact agrees with the recorded text that states it
(tests/data/companions, see SOURCE.md), and a malformed row is one error naming it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from rocmkit.companions.data import Build, parse_companions
from rocmkit.errors import DataError
from rocmkit.util.paths import shipped_matrices_dir

RECORDED = Path(__file__).resolve().parents[1] / "data" / "companions"
DATA = parse_companions(shipped_matrices_dir())


def _metadata(path: Path, field: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in path.read_text().splitlines() if line.startswith(field + ":")]


def _builds(name: str, **match: object) -> list[Build]:
    return [b for b in DATA.builds_of(name) if all(getattr(b, k) == v for k, v in match.items())]


def test_every_library_has_builds_and_every_fact_a_source() -> None:
    assert set(DATA.companions) == {"xformers", "bitsandbytes", "flash-attn"}
    for build in DATA.builds:
        assert build.sources and all(s in DATA.sources for s in build.sources)
    # Source builds say how they are built; wheels are not built here.
    for build in DATA.builds:
        assert bool(build.build_requires) == (build.kind == "source")


def test_xformers_rows_agree_with_the_wheel_and_its_workflow() -> None:
    folder = RECORDED / "xformers-0.0.35"
    (rocm,) = _builds("xformers", version="0.0.35", backend="rocm", kind="wheel")
    (cuda,) = _builds("xformers", version="0.0.35", backend="cuda")
    requires = _metadata(folder / "METADATA", "Requires-Dist")
    assert f"torch{rocm.torch_requires}" in requires and f"torch{cuda.torch_requires}" in requires
    build_info = json.loads((folder / "cpp_lib.json").read_text())
    assert build_info["version"]["torch"].split("+")[0] == rocm.torch == cuda.torch  # the PyPI wheel's own build
    wheels = (folder / "wheels.yml").read_text()
    assert f"torch_version in ['{rocm.torch}']" in wheels
    suffixes = re.findall(r"^\s+- ((?:cu|rocm)[0-9.]+)$", wheels, flags=re.M)
    assert [s for s in suffixes if s.startswith("rocm")] == list(rocm.backends)
    assert [s for s in suffixes if s.startswith("cu")] == list(cuda.backends)
    hip = re.search(r"'(gfx[^']*)'", (folder / "wheels_build.yml").read_text())
    assert hip and tuple(hip.group(1).split()) == rocm.archs


def test_bitsandbytes_rows_agree_with_the_wheels_libraries_and_build_script() -> None:
    folder = RECORDED / "bitsandbytes-0.50.2"
    libs = (folder / "libraries.txt").read_text().split()
    rocm_libs = {m.group(1) for lib in libs if (m := re.search(r"_rocm(\d+)\.so$", lib))}
    cuda_libs = {m.group(1) for lib in libs if (m := re.search(r"_cuda(\d+)\.so$", lib))}
    rocm_rows = _builds("bitsandbytes", backend="rocm")
    listed = {v for b in rocm_rows for v in b.rocm}
    assert {v.replace(".", "") for v in listed} == rocm_libs
    (cuda,) = _builds("bitsandbytes", backend="cuda")
    assert {v.replace(".", "") for v in cuda.cuda} == cuda_libs
    assert "bitsandbytes/libbitsandbytes_cpu.so" in libs and _builds("bitsandbytes", backend="cpu")
    assert "torch<3,>=2.4" in _metadata(folder / "METADATA", "Requires-Dist")
    # build-rocm.sh: a base list, and additions from ROCm 6.4, 7.0 and 7.14 on. The wheel's libraries
    # carry at least those (their code objects, re-read by `matrix check --sources` and
    # tests/unit/test_codeobjects.py, carry more: gfx908 and gfx1030 from 6.4, gfx1010-gfx1012 at 7.14).
    script = (folder / "build-rocm.sh").read_text()
    base = re.search(r'bnb_rocm_arch="(gfx[^"]*)"', script)
    assert base is not None
    adds = list(re.findall(r'rocm_version_at_least "([0-9.]+)"; then\n\s+bnb_rocm_arch="\$\{bnb_rocm_arch\};([^"]*)"', script))
    for row in rocm_rows:
        low = min(tuple(int(p) for p in v.split(".")) for v in row.rocm)
        want = base.group(1).split(";")
        for since, extra in adds:
            if low >= tuple(int(p) for p in since.split(".")):
                want += extra.split(";")
        assert set(want) <= set(row.archs), row.rocm
        assert "bnb_wheel_code" in row.sources and "bnb_archs" not in row.sources


def test_flash_attn_rows_agree_with_its_setup_py() -> None:
    folder = RECORDED / "flash-attn-2.8.3.post2"
    setup = (folder / "setup.py.txt").read_text()
    allowed = re.search(r"allowed_archs = \[([^\]]*)\]", setup)
    assert allowed is not None
    ck_archs = {a.strip().strip('"') for a in allowed.group(1).split(",")} - {"native"}
    (ck,) = _builds("flash-attn", variant="ck")
    assert set(ck.archs) == ck_archs and ck.build_env["GPU_ARCHS"] == "{archs;}"
    assert 'os.getenv("FLASH_ATTENTION_TRITON_AMD_ENABLE", "FALSE") == "TRUE"' in setup
    assert "import torch\n" in setup  # the build imports torch: no build isolation
    for row in _builds("flash-attn", variant="triton-amd"):
        assert row.build_env["FLASH_ATTENTION_TRITON_AMD_ENABLE"] == row.run_env["FLASH_ATTENTION_TRITON_AMD_ENABLE"] == "TRUE"
    version = _metadata(folder / "PKG-INFO", "Version")
    assert {b.version for b in DATA.builds_of("flash-attn")} == set(version)
    assert _metadata(folder / "PKG-INFO", "Requires-Dist") == ["torch", "einops"]
    # The RDNA row is marked: the README says "RDNA" without naming archs.
    (rdna,) = [b for b in _builds("flash-attn", variant="triton-amd") if "gfx110*" in b.archs]
    assert "archs" in rdna.unconfirmed


def _broken(tmp_path: Path, old: str, new: str) -> Path:
    text = (shipped_matrices_dir() / "companions.toml").read_text()
    assert old in text
    (tmp_path / "companions.toml").write_text(text.replace(old, new, 1))
    return tmp_path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('backend = "rocm"\nkind = "wheel"', 'backend = "rocm"\nkinds = "wheel"', "unknown key 'kinds'"),
        ('sources = ["bnb_wheel"]', 'sources = ["bnb_whee"]', "did you mean 'bnb_wheel'"),
        ('companion = "xformers"', 'companion = "xformer"', "has no [[companion]] row"),
        ('GPU_ARCHS = "{archs;}"', 'GPU_ARCHS = "{arch}"', "unknown placeholder {arch}"),
        ('torch = "2.10.0"', 'torch = "2.9.0"', "outside its own torch_requires"),
        ('archs = ["gfx90a", "gfx942"]', 'archs = ["sm_90"]', "not a gfx target"),
        ('torch_requires = ">=2.10"', 'torch_requires = "2.10"', "not a version specifier"),
    ],
)
def test_a_bad_row_is_one_error_naming_it(tmp_path: Path, old: str, new: str, message: str) -> None:
    with pytest.raises(DataError) as err:
        parse_companions(_broken(tmp_path, old, new))
    assert "companions.toml" in err.value.message and message in err.value.message


def test_the_registry_validates_it(tmp_path: Path) -> None:
    from rocmkit.datafiles import data_files

    (entry,) = [d for d in data_files() if "companions.toml" in d.names]
    shutil.copy(shipped_matrices_dir() / "companions.toml", tmp_path / "companions.toml")
    assert entry.load(tmp_path) == DATA
