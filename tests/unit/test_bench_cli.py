"""`rocmkit bench models` argument handling that needs no child process."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmkit.cli import main


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_list_names_the_five_models(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["bench", "models", "--list"], capsys)
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == [
        "distilgpt2",
        "t5_small",
        "camembert",
        "resnet",
        "mlp",
    ]


def test_unknown_model_is_one_line_exit_4(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["bench", "models", "--models", "mlp,gpt5"], capsys)
    assert code == 4 and out == ""
    assert err.startswith("error: unknown model 'gpt5' (fix: choose from distilgpt2,")
    assert len(err.strip().splitlines()) == 1


def test_output_folder_is_checked_before_running(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["bench", "models", "--html", str(tmp_path / "no" / "r.html")], capsys)
    assert code == 4 and "does not exist" in err


def test_bad_option_values_are_click_usage_errors() -> None:
    from rocmkit.cli import cli

    result = CliRunner().invoke(cli, ["bench", "models", "--mode", "fly"])
    assert result.exit_code == 2 and "--mode" in result.output
