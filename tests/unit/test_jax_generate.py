"""jax.toml's release rows as `matrix refresh --write` generates them: from the recorded pages, and
the rules (newest post-release per Python, a plugin without its PJRT left out) on small pages."""

from __future__ import annotations

from rocmkit.matrix.fields import read_toml
from rocmkit.matrix.inputs import jax_projects, recorded_jax_pages
from rocmkit.matrix.jaxgen import generate_jax
from rocmkit.pkgindex.pages import IndexFile, ProjectPage
from tests.conftest import DATA, REPO

RECORDING = DATA / "upstream"


def _page(name: str, *filenames: str, day: str = "2026-06-17T00:00:00Z") -> ProjectPage:
    url = f"https://pypi.org/simple/{name}/"
    return ProjectPage(url=url, files=tuple(IndexFile(filename=f, url=url + f, upload_time=day) for f in filenames))


def test_the_recorded_pages_give_the_shipped_rows() -> None:
    doc = read_toml(REPO / "matrices" / "jax.toml")
    pages, day = recorded_jax_pages(RECORDING, jax_projects(REPO / "matrices"))
    assert day == "2026-12-06" and {"jax", "jaxlib", "jax-rocm7-plugin", "torch-xla"} <= set(pages)
    out = generate_jax(doc, pages, index_url="https://pypi.org/simple", read_on=day)
    assert out.doc["release"] == doc["release"]
    assert out.doc["torch_xla"] == doc["torch_xla"]
    assert out.doc["sources"]["pypi_jax"] == doc["sources"]["pypi_jax"]


def test_post_releases_per_python_and_a_plugin_needs_its_pjrt() -> None:
    doc = {
        "sources": {"s": "x"},
        "plugin": [{"family": "rocm7", "plugin": "jax-rocm7-plugin", "pjrt": "jax-rocm7-pjrt"},
                   {"family": "cuda13", "plugin": "jax-cuda13-plugin", "pjrt": "jax-cuda13-pjrt"}],
    }
    tag = "manylinux_2_27_x86_64"
    pages = {
        "jax": _page("jax", "jax-0.10.1-py3-none-any.whl"),
        "jaxlib": _page("jaxlib", *(f"jaxlib-0.10.1-cp3{m}-cp3{m}-{tag}.whl" for m in (11, 12, 13))),
        "jax-rocm7-plugin": _page(
            "jax-rocm7-plugin",
            *(f"jax_rocm7_plugin-0.10.1-cp3{m}-cp3{m}-{tag}.whl" for m in (11, 12, 13)),
            f"jax_rocm7_plugin-0.10.1.post1-cp312-cp312-{tag}.whl",
        ),
        "jax-rocm7-pjrt": _page("jax-rocm7-pjrt", f"jax_rocm7_pjrt-0.10.1-py3-none-{tag}.whl",
                                f"jax_rocm7_pjrt-0.10.1.post1-py3-none-{tag}.whl"),
        # A CUDA 13 plugin whose PJRT was never published: not installable, so not listed.
        "jax-cuda13-plugin": _page("jax-cuda13-plugin", f"jax_cuda13_plugin-0.10.1-cp312-cp312-{tag}.whl"),
    }
    out = generate_jax(doc, pages, index_url="https://pypi.org/simple", read_on="2026-12-06")
    (row,) = out.doc["release"]
    assert (row["version"], row["python_min"], row["python_max"]) == ("0.10.1", "3.11", "3.13")
    assert row["plugins"] == [
        {"family": "rocm7", "version": "0.10.1.post1", "python_min": "3.12", "python_max": "3.12"},
        {"family": "rocm7", "version": "0.10.1", "python_min": "3.11", "python_max": "3.13"},
    ]
    assert doc.get("release") is None  # the input is not modified
