"""The requests commands hand to the core: each checks itself when made (so the CLI, the API and
these tests share one rule), and the one ``--index-base`` rule."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from rocmkit.bench.request import BenchRequest
from rocmkit.cli.request import request
from rocmkit.containers.request import RenderRequest
from rocmkit.doctor.request import DoctorRequest
from rocmkit.errors import UsageError
from rocmkit.install.request import InstallRequest
from rocmkit.matrix import load_matrix
from rocmkit.resolve.request import ResolveRequest
from rocmkit.slurm.request import ConfigRequest, HookRequest
from rocmkit.source_build.request import BuildRequest


def test_request_decorator_hands_over_one_frozen_object() -> None:
    seen: list[ResolveRequest] = []

    @click.command()
    @click.option("--torch", "torch_version")
    @click.option("--cpu", is_flag=True)
    @request(ResolveRequest)
    def cmd(req: ResolveRequest) -> None:
        """Help stays the body's."""
        seen.append(req)

    res = CliRunner().invoke(cmd, ["--torch", "2.5", "--cpu"])
    assert res.exit_code == 0, res.output
    (req,) = seen
    assert (req.torch_version, req.cpu, req.channel) == ("2.5", True, "stable")
    with pytest.raises(AttributeError):
        req.cpu = False  # type: ignore[misc]
    assert "Help stays the body's." in CliRunner().invoke(cmd, ["--help"]).output


def test_bench_request_splits_names_and_checks_output_folders(tmp_path: Path) -> None:
    req = BenchRequest(models=("mlp,resnet", " t5_small "), html_path=tmp_path / "r.html")
    assert req.names == ("mlp", "resnet", "t5_small")
    assert req.suite_options().models == req.names
    with pytest.raises(UsageError, match=r"folder .* does not exist"):
        BenchRequest(csv_path=tmp_path / "no" / "r.csv")
    BenchRequest(csv_path=tmp_path / "no" / "r.csv", list_only=True)  # --list writes nothing
    with pytest.raises(UsageError, match="--mode 'fly'"):
        BenchRequest(mode="fly")  # type: ignore[arg-type]


def test_build_request_refuses_two_outputs_two_arch_sources_and_a_missing_python() -> None:
    with pytest.raises(UsageError, match="--json and --script"):
        BuildRequest(as_json=True, as_script=True)
    with pytest.raises(UsageError, match="--arch and --capture"):
        BuildRequest(archs=("gfx1031",), capture=Path("/tmp"))
    with pytest.raises(UsageError, match="does not exist"):
        BuildRequest(python="/no/such/python")
    assert Path(BuildRequest(python=sys.executable).python).is_absolute()


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"plan_file": Path("p.json"), "from_lock": Path("l.lock")}, "--plan and --from-lock"),
        ({"download_only": True}, "--download-only needs --wheelhouse"),
        ({"lock_file": Path("l"), "wheelhouse": Path("w")}, "--lock writes a lock from a plan"),
        ({"from_lock": Path("l"), "torch": "2.5"}, "a lock or wheelhouse fixes the builds"),
        ({"net_timeout": 0.0}, "--net-timeout 0 is not a positive number"),
        ({"venv": Path("v"), "interpreter": Path("p")}, "--venv and --interpreter"),
        ({"plan_file": Path("p.json"), "cpu": True}, "a plan file fixes the builds"),
        ({"wheelhouse": Path("w"), "no_companions": True}, "--skip companions does not apply"),
        ({"installer": "conda"}, "--installer 'conda'"),
    ],
)
def test_install_request_refuses_what_does_not_combine(kw: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        InstallRequest(**kw)  # type: ignore[arg-type]


def test_install_request_options_and_modes() -> None:
    req = InstallRequest(wheelhouse=Path("w"), download_only=True, no_guard=True, quiet=True)
    assert req.read_only and not req.installs_exact_list
    opts = req.options()
    assert not opts.guard and opts.verify and not opts.show_output and opts.companions
    assert InstallRequest(wheelhouse=Path("w")).installs_exact_list


def test_resolve_request_checks_format_and_constraints() -> None:
    with pytest.raises(UsageError, match="--json and --format requirements"):
        ResolveRequest(as_json=True, fmt="requirements")
    with pytest.raises(UsageError, match=r"two backends asked for: rocm6\.2 and cpu"):
        ResolveRequest(rocm="6.2", cpu=True)
    assert ResolveRequest(index_base="").constraints().index_base is None


def test_doctor_request_parses_settings_and_checks_report_folders(tmp_path: Path) -> None:
    assert DoctorRequest(settings=("repeats=5", "name=x")).options == {"repeats": 5, "name": "x"}
    with pytest.raises(UsageError, match="is not KEY=VALUE"):
        DoctorRequest(settings=("repeats",))
    with pytest.raises(UsageError, match=r"folder .* does not exist"):
        DoctorRequest(junit=tmp_path / "no" / "j.xml")
    with pytest.raises(UsageError, match="--backend 'tpu'"):
        DoctorRequest(backend="tpu")  # type: ignore[arg-type]  # click hands in any string


def test_render_and_slurm_requests() -> None:
    assert RenderRequest().this_machine and not RenderRequest(out=Path("d")).this_machine
    with pytest.raises(UsageError, match="--check needs --out"):
        RenderRequest(rocm="6.2", check=True)
    with pytest.raises(UsageError, match="not an absolute path"):
        ConfigRequest(folder=Path("etc/slurm"))
    # `config --write /etc/slurm`: the error names --dir, the option really missing.
    with pytest.raises(UsageError, match="--write takes no value, and the folder is --dir") as err:
        ConfigRequest(write=True, hook_args=("/srv/slurm",))
    assert err.value.fix == "pass --dir /srv/slurm --write"
    with pytest.raises(UsageError, match="--dir /no/such/folder does not exist"):
        ConfigRequest(write=True, folder=Path("/no/such/folder"))
    assert ConfigRequest(hook_args=("--venv", "/opt/v")).hook_config().args == ("--venv", "/opt/v")
    hook = HookRequest(python_path="/p/python", skip=("torch",), settings=("a=1",))
    assert hook.doctor_args() == ("--python", "/p/python", "--skip", "torch", "--set", "a=1")


def test_index_base_has_one_rule() -> None:
    m = load_matrix()
    root = m.pytorch_base.rstrip("/")
    mirror = "http://mirror.example/whl/"
    assert m.rebase(f"{root}/rocm6.2", mirror) == "http://mirror.example/whl/rocm6.2"
    assert m.rebase(f"{root}/rocm6.2", None) == f"{root}/rocm6.2"
    assert m.rebase("https://rocm.nightlies.amd.com/v2/gfx1151/", mirror).startswith("https://rocm.")
    assert m.rebase(f"{root}extra/rocm6.2", mirror) == f"{root}extra/rocm6.2"  # a prefix is not a folder
    # The resolver's URLs go through the same rule.
    assert m.index_url("stable", "rocm6.2", mirror) == "http://mirror.example/whl/rocm6.2"


def test_the_doctor_request_makes_the_run_options_itself() -> None:
    # The CLI used to copy the request into RunOptions field by field, with two type: ignores.
    from rocmkit.doctor.run import RunOptions

    req = DoctorRequest(level=2, only=("env.*",), backend="rocm", isolation="spawn", settings=("repeats=3",),
        warm_caches=True, framework="torch,jax", jobs=2)
    opts = req.run_options()
    assert isinstance(opts, RunOptions)
    assert (opts.level, opts.backend, opts.isolation, opts.jobs, opts.frameworks) == (2, "rocm", "spawn", 2,
        ("torch", "jax"))
    assert opts.only[0] == "env.*" and len(opts.only) > 1  # --warm-caches adds the cache checks
    assert opts.options == {"repeats": 3, "caches.warm": True}
