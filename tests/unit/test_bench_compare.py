"""`rocmkit bench compare`: flags beyond the noise of the repeats only; references; the CLI's exit code."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rocmkit.bench import compare
from rocmkit.bench.results import ModelResult, Spread, SuiteResult
from rocmkit.cli import bench as bench_cli
from rocmkit.doctor.checks.models import companion_result, matching_set_command
from rocmkit.doctor.result import Status
from rocmkit.errors import DataError


def _row(name: str, eager: float, compiled: float, spread: float = 0.03, status: str = "pass") -> ModelResult:
    s = eager / compiled
    return ModelResult(
        name=name,
        status=status,  # type: ignore[arg-type]
        speedup=s if status == "pass" else None,
        speedup_q1=s * (1 - spread) if status == "pass" else None,
        speedup_q3=s * (1 + spread) if status == "pass" else None,
        eager_ms=eager,
        compiled_ms=compiled,
        eager_spread=Spread(
            q1=eager * (1 - spread), q3=eager * (1 + spread), min=eager * 0.9, max=eager * 1.1
        ),
        compiled_spread=Spread(
            q1=compiled * (1 - spread), q3=compiled * (1 + spread), min=compiled * 0.9, max=compiled * 1.1
        ),
        message="" if status == "pass" else "boom",
    )


def _suite(*rows: ModelResult, mode: str = "train", suite: str = "huggingface") -> SuiteResult:
    return SuiteResult(
        backend="rocm",
        device="MI300X",
        mode=mode,
        dtype="bf16",
        size="full",
        repeat=30,
        models=rows,
        suite=suite,
    )


A = _suite(_row("BertForMaskedLM", 10.0, 5.0), _row("T5Small", 8.0, 4.0), _row("DistillGPT2", 6.0, 4.0))


def test_a_run_against_itself_flags_nothing() -> None:
    c = compare.compare(A, A)
    assert c.flagged == [] and {d.verdict for d in c.models} == {"same"}
    assert all(d.speedup_ratio == pytest.approx(1.0) for d in c.models)


def test_an_injected_2x_slowdown_is_flagged() -> None:
    slow = replace(A, models=(A.models[0], _row("T5Small", 8.0, 8.0), A.models[2]))
    c = compare.compare(A, slow)
    assert [d.name for d in c.flagged] == ["T5Small"]
    d = c.flagged[0]
    assert (
        d.verdict == "regression"
        and d.speedup_ratio == pytest.approx(0.5)
        and d.latency_ratio == pytest.approx(2.0)
    )
    assert compare.compare(slow, A).models[1].verdict == "improvement"


def test_a_change_within_the_noise_is_not_flagged() -> None:
    # 17 % slower, but the IQRs (40 % of the median wide) overlap; wider than 50 % is not judged at all
    # (tests/unit/test_bench_noise.py).
    noisy_a = _suite(_row("T5Small", 8.0, 4.0, spread=0.2))
    noisy_b = _suite(_row("T5Small", 8.0, 4.8, spread=0.2))
    d = compare.compare(noisy_a, noisy_b).models[0]
    assert d.verdict == "same" and "within the noise" in d.why
    steady_b = _suite(_row("T5Small", 8.0, 4.1, spread=0.001))
    steady_a = _suite(_row("T5Small", 8.0, 4.0, spread=0.001))
    assert compare.compare(steady_a, steady_b).models[0].verdict == "same"  # apart, but under 5 %


def test_accuracy_changes() -> None:
    broken = _suite(A.models[0], _row("T5Small", 8.0, 4.0, status="fail_accuracy"))
    c = compare.compare(A, broken)
    verdicts = {d.name: d.verdict for d in c.models}
    assert verdicts == {"BertForMaskedLM": "same", "T5Small": "broken", "DistillGPT2": "only in A"}
    assert [d.name for d in c.flagged] == ["T5Small"]
    assert {d.name: d.verdict for d in compare.compare(broken, A).models}["T5Small"] == "fixed"


def test_the_mi250_reference_is_data_with_its_source_and_drawn() -> None:
    refs = compare.load_references()
    mi250 = next(r for r in refs if r.id == "mi250-pt2.0-hf-train-amp")
    assert (mi250.speedup, mi250.passed, mi250.total) == (1.54, 44, 45)
    assert "pytorch.org/blog/experience-power-pytorch-2.0" in mi250.source
    c = compare.compare(A, A, references=refs)
    assert c.references == (mi250,)  # huggingface, train: it applies
    page = compare.render_page(c)
    assert "MI250" in page and 'stroke-dasharray="6 4"' in page
    assert compare.compare(A, _suite(*A.models, mode="infer"), references=refs).references == ()


def test_malformed_references(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="needs sources"):
        compare.parse_references({"reference": [{"id": "x", "speedup": 1.2}]}, "r.toml")
    with pytest.raises(DataError, match="malformed reference"):
        compare.parse_references(
            {"sources": {"s": "u"}, "reference": [{"id": "x", "sources": ["s"], "speedup": "fast"}]}, "r.toml"
        )


def test_compare_cli_exit_codes_and_html(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(A.to_dict()))
    b.write_text(
        json.dumps(replace(A, models=(A.models[0], _row("T5Small", 8.0, 8.0), A.models[2])).to_dict())
    )
    runner = CliRunner()
    same = runner.invoke(bench_cli.cli, ["compare", str(a), str(a)])
    assert same.exit_code == 0, same.output
    assert "no regression beyond the noise" in same.output
    out = tmp_path / "cmp.html"
    slow = runner.invoke(bench_cli.cli, ["compare", str(a), str(b), "--html", str(out), "--json"])
    assert slow.exit_code == 1
    assert json.loads(slow.output)["flagged"] == ["T5Small"]
    assert "T5Small" in out.read_text() and "regression" in out.read_text()
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert runner.invoke(bench_cli.cli, ["compare", str(a), str(bad)]).exit_code != 0


def test_doctor_names_a_torchvision_whose_ops_do_not_load() -> None:
    bad = companion_result(
        "2.13.0+cpu",
        {
            "torchvision": ("0.28.0", "RuntimeError: operator torchvision::nms does not exist"),
            "torchaudio": (None, None),
        },
    )
    assert bad.status is Status.FAIL
    assert "torchvision 0.28.0: RuntimeError: operator torchvision::nms does not exist" in bad.message
    assert (
        bad.remedy
        and "built for torch 2.13.0+cpu" in bad.remedy
        and "--torch 2.13.0 --backend cpu`" in bad.remedy
        and "pip uninstall --python" in bad.remedy
    )
    assert matching_set_command("2.9.1+rocm6.4", prefix="/v") == "rocmkit install --venv /v --torch 2.9.1 --backend rocm6.4"
    assert matching_set_command("2.10.0+cu128", prefix="/v") == "rocmkit install --venv /v --torch 2.10.0 --backend cu128"
    good = companion_result("2.14.1", {"torchvision": ("0.29.1", None), "torchaudio": (None, None)})
    assert good.status is Status.PASS and "torchvision 0.29.1" in good.message
    assert companion_result("2.13.0", {"torchvision": (None, None)}).status is Status.SKIP


def test_doctor_level_3_runs_the_suites_representative_subset(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from rocmkit.bench import suite as suite_mod
    from rocmkit.doctor.checks.models import compile_speedup
    from rocmkit.doctor.registry import CheckContext
    from rocmkit.machine import Machine

    asked: list[tuple[str, tuple[str, ...], str | None]] = []

    def fake_run_suite(opts: suite_mod.SuiteOptions, **_: object) -> SuiteResult:
        asked.append((opts.suite, opts.models, opts.size))
        rows = tuple(_row(n, 2.0, 1.0) for n in opts.models)
        return replace(_suite(*rows, mode="infer", suite=opts.suite), backend="cpu")

    monkeypatch.setattr(suite_mod, "run_suite", fake_run_suite)

    def run(options: dict[str, object]) -> Any:
        ctx = CheckContext(machine=Machine(), backend="cpu", cache_dir=tmp_path, options=options)
        return compile_speedup(ctx)

    result = run({"models.suite": "dashboard", "models.size": "tiny"})
    assert asked == [
        ("huggingface", ("DistillGPT2", "BertForMaskedLM", "T5Small"), "tiny"),
        ("timm", ("mobilenetv2_100",), "tiny"),
    ]
    assert result.status is Status.PASS
    assert [m["name"] for m in result.details["bench"]["models"]] == [
        "DistillGPT2",
        "BertForMaskedLM",
        "T5Small",
        "mobilenetv2_100",
    ]
    asked.clear()
    run({"models.suite": "huggingface", "models.names": "T5Small,DistillGPT2"})
    assert asked == [("huggingface", ("T5Small", "DistillGPT2"), None)]
    bad = run({"models.suite": "torchbench"})
    assert bad.status is Status.ERROR and "not a suite" in bad.message


def test_models_page_draws_the_reference_line_for_its_suite_and_mode(tmp_path: Path) -> None:
    from rocmkit.bench import html

    refs = [r for r in compare.load_references() if r.suite == A.suite and r.mode == A.mode]
    svg = html.render_svg(A, refs)
    assert "MI250 (1 GCD), PyTorch 2.0.0, ROCm 5.4.4: 1.54x, 44/45" in svg and 'stroke="#c62828"' in svg
    saved = tmp_path / "a.json"
    saved.write_text(json.dumps(A.to_dict()))
    page = tmp_path / "a.html"
    res = CliRunner().invoke(bench_cli.cli, ["models", "--load", str(saved), "--html", str(page)])
    assert res.exit_code == 0, res.output
    assert "reference (dotted red)" in page.read_text()


SAVED = Path(__file__).resolve().parent.parent / "data" / "bench"


def test_models_that_pass_in_a_and_fail_in_b_fail_the_compare_on_real_runs(tmp_path: Path) -> None:
    # Real files from `rocmkit bench models` (tests/data/bench/SOURCE.md): A passes both models,
    # B (inductor unable to make its cache) ends both in compile_error.
    a = SAVED / "cpu-builtin-pass.jsonl"
    runner = CliRunner()
    for b in (SAVED / "cpu-builtin-compile-error.jsonl", SAVED / "cpu-builtin-compile-error.json"):
        res = runner.invoke(bench_cli.cli, ["compare", str(a), str(b)])
        assert res.exit_code == 1, res.output
        assert "no regression" not in res.output
        assert "2 model(s) passed in A and fail in B: mlp (A: pass 0.84x, B: compile_error), " in res.output
        assert "resnet (A: pass 128.44x, B: compile_error)" in res.output
    js = runner.invoke(
        bench_cli.cli, ["compare", str(a), str(SAVED / "cpu-builtin-compile-error.jsonl"), "--json"]
    )
    assert js.exit_code == 1
    doc = json.loads(js.output)
    assert doc["broken"] == [
        {"name": "mlp", "status_a": "pass 0.84x", "status_b": "compile_error"},
        {"name": "resnet", "status_a": "pass 128.44x", "status_b": "compile_error"},
    ]
    # A run killed after its first model: the header lists resnet, which has no row.
    killed = tmp_path / "killed.jsonl"
    lines = (SAVED / "cpu-builtin-compile-error.jsonl").read_text().splitlines(keepends=True)
    killed.write_text("".join(lines[:2]))
    res = runner.invoke(bench_cli.cli, ["compare", str(a), str(killed)])
    assert res.exit_code == 1, res.output
    assert "resnet (A: pass 128.44x, B: no row)" in res.output
    # The other way round nothing broke: the models B fails were fixed.
    fixed = runner.invoke(bench_cli.cli, ["compare", str(SAVED / "cpu-builtin-compile-error.json"), str(a)])
    assert fixed.exit_code == 0 and "fixed" in fixed.output


def test_models_failing_in_both_runs_are_said_not_passed_off_as_no_regression() -> None:
    b = SAVED / "cpu-builtin-compile-error.json"
    res = CliRunner().invoke(bench_cli.cli, ["compare", str(b), str(b)])
    assert res.exit_code == 0  # nothing changed between the runs
    assert "2 model(s) fail in A and in B: mlp (A: compile_error, B: compile_error)" in res.output
    assert "no regression" not in res.output
