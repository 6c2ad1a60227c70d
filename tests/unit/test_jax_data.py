"""matrices/jax.toml: loads, is what the wheels say about themselves, and refuses bad rows."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from rocmkit.errors import DataError
from rocmkit.matrix.jaxdata import load_jax, parse_jax
from tests.conftest import DATA, REPO

WHEELS = DATA / "jax" / "wheels"


def _wheel(prefix: str) -> Path:
    found = sorted(WHEELS.glob(f"{prefix}-*"))
    assert found, prefix
    return found[0]


def _metadata(folder: Path, key: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in (folder / "METADATA").read_text().splitlines()
            if line.startswith(f"{key}:")]


def test_every_plugin_row_is_what_its_wheels_say() -> None:
    jd = load_jax(REPO / "matrices")
    assert {p.family for p in jd.plugins} == {"rocm7", "rocm10", "cuda12", "cuda13"}
    for p in jd.plugins:
        version = "0.12.0" if p.family == "rocm10" else "0.10.2"
        plugin = _wheel(f"{p.module}-{version}")
        pjrt = _wheel(f"{p.pjrt.replace('-', '_')}-{version}")
        assert _metadata(plugin, "Name") == [p.plugin]
        # The plugin pins its PJRT to its own version: "one version for all" is upstream's rule.
        assert f"{p.pjrt}=={version}" in _metadata(plugin, "Requires-Dist")
        entry = (pjrt / "entry_points.txt").read_text()
        assert "[jax_plugins]" in entry and p.entry_point in entry
        call = (pjrt / "register_plugin.txt").read_text()
        assert re.search(rf"'{p.platform}', priority", call), call


def test_jax_extras_are_the_ones_jax_declares() -> None:
    jd = load_jax(REPO / "matrices")
    extras = _metadata(_wheel("jax-0.10.2"), "Provides-Extra")
    for p in jd.plugins:
        if p.extra:
            assert p.extra in extras


def test_arch_lists_are_the_code_objects_read_from_the_wheels() -> None:
    jd = load_jax(REPO / "matrices")
    for row in jd.archs:
        folder = _wheel(f"{jd.plugin(row.family).module}-{row.version}")
        assert set(row.archs) == set((folder / "hip_code_objects.txt").read_text().split())


def test_system_libraries_are_what_the_rocm7_wheels_link() -> None:
    fix = load_jax(REPO / "matrices").fix("system-libraries")
    assert fix is not None
    needed: set[str] = set()
    for folder in (_wheel("jax_rocm7_plugin-0.10.2"), _wheel("jax_rocm7_pjrt-0.10.2")):
        needed |= set((folder / "needed.txt").read_text().split())
    assert set(fix.libraries) <= needed
    system = {"libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0", "libstdc++.so.6",
              "libgcc_s.so.1", "ld-linux-x86-64.so.2"}
    assert needed - system == set(fix.libraries)


def test_releases_pin_one_version_and_newest_post_per_python() -> None:
    jd = load_jax(REPO / "matrices")
    r = next(r for r in jd.releases if r.version == "0.9.1")
    assert r.build("rocm7", "3.11") is not None and r.build("rocm7", "3.11").version == "0.9.1.post6"
    # 0.10.1.post1 was published for CPython 3.12 only: 3.11 keeps 0.10.1.
    r = next(r for r in jd.releases if r.version == "0.10.1")
    assert r.build("rocm7", "3.12").version == "0.10.1.post1"
    assert r.build("rocm7", "3.11").version == "0.10.1"
    assert jd.releases[-1].version == "0.12.1" and jd.releases[-1].build("rocm7", "3.12") is None


def _broken(tmp_path: Path, old: str, new: str) -> Path:
    folder = tmp_path / "m"
    shutil.copytree(REPO / "matrices", folder)
    text = (folder / "jax.toml").read_text()
    assert old in text
    (folder / "jax.toml").write_text(text.replace(old, new, 1))
    return folder


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ('backend = "rocm"', 'backend = "metal"', "is not 'rocm' or 'cuda'"),
        ('family = "rocm7"\nbackend', 'family = "rocm8"\nbackend', "must be the backend and major"),
        ('min_driver = "580"', 'min_driver = "new"', "not an NVIDIA driver version"),
        ('"gfx900", "gfx906"', '"gfx900", "vega"', "not a gfx target"),
        ('sources = ["wheel_rocm7_0102", "jax_install", "jax_setup"]', 'sources = ["nowhere"]', "[sources] does not define"),
        ('entry_point = "xla_rocm7 = jax_plugins.xla_rocm7"', 'entry_point = "xla_rocm7"', "is not 'name = module'"),
        ('family = "rocm7", python_max', 'family = "rocm9", python_max', "has no [[plugin]] row"),
    ],
)
def test_a_bad_row_is_one_error_naming_the_file(tmp_path: Path, old: str, new: str, said: str) -> None:
    with pytest.raises(DataError) as info:
        parse_jax(_broken(tmp_path, old, new))
    assert info.value.message.startswith("jax.toml: ")
    assert said in info.value.message


def test_one_python_rule_for_torch_jax_plugins_and_torch_xla() -> None:
    # matrix/model.PythonSpan: minor versions, ends included, for every release table (jaxdata
    # had its own copy comparing whole versions, so 3.12.4 fell outside a row ending at 3.12).
    from rocmkit.matrix.jaxdata import JaxRelease, PluginBuild, TorchXlaRelease
    from rocmkit.matrix.model import TorchRelease

    rows = (
        JaxRelease(version="0.10.2", python_min="3.11", python_max="3.12"),
        PluginBuild(family="rocm7", version="0.10.2", python_min="3.11", python_max="3.12"),
        TorchXlaRelease(version="2.9.0", python_min="3.11", python_max="3.12"),
        TorchRelease(version="2.9.0", torchvision=None, torchaudio=None, python_min="3.11", python_max="3.12"),
    )
    for row in rows:
        assert row.supports_python("3.11") and row.supports_python("3.12") and row.supports_python("3.12.4")
        assert not row.supports_python("3.10") and not row.supports_python("3.13")
