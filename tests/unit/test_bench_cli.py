"""`rocmkit bench models` argument handling that needs no child process."""

from __future__ import annotations

import json
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
    assert err.startswith("error: unknown model 'gpt5'\nfix: choose from distilgpt2,")
    assert len(err.strip().splitlines()) == 2


def test_output_folder_is_checked_before_running(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["bench", "models", "--html", str(tmp_path / "no" / "r.html")], capsys)
    assert code == 4 and "does not exist" in err


def test_bad_option_values_are_click_usage_errors() -> None:
    from rocmkit.cli import cli

    result = CliRunner().invoke(cli, ["bench", "models", "--mode", "fly"])
    assert result.exit_code == 2 and "--mode" in result.output


def saved(tmp_path: Path, status: str = "pass") -> Path:
    from rocmkit.bench.results import ModelResult, SuiteResult

    suite = SuiteResult(
        backend="rocm",
        device="AMD Instinct MI250X",
        mode="infer",
        dtype="fp32",
        size="full",
        repeat=30,
        models=(
            ModelResult(name="mlp", status="pass", speedup=1.5, speedup_q1=1.4, speedup_q3=1.6),
            ModelResult(name="resnet", status=status, speedup=1.2 if status == "pass" else None),  # type: ignore[arg-type]
        ),
    )
    path = tmp_path / "r.json"
    path.write_text(json.dumps(suite.to_dict()))
    return path


def test_load_renders_a_saved_result_without_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    code, out, _ = run(
        ["bench", "models", "--load", str(saved(tmp_path)), "--markdown", str(md), "--html", str(page)],
        capsys,
    )
    assert code == 0
    assert "AMD Instinct MI250X" in out and "pass rate 100%, 2/2" in out
    assert "| mlp | pass | 1.50x |" in md.read_text()
    assert "<svg" in page.read_text()
    code, _, _ = run(["bench", "models", "--load", str(saved(tmp_path, "fail_accuracy"))], capsys)
    assert code == 1


def test_load_of_a_bad_file_is_a_data_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = run(["bench", "models", "--load", str(bad)], capsys)
    assert code == 5 and "is not valid JSON" in err
    bad.write_text('{"schema": "rocmkit.report/1"}')
    code, _, err = run(["bench", "models", "--load", str(bad)], capsys)
    assert code == 5 and "not a rocmkit.bench/1 result" in err


def test_command_text_starts_at_bench() -> None:
    from rocmkit.bench.carry import command_text

    assert command_text(["--verbose", "bench", "models", "--models", "a b"]) == "rocmkit bench models --models 'a b'"
    assert command_text([]) == "rocmkit bench models"
