"""Bad input, second round (issue 39, point 7): one clear line with the fix and an exit code of
its own, never a traceback, never a value taken as absent. The real processes are in
tests/integration/test_bad_input_cli.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from rocmkit.bench.runlog import RunLog, merge
from rocmkit.doctor.result import Status
from rocmkit.errors import DataError, UsageError
from rocmkit.install import journal
from rocmkit.install.guard import read_pip_conf
from rocmkit.slurm.checks import Finding, drain_reason
from tests.unit.test_install_journal import make, target


@pytest.mark.parametrize(
    "text",
    [
        "[global\nindex-url = https://x\n",
        "index-url = https://no-section.example\n",
        "[global]\n[global]\n",
        "[global]\nindex-url = a\nindex-url = b\n",
    ],
)
def test_a_pip_conf_that_is_not_an_ini_file_is_one_line(tmp_path: Path, text: str) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text(text)
    with pytest.raises(DataError) as err:
        read_pip_conf(conf)
    line = err.value.one_line()
    assert f"{conf} is not a pip configuration" in line and "fix" in line and "\n" not in line


def test_a_pip_conf_not_utf8_or_huge_is_one_line(tmp_path: Path) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_bytes(b"[global]\nindex-url = https://\xff\n")
    with pytest.raises(DataError, match="not UTF-8"):
        read_pip_conf(conf)
    conf.write_text("[global]\n" + "#" * (2 << 20))
    with pytest.raises(DataError, match="over rocmkit's limit"):
        read_pip_conf(conf)
    assert read_pip_conf(tmp_path / "absent.conf").sections() == []


def _log(shard: str, name: str) -> RunLog:
    header = {"suite": "builtin", "mode": "m", "dtype": "f", "size": "s", "repeat": 1, "backend": "cpu",
              "device": "cpu", "compile_mode": "default", "shard": shard, "order": ["a", "b"]}  # fmt: skip
    return RunLog(header=header, rows=(), path=Path(f"{name}.jsonl"))


@pytest.mark.parametrize(("shards", "said"), [
    (("9/2", "1/2"), "says it is shard '9/2', which is not I/N"),
    (("0/3",), "says it is shard '0/3'"),
    (("1/x",), "says it is shard '1/x'"),
    (("1/2", "2/3"), "not one split"),
])  # fmt: skip
def test_bench_merge_refuses_shards_no_run_writes(shards: tuple[str, ...], said: str) -> None:
    with pytest.raises((DataError, UsageError), match=said.replace("(", r"\(")) as err:
        merge([_log(s, f"f{i}") for i, s in enumerate(shards)])
    assert "\n" not in err.value.one_line()
    merge([_log("1/2", "a"), _log("2/2", "b")])  # the control


def test_a_check_name_holding_equals_still_drains() -> None:
    from rocmkit.slurm.scontrol import slurm_value

    found = [Finding(check="site.x=y State=RESUME", status=Status.FAIL, message="m"), Finding(
        check="a\nb", status=Status.FAIL, message="m")]  # fmt: skip
    reason = drain_reason(found)
    assert reason == "rocmkit: site.x_y State_RESUME,a_b"
    assert slurm_value("drain reason", reason, spaces=True) == reason  # what scontrol is given


def test_an_empty_option_value_is_refused_not_taken_as_absent() -> None:
    from rocmkit.cli.group import refuse_empty_values

    @click.command()
    @click.option("--rocm")
    @click.option("--skip", multiple=True)
    @click.option("--flag", is_flag=True)
    def cmd(rocm: str | None, skip: tuple[str, ...], flag: bool) -> None:
        click.echo(f"rocm={rocm!r} skip={skip!r}")

    refuse_empty_values(cmd)
    runner = CliRunner()
    assert runner.invoke(cmd, []).output == "rocm=None skip=()\n"
    for args in (["--rocm", ""], ["--rocm= "], ["--skip", "a", "--skip", ""]):
        res = runner.invoke(cmd, args)
        assert isinstance(res.exception, UsageError), args
        assert "is empty (given as" in res.exception.message


def test_a_journal_written_through_a_symlinked_venv_is_recovered_under_its_real_path(tmp_path: Path) -> None:
    real = tmp_path / "real-venv"
    real.mkdir()
    link = tmp_path / "venv-link"
    link.symlink_to(real)
    j = make(link)  # written by an install given the symlinked path
    j.at("installing")
    found = journal.read(target(real))  # read back by a doctor given the real path
    assert found is not None and found.step == "installing"
    assert journal.read(target(link)) is not None  # and by the spelling that wrote it
    data = json.loads(j.path.read_text())
    assert data["venv"] == {"dev": os.stat(real).st_dev, "ino": os.stat(real).st_ino}
