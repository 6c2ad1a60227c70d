"""Dockerfiles from matrices/images.toml: validation, rendering, the committed files, and the
image bare `docker render` makes for a machine (ROCm, CUDA or CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmkit.cli import cli
from rocmkit.containers.dockerfile import render_all, render_dockerfile
from rocmkit.containers.images import (
    Images,
    _check_torch_wheels,
    choose_spec,
    cuda_release,
    load_images,
    parse_images,
)
from rocmkit.containers.request import RenderRequest
from rocmkit.errors import DataError, UsageError
from rocmkit.matrix import load_matrix
from rocmkit.resolve.constraints import Constraints
from rocmkit.session import Session
from tests.support.cli import rocmkit

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
MINIMAL = """\
schema = 1
[sources]
hub = "https://hub.docker.com/r/rocm/dev-ubuntu-22.04/tags"
[run]
rocm = "--device=/dev/kfd --device=/dev/dri"
cuda = "--gpus all"
cpu = "--ipc=host"
sources = ["hub"]
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
    assert {b.kind for b in images.bases} == {"rocm", "cuda", "cpu"}
    for base in images.bases:
        assert base.sources and all(s in images.sources for s in base.sources)
        assert ":" in base.image and not base.image.endswith(":latest")
    assert set(images.run) == {"rocm", "cuda", "cpu"} and all(s in images.sources for s in images.run_sources)
    releases = {r.version for r in matrix.rocm_releases}
    for base in images.bases:
        if base.kind == "rocm":
            assert base.release in releases, f"ROCm {base.release} is not in rocm.toml"
    # The committed set has one image of each kind.
    assert {s.kind for s in images.specs} == {"rocm", "cuda", "cpu"}
    for spec in images.specs:
        for arch in spec.gfx:
            assert matrix.gfx_arch(arch) is not None, arch
        # The image's install step (`--backend rocmR`, `cuC` or `cpu`, with `--torch T`) has wheels to install.
        _check_torch_wheels(spec.torch, spec.release, spec.kind)
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
    assert "RUN rocmkit install --venv /opt/rocmkit --backend rocm6.2 --torch 2.5\n" in text
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
    assert "--backend rocm6.3 --torch 2.8\n" in render_dockerfile(other_torch, images)


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
        ({}, "say which image to render"),
        ({"rocm": "6.2", "cpu": True}, "two backends asked for: rocm and cpu"),
        ({"cpu": True, "gfx": ["gfx942"]}, "--gfx is for ROCm images"),
        ({"cuda": "12.7"}, r"no torch wheels for CUDA 12\.7"),
        ({"cuda": "twelve"}, "CUDA 'twelve' is not a release"),
        ({"cuda": "12.6"}, r"has no image for CUDA 12\.6"),
        ({"cuda": "12.8", "torch": "2.13"}, r"no torch 2\.13 wheels for CUDA 12\.8"),
        ({"cpu": True, "torch": "2.99"}, r"no torch 2\.99 wheels for CPU"),
    ],
)
def test_choose_spec_errors(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(UsageError, match=match):
        choose_spec(load_images(), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "fix"),
    [
        # The fix lists what there is: CUDA releases with wheels, torch series with cu128 wheels.
        ({"cuda": "12.7"}, "pick one of 11.7, 11.8, 12.1, 12.4, 12.6, 12.8"),
        ({"cuda": "12.8", "torch": "2.13"}, "pick one of 2.7, 2.8, 2.9, 2.10, 2.11"),
        ({"cuda": "12.6"}, "pass --torch X.Y: torch.toml has its wheels for 2.6, 2.7"),
    ],
)
def test_choose_spec_errors_name_the_choices(kwargs: dict[str, object], fix: str) -> None:
    with pytest.raises(UsageError) as err:
        choose_spec(load_images(), **kwargs)  # type: ignore[arg-type]
    assert fix in (err.value.fix or "")


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
        ('[cuda]\nimage = "ubuntu:24.04"\n', "missing required key 'sources'"),
        ('[cpu]\nimage = "ubuntu"\nsources = ["hub"]\n', "has no tag"),
        ('[cpu]\nimage = "ubuntu:latest"\nsources = ["hub"]\n', "is :latest"),
        ('[[image]]\nname = "x"\ncpu = true\ntorch = "2.13"\nsources = ["hub"]\n', r"no \[cpu\] base image"),
        (
            '[[image]]\nname = "x"\nrocm = "6.2"\ncpu = true\ntorch = "2.5"\ngfx = ["gfx942"]\nsources = ["hub"]\n',
            "names rocm and cpu: one kind per image",
        ),
        ('[[image]]\nname = "x"\ntorch = "2.5"\nsources = ["hub"]\n', "names no kind of image"),
        (
            '[cuda]\nimage = "ubuntu:24.04"\nsources = ["hub"]\n'
            '[[image]]\nname = "x"\ncuda = "12.8"\ntorch = "2.11"\ngfx = ["gfx942"]\nsources = ["hub"]\n',
            "gfx is for ROCm images",
        ),
        (
            '[cuda]\nimage = "ubuntu:24.04"\nsources = ["hub"]\n'
            '[[image]]\nname = "x"\ncuda = "12"\ntorch = "2.11"\nsources = ["hub"]\n',
            "cuda '12' is not a CUDA release",
        ),
        ('[[image]]\nname = "x"\ncpu = false\ntorch = "2.5"\nsources = ["hub"]\n', "cpu must be true"),
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


def test_run_flags_are_required_per_kind(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"\[run\]: missing required key 'cpu'"):
        _parse(tmp_path, MINIMAL.replace('cpu = "--ipc=host"\n', ""))


def test_rendered_cpu_dockerfile_installs_cpu_wheels() -> None:
    images = load_images()
    text = render_dockerfile(choose_spec(images, cpu=True), images)
    assert f"FROM {images.base('cpu').image}\n" in text
    assert "RUN rocmkit install --venv /opt/rocmkit --backend cpu --torch 2.13\n" in text
    # Nothing to detect or override: no GPU, and none wanted.
    assert "ROCMKIT_GFX" not in text and "ROCMKIT_ROCM_VERSION" not in text
    assert text.index("ARG ROCMKIT_INDEX_BASE=") < text.index("RUN rocmkit install")
    assert "RUN rocmkit doctor --level 0 --image-build \\\n" in text
    assert f"#   docker run --rm {images.run['cpu']} rocmkit:cpu-torch2.13\n" in text
    assert "--device=/dev/kfd" not in text and "--gpus" not in text
    assert text.rstrip().endswith('ENTRYPOINT ["rocmkit", "doctor"]\nCMD ["--level", "1"]')


def test_rendered_cuda_dockerfile_names_its_wheels() -> None:
    images = load_images()
    spec = choose_spec(images, cuda="cu128")  # torch's index name, as `--backend` takes it
    assert (spec.name, spec.release, spec.torch) == ("cuda12.8-torch2.11", "12.8", "2.11")
    text = render_dockerfile(spec, images)
    # A plain base: the cu128 wheels bring CUDA's libraries from PyPI, the driver is the host's.
    assert f"FROM {images.base('cuda').image}\n" in text and "nvidia/cuda" not in text
    assert "pt_cuda_pip" in text  # the header names the base's sources
    # No GPU at build time: the wheels are named (--backend cu128), not detected.
    assert "RUN rocmkit install --venv /opt/rocmkit --backend cu128 --torch 2.11\n" in text
    assert text.index("ARG ROCMKIT_INDEX_BASE=") < text.index("RUN rocmkit install")
    assert "RUN rocmkit doctor --level 0 --image-build " in text
    assert "#   docker run --rm --gpus all --ipc=host rocmkit:cuda12.8-torch2.11\n" in text
    assert "ENV ROCMKIT_" not in text


def test_cuda_release_forms() -> None:
    assert cuda_release("12.8") == cuda_release("cu128") == cuda_release(" CU128 ") == "12.8"
    assert cuda_release("cu118") == "11.8" and cuda_release("13.0") == "13.0"
    for bad in ("12", "cu12", "12.80", "cuda12.8", "1.2", ""):
        with pytest.raises(UsageError, match="is not a release"):
            cuda_release(bad)


def test_cli_renders_cpu_and_cuda_images(tmp_path: Path) -> None:
    runner = CliRunner()
    cpu = runner.invoke(cli, ["docker", "render", "--cpu", "--torch", "2.12"])
    assert cpu.exit_code == 0, cpu.stderr
    assert "RUN rocmkit install --venv /opt/rocmkit --backend cpu --torch 2.12\n" in cpu.stdout
    assert "# Image cpu-torch2.12: torch 2.12, CPU wheels." in cpu.stdout
    out = tmp_path / "one"
    cuda = runner.invoke(cli, ["docker", "render", "--cuda", "12.6", "--torch", "2.13", "--out", str(out)])
    assert cuda.exit_code == 0, cuda.stderr
    assert [p.name for p in out.iterdir()] == ["cuda12.6-torch2.13.Dockerfile"]
    assert "rocmkit install --venv /opt/rocmkit --backend cu126 --torch 2.13" in (out / "cuda12.6-torch2.13.Dockerfile").read_text()
    assert runner.invoke(cli, ["docker", "render", "--cuda", "12.6", "--torch", "2.13", "--out", str(out), "--check"]).exit_code == 0
    for argv, match in (
        (["--cpu", "--cuda", "12.8"], "two backends asked for: cuda and cpu"),
        (["--cuda", "12.8", "--gfx", "gfx942"], "--gfx is for ROCm images"),
        (["--cuda", "12.x"], "CUDA '12.x' is not a release"),
    ):
        bad = rocmkit("docker", "render", *argv)
        assert bad.code == 4 and match in bad.one_line_error(), bad.stderr


def _plan_torch(session: Session) -> str:
    """The torch release an image of the session's plan pins: the plan's, or, where the plan's
    build is known only from build lists, the confirmed fallback's."""
    plan = session.plan(Constraints())
    pins = [r for r in plan.fallback if r.startswith("torch==")] or [f"torch=={plan.torch_version}"]
    return pins[0].removeprefix("torch==").split("+")[0]


def test_bare_render_is_the_machines_rocm_image(captures_dir: Path) -> None:
    # Nothing named: the image of the plan `rocmkit resolve` makes for the machine, for the
    # archs of its visible AMD GPUs (the gfx1031, not the gfx1030 its wheel runs it as).
    session = Session(capture=captures_dir / "rx6800m-gfx1031-gfx90c-fedora-rocm6.3")
    plan = session.plan(Constraints())
    said: list[str] = []
    (name, text), = RenderRequest().rendered(session, say=said.append).items()
    assert "ARG ROCMKIT_GFX=gfx1031\n" in text
    rocm = plan.backend.rocm
    torch = _plan_torch(session)
    assert f"RUN rocmkit install --venv /opt/rocmkit --backend rocm{rocm} --torch {torch}\n" in text
    assert name == f"rocm{rocm}-torch{torch}-gfx1031.Dockerfile"
    # A plan resting on a build no index has confirmed pins the confirmed one, and says so.
    assert bool(plan.fallback) == bool(said)
    if said:
        (line,) = said
        assert f"torch {plan.torch_version}" in line and f"pins torch {torch}" in line
        assert f"--backend rocm{rocm} --torch {plan.torch_version.split('+')[0]} --gfx gfx1031" in line


def test_bare_render_keeps_the_plans_rocm_patch_index(captures_dir: Path) -> None:
    # The plan's index is rocm6.2.4 (apart from rocm6.2): the image installs from it, on 6.2's base.
    session = Session(capture=captures_dir / "mi250x-gfx90a-rocm6.2.1")
    assert session.plan(Constraints()).backend.tag == "rocm6.2.4"
    (name, text), = RenderRequest().rendered(session).items()
    assert name.startswith("rocm6.2.4-torch") and "FROM rocm/dev-ubuntu-22.04:6.2.4\n" in text
    assert "--backend rocm6.2.4 --torch " in text and "ARG ROCMKIT_GFX=gfx90a\n" in text


@pytest.mark.parametrize("capture", ["synthetic-h100x2-nvidia-550", "h100x8-nvidia-smi-535.183.01"])
def test_bare_render_on_an_nvidia_node_is_its_cuda_image(captures_dir: Path, capture: str) -> None:
    session = Session(capture=captures_dir / capture)
    plan = session.plan(Constraints())
    assert plan.backend.kind == "cuda"
    release = plan.backend.cuda
    torch = _plan_torch(session)
    (name, text), = RenderRequest().rendered(session).items()
    assert name == f"cuda{release}-torch{torch}.Dockerfile"
    assert f"RUN rocmkit install --venv /opt/rocmkit --backend {plan.backend} --torch {torch}\n" in text
    assert "FROM ubuntu:" in text and "--gpus all" in text
    assert "ROCMKIT_GFX" not in text


def test_bare_render_on_a_cpu_only_plan_is_the_cpu_image(captures_dir: Path) -> None:
    # A Ryzen APU and a GTX 1050 Ti with neither driver loaded: the plan is CPU wheels.
    session = Session(capture=captures_dir / "ryzen2400g-gtx1050ti-centos7-rocm3.8-rock-not-loaded")
    assert session.plan(Constraints()).backend.tag == "cpu"
    (name, text), = RenderRequest().rendered(session).items()
    torch = _plan_torch(session)
    assert name == f"cpu-torch{torch}.Dockerfile"
    assert f"RUN rocmkit install --venv /opt/rocmkit --backend cpu --torch {torch}\n" in text


def test_bare_render_refuses_a_plan_no_image_renders(captures_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rocmkit.plan import Backend, Plan

    session = Session(capture=captures_dir / "synthetic-h100x2-nvidia-550")
    monkeypatch.setattr(session, "plan", lambda *a, **k: Plan(backend=Backend.parse("therock-gfx1151"), torch_version="2.9.0"))
    with pytest.raises(UsageError, match="plan is therock-gfx1151 wheels, for which rocmkit renders no image") as err:
        RenderRequest().rendered(session)
    assert "--backend cuXYZ or --backend cpu" in (err.value.fix or "")
