"""Dockerfiles from matrices/images.toml: validation, rendering, the committed files."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmkit.cli import cli
from rocmkit.containers.dockerfile import render_all, render_dockerfile
from rocmkit.containers.images import Images, _check_torch_wheels, choose_spec, load_images, parse_images
from rocmkit.containers.request import RenderRequest
from rocmkit.errors import DataError, UsageError
from rocmkit.matrix import load_matrix
from rocmkit.resolve.constraints import Constraints
from rocmkit.session import Session

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
MINIMAL = """\
schema = 1
[sources]
hub = "https://hub.docker.com/r/rocm/dev-ubuntu-22.04/tags"
[[rocm]]
rocm = "6.2"
version = "6.2.4"
image = "rocm/dev-ubuntu-22.04:6.2.4"
sources = ["hub"]
"""


def _parse(tmp_path: Path, text: str) -> Images:
    path = tmp_path / "images.toml"
    path.write_text(text)
    return parse_images(path)


def test_committed_dockerfiles_equal_the_generator() -> None:
    rendered = render_all(load_images())
    assert rendered, "images.toml renders no image"
    committed = {p.name for p in DOCKER.glob("*.Dockerfile")}
    assert committed == set(rendered), "run `rocmkit docker render --out docker`"
    for name, text in rendered.items():
        assert (DOCKER / name).read_text() == text, (
            f"{name} is stale: run `rocmkit docker render --out docker`"
        )


def test_docker_readme_lists_every_image() -> None:
    readme = (DOCKER / "README.md").read_text()
    for spec in load_images().specs:
        assert f"`{spec.filename}`" in readme, f"add {spec.filename} to docker/README.md"


def test_shipped_images_are_sourced_and_their_archs_known() -> None:
    images = load_images()
    matrix = load_matrix()
    assert {b.kind for b in images.bases} == {"rocm", "cuda"}
    for base in images.bases:
        assert base.sources and all(s in images.sources for s in base.sources)
        assert ":" in base.image and not base.image.endswith(":latest")
    releases = {r.version for r in matrix.rocm_releases}
    for base in images.bases:
        if base.kind == "rocm":
            assert base.release in releases, f"ROCm {base.release} is not in rocm.toml"
    for spec in images.specs:
        for arch in spec.gfx:
            assert matrix.gfx_arch(arch) is not None, arch
        # The image's `rocmkit install --rocm R --torch T` step has wheels to install.
        _check_torch_wheels(spec.torch, spec.release)
    # The task's reference base image is there and confirmed.
    assert images.base("rocm", "6.2").image == "rocm/dev-ubuntu-22.04:6.2.4"
    assert images.base("rocm", "6.2").confirmed
    assert not images.base("rocm", "7.1").confirmed


def test_rendered_rocm_dockerfile_does_what_the_issue_asks() -> None:
    images = load_images()
    text = render_dockerfile(choose_spec(images, rocm="6.2", gfx=["gfx90a", "gfx942"]), images)
    assert "FROM rocm/dev-ubuntu-22.04:6.2.4\n" in text
    # Build-time overrides are ARGs (not ENV), so the running container detects its GPUs.
    assert "ARG ROCMKIT_GFX=gfx90a,gfx942\n" in text and "ARG ROCMKIT_ROCM_VERSION=6.2.4\n" in text
    assert "ENV ROCMKIT_" not in text
    assert "RUN rocmkit install --venv /opt/rocmkit --rocm 6.2 --torch 2.5\n" in text
    assert text.index("rocmkit install") < text.index("RUN rocmkit doctor --level 0 ")
    assert "--skip env.device_nodes" in text  # the build machine has no /dev/kfd
    assert text.rstrip().endswith('ENTRYPOINT ["rocmkit", "doctor"]\nCMD ["--level", "1"]')
    assert "--device=/dev/kfd --device=/dev/dri --group-add video --group-add render" in text


def test_unconfirmed_base_is_flagged_in_the_file() -> None:
    images = load_images()
    text = render_dockerfile(choose_spec(images, rocm="7.1", torch="2.10", gfx=["gfx942"]), images)
    assert "UNCONFIRMED tag" in text


def test_choose_spec_defaults_and_custom_names() -> None:
    images = load_images()
    spec = choose_spec(images, rocm="6.2")
    assert spec.name == "rocm6.2-torch2.5" and spec.gfx == ("gfx90a", "gfx942", "gfx1100")
    custom = choose_spec(images, rocm="6.2", gfx=["GFX942", "gfx942"])
    assert custom.name == "rocm6.2-torch2.5-gfx942" and custom.gfx == ("gfx942",)
    other_torch = choose_spec(images, rocm="6.3", torch="2.8")
    assert other_torch.name == "rocm6.3-torch2.8-gfx90a-gfx942-gfx1100-gfx1201"
    assert "--rocm 6.3 --torch 2.8\n" in render_dockerfile(other_torch, images)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rocm": "6.9"}, r"no ROCm 6\.9 base image .*did you mean '6\.[0-4]'"),
        ({"rocm": "6.2", "gfx": ["gfx9422"]}, r"unknown gfx arch 'gfx9422' \(did you mean 'gfx942'\?\)"),
        ({"rocm": "6.2", "torch": "two"}, "is not a version"),
        # No torch 2.4 wheels for ROCm 6.2: the image's install step would fail in docker build.
        ({"rocm": "6.2", "torch": "2.4"}, r"no torch 2\.4 wheels for ROCm 6\.2"),
        ({"rocm": "6.2", "gfx": [" ", ""]}, "names no arch"),
        ({"rocm": "6.0"}, "has no image for ROCm 6.0"),
        ({}, "say which ROCm release"),
    ],
)
def test_choose_spec_errors(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(UsageError, match=match):
        choose_spec(load_images(), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (
            '[[image]]\nname = "x"\nrocm = "6.2"\ntorch = "2.5"\ngfx = ["gfx942"]\nsorces = ["hub"]\n',
            "did you mean 'sources'",
        ),
        (
            '[[image]]\nname = "x"\nrocm = "6.2"\ntroch = "2.5"\nsources = ["hub"]\n',
            "unknown key 'troch' \\(did you mean 'torch'\\?\\)",
        ),
        (
            '[[image]]\nname = "x"\nrocm = "6.3"\ntorch = "2.5"\ngfx = ["gfx942"]\nsources = ["hub"]\n',
            "no ROCm 6.3 base image",
        ),
        (
            '[[image]]\nname = "x"\nrocm = "6.2"\ntorch = "2.5"\nsources = ["hub"]\n',
            "missing required key 'gfx'",
        ),
        (
            '[[image]]\nname = "x"\nrocm = "6.2"\ntorch = "2.5"\ngfx = ["gfx942"]\nsources = ["hubb"]\n',
            "did you mean 'hub'",
        ),
        ('[[rocm]]\nrocm = "6.2"\nversion = "6.2.1"\nimage = "a:b"\nsources = ["hub"]\n', "listed twice"),
        (
            '[[rocm]]\nrocm = "6.3"\nversion = "6.2.1"\nimage = "a:b"\nsources = ["hub"]\n',
            "is not a rocm 6.3 release",
        ),
        ('[[rocm]]\nrocm = "6.3"\nversion = "6.3.1"\nimage = "rocm/dev"\nsources = ["hub"]\n', "has no tag"),
        (
            '[[cuda]]\ncuda = "12.4"\nversion = "12.4.1"\nimage = "nvidia/cuda:12.4.1"\n',
            "missing required key 'sources'",
        ),
        ('[[imgae]]\nname = "x"\n', "unknown key 'imgae' \\(did you mean 'image'\\?\\)"),
    ],
)
def test_bad_images_toml_is_a_data_error(tmp_path: Path, extra: str, match: str) -> None:
    with pytest.raises(DataError, match=match):
        _parse(tmp_path, MINIMAL + extra)


def test_wrong_schema_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="schema"):
        _parse(tmp_path, MINIMAL.replace("schema = 1", "schema = 2"))


def test_cli_render_write_then_check(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "docker"
    assert runner.invoke(cli, ["docker", "render", "--out", str(out)]).exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(render_all(load_images()))
    assert runner.invoke(cli, ["docker", "render", "--out", str(out), "--check"]).exit_code == 0
    victim = out / "rocm6.2-torch2.5.Dockerfile"
    victim.write_text(victim.read_text().replace("doctor --level 0", "doctor --level 1"))
    res = runner.invoke(cli, ["docker", "render", "--out", str(out), "--check"])
    assert res.exit_code == 1 and "rocm6.2-torch2.5.Dockerfile differs" in res.stderr
    assert "RUN rocmkit doctor --level 1 " in victim.read_text()  # --check writes nothing
    victim.write_text(render_all(load_images())[victim.name])
    (out / "old.Dockerfile").write_text("FROM scratch\n")
    res = runner.invoke(cli, ["docker", "render", "--out", str(out), "--check"])
    assert res.exit_code == 1 and "old.Dockerfile is not made by" in res.stderr


def test_cli_one_dockerfile_on_stdout() -> None:
    res = CliRunner().invoke(cli, ["docker", "render", "--rocm", "6.3", "--gfx", "gfx1201"])
    assert res.exit_code == 0
    # No syntax line by default: BuildKit would pull its frontend, which fails air-gapped.
    assert res.stdout.startswith("# Generated by `rocmkit docker render`")
    assert "# syntax=" not in res.stdout
    assert "ARG ROCMKIT_GFX=gfx1201\n" in res.stdout
    assert "ARG ROCMKIT_INDEX_BASE=https://download.pytorch.org/whl\n" in res.stdout
    with_syntax = CliRunner().invoke(cli, ["docker", "render", "--rocm", "6.3", "--syntax"])
    assert with_syntax.exit_code == 0 and with_syntax.stdout.startswith("# syntax=docker/dockerfile:1\n")


def test_index_base_arg_comes_before_the_install_step() -> None:
    text = render_all(load_images())["rocm6.2-torch2.5.Dockerfile"]
    assert text.index("ARG ROCMKIT_INDEX_BASE=") < text.index("RUN rocmkit install")


def test_bare_render_is_the_machines_image(captures_dir: Path) -> None:
    # Nothing named: the image of the plan `rocmkit resolve` makes for the machine, for the
    # archs of its visible AMD GPUs (the gfx1031, not the gfx1030 its wheel runs it as).
    session = Session(capture=captures_dir / "rx6800m-gfx1031-gfx90c-fedora-rocm6.3")
    plan = session.plan(Constraints())
    (name, text), = RenderRequest().rendered(session).items()
    assert "ARG ROCMKIT_GFX=gfx1031\n" in text
    rocm = plan.backend.removeprefix("rocm")
    torch = (plan.torch_version or "").split("+")[0]
    assert f"RUN rocmkit install --venv /opt/rocmkit --rocm {rocm[:3]} --torch {torch}\n" in text
    assert name == f"rocm{rocm[:3]}-torch{torch}-gfx1031.Dockerfile"


def test_bare_render_without_an_amd_gpu_says_what_to_name(captures_dir: Path) -> None:
    session = Session(capture=captures_dir / "synthetic-h100x2-nvidia-550")
    with pytest.raises(UsageError, match="renders ROCm images only") as err:
        RenderRequest().rendered(session)
    assert "--rocm X.Y" in (err.value.fix or "")
