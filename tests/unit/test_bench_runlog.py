"""Results files (JSON lines), --resume, --shard and merge, with the child processes faked."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmkit.bench import runlog
from rocmkit.bench.results import ModelResult
from rocmkit.bench.suite import Progress, SuiteOptions, run_suite
from rocmkit.errors import DataError, UsageError
from tests.unit.test_bench_suite import FakeChildren

BUILTIN = ["distilgpt2", "t5_small", "camembert", "resnet", "mlp"]


@given(st.integers(min_value=1, max_value=60), st.integers(min_value=1, max_value=9))
def test_shards_partition_the_suite_in_order(n_models: int, n_shards: int) -> None:
    items = list(range(n_models))
    parts = [runlog.Shard(i, n_shards).take(items) for i in range(1, n_shards + 1)]
    assert sorted(x for p in parts for x in p) == items
    assert all(p == sorted(p) for p in parts)
    assert max(map(len, parts)) - min(map(len, parts)) <= 1  # round robin: balanced
    assert parts == [runlog.Shard(i, n_shards).take(items) for i in range(1, n_shards + 1)]


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_bad_shards(text: str) -> None:
    with pytest.raises(UsageError, match="--shard"):
        runlog.Shard.parse(text)


def test_rows_are_appended_as_models_finish(tmp_path: Path) -> None:
    results = tmp_path / "run.jsonl"
    seen: list[int] = []

    def on_result(row: ModelResult) -> None:
        # The file already holds this row when the caller hears of it.
        seen.append(len(results.read_text().splitlines()) - 1)

    progress: list[Progress] = []
    suite = run_suite(
        SuiteOptions(cache_dir=tmp_path, results=results),
        environ={},
        runner=FakeChildren(),
        on_result=on_result,
        on_start=progress.append,
    )
    assert seen == [1, 2, 3, 4, 5]
    assert [p.index for p in progress] == [1, 2, 3, 4, 5]
    # No ETA until a model after the (cold) first is done; then one learnt from them.
    assert progress[0].eta_s is None and progress[1].eta_s is None
    assert all(p.eta_s is not None and p.eta_s >= 0 for p in progress[2:])
    log = runlog.read(results)
    assert log.header["suite"] == "builtin" and log.header["order"] == BUILTIN
    assert [r.name for r in log.rows] == BUILTIN
    assert runlog.to_suite(log.header, log.rows).models == suite.models


def test_resume_runs_only_what_is_missing_and_ignores_a_torn_line(tmp_path: Path) -> None:
    results = tmp_path / "run.jsonl"
    first = FakeChildren()
    run_suite(SuiteOptions(cache_dir=tmp_path, results=results), environ={}, runner=first)
    lines = results.read_text().splitlines()
    # As if killed while mlp ran and resnet's row was being written.
    results.write_text("\n".join(lines[:4]) + "\n" + lines[4][:25])
    again = FakeChildren()
    suite = run_suite(
        SuiteOptions(cache_dir=tmp_path, results=results, resume=True), environ={}, runner=again
    )
    assert [j["model"] for j in again.jobs] == ["resnet", "mlp"]
    assert [m.name for m in suite.models] == BUILTIN
    assert [r.name for r in runlog.read(results).rows] == BUILTIN


def test_resume_refuses_another_runs_file(tmp_path: Path) -> None:
    results = tmp_path / "run.jsonl"
    run_suite(SuiteOptions(cache_dir=tmp_path, results=results), environ={}, runner=FakeChildren())
    with pytest.raises(UsageError, match=r"holds another run.*mode 'infer' vs 'train'"):
        run_suite(
            SuiteOptions(cache_dir=tmp_path, results=results, resume=True, mode="train"),
            environ={},
            runner=FakeChildren(),
        )
    with pytest.raises(UsageError, match="--resume needs"):
        run_suite(SuiteOptions(cache_dir=tmp_path, resume=True), environ={}, runner=FakeChildren())


def test_shards_merged_equal_the_whole_run(tmp_path: Path) -> None:
    whole = run_suite(
        SuiteOptions(cache_dir=tmp_path, results=tmp_path / "all.jsonl"), environ={}, runner=FakeChildren()
    )
    logs = []
    for i in (1, 2, 3):
        path = tmp_path / f"s{i}.jsonl"
        fake = FakeChildren()
        run_suite(
            SuiteOptions(cache_dir=tmp_path, results=path, shard=runlog.Shard(i, 3)), environ={}, runner=fake
        )
        assert [j["model"] for j in fake.jobs] == BUILTIN[i - 1 :: 3]
        logs.append(runlog.read(path))
    merged = runlog.merge(list(reversed(logs)))
    assert merged.missing == ()
    # The fake rows carry no timings; the host's load while each ran is measured, so not compared.
    assert [replace(m, host_load=None) for m in merged.suite.models] == [
        replace(m, host_load=None) for m in whole.models
    ]
    assert [m.name for m in runlog.merge(logs[:2]).suite.models] == [
        "distilgpt2",
        "t5_small",
        "resnet",
        "mlp",
    ]
    assert runlog.merge(logs[:2]).missing == ("camembert",)
    with pytest.raises(UsageError, match="more than one file"):
        runlog.merge([logs[0], logs[0]])


def test_merge_refuses_files_of_different_runs(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    run_suite(
        SuiteOptions(cache_dir=tmp_path, results=a, shard=runlog.Shard(1, 2)),
        environ={},
        runner=FakeChildren(),
    )
    run_suite(
        SuiteOptions(cache_dir=tmp_path, results=b, shard=runlog.Shard(2, 2), repeat=5),
        environ={},
        runner=FakeChildren(),
    )
    with pytest.raises(UsageError, match=r"not from the same run as .*: repeat 30 vs 5"):
        runlog.merge([runlog.read(a), runlog.read(b)])


def test_damaged_results_files_are_data_errors(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"schema": "other"}\n')
    with pytest.raises(DataError, match=r"not a rocmkit.bench.rows/1"):
        runlog.read(path)
    header = json.dumps({"schema": runlog.SCHEMA})
    path.write_text(header + "\nnot json\n" + json.dumps({"row": {"name": "a", "status": "pass"}}) + "\n")
    with pytest.raises(DataError, match="line 2 is not JSON"):
        runlog.read(path)


def test_cli_checks_resume_and_shard_before_running(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from rocmkit.cli import bench as bench_cli

    runner = CliRunner()
    res = runner.invoke(bench_cli.cli, ["models", "--resume"])
    assert res.exit_code != 0 and isinstance(res.exception, UsageError)
    assert "--resume needs" in str(res.exception)
    res = runner.invoke(bench_cli.cli, ["models", "--results", str(tmp_path / "no" / "r.jsonl")])
    assert isinstance(res.exception, UsageError) and "does not exist" in str(res.exception)
    listed = runner.invoke(bench_cli.cli, ["models", "--suite", "huggingface", "--shard", "4/4", "--list"])
    assert listed.exit_code == 0
    names = [line.split()[0] for line in listed.output.splitlines()]
    assert names[0] == "BartForCausalLM" and len(names) == 13  # every 4th of 55, from the 4th


def test_merge_cli_reports_missing_shards(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from rocmkit.cli import bench as bench_cli

    path = tmp_path / "s1.jsonl"
    run_suite(
        SuiteOptions(cache_dir=tmp_path, results=path, shard=runlog.Shard(1, 2)),
        environ={},
        runner=FakeChildren(),
    )
    res = CliRunner().invoke(bench_cli.cli, ["merge", str(path), "--json"])
    assert res.exit_code == 1
    assert "2 model(s) have no row" in res.output  # CliRunner mixes stderr in


def test_a_dashboard_suite_without_its_library_is_one_usage_error(tmp_path: Path) -> None:
    # FakeChildren's probe reports torch only: neither transformers nor timm imports there.
    with pytest.raises(UsageError, match="--suite huggingface needs transformers") as err:
        run_suite(SuiteOptions(cache_dir=tmp_path, suite="huggingface"), environ={}, runner=FakeChildren())
    assert err.value.fix and "rocmkit install --with transformers" in err.value.fix
    with pytest.raises(UsageError, match="--suite timm needs timm"):
        run_suite(SuiteOptions(cache_dir=tmp_path, suite="timm"), environ={}, runner=FakeChildren())


def test_a_deeply_nested_or_huge_line_is_rocmkits_own_error() -> None:
    """Results files travel between nodes: a hostile line is a DataError, never a RecursionError."""
    from rocmkit.bench import runlog
    from rocmkit.errors import DataError

    header = json.dumps({"schema": runlog.SCHEMA})
    deep = '{"row": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(DataError, match="nests deeper"):
        runlog.parse([header, deep, '{"row": {}}'], "r.jsonl")
    with pytest.raises(DataError, match="nests deeper"):
        runlog.parse([header, deep], "r.jsonl")  # even as the last line, it is not a torn write
