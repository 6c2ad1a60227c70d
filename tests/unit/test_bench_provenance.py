"""Rows of another run never count: results files are stamped per run, merge and resume check
device and versions, and compare says when its two runs are unlike (issue 27, point 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmkit.bench import runlog
from rocmkit.bench.compare import compare
from rocmkit.bench.saved import load_saved
from rocmkit.bench.suite import SuiteOptions, run_suite
from rocmkit.errors import UsageError
from tests.support.cli import rocmkit
from tests.unit.test_bench_suite import FakeChildren


def _run(tmp_path: Path, name: str, **fake: object) -> Path:
    path = tmp_path / name
    run_suite(SuiteOptions(cache_dir=tmp_path, results=path), environ={}, runner=FakeChildren(**fake))  # type: ignore[arg-type]
    return path


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_a_row_appended_from_another_run_is_set_aside_not_counted(tmp_path: Path) -> None:
    ours = _run(tmp_path, "ours.jsonl", speedup=1.5)
    theirs = _run(tmp_path, "theirs.jsonl", device="AMD Instinct MI300X", backend="rocm", speedup=40.0)
    before = load_saved(ours).summary.geomean_speedup
    assert before == pytest.approx(1.5)
    # Somebody appends the other node's mlp row (a different model name, so nothing is replaced).
    foreign = json.loads(_lines(theirs)[-1])
    foreign["row"]["name"] = "mlp_from_elsewhere"
    with ours.open("a") as fh:
        fh.write(json.dumps(foreign) + "\n")
    log = runlog.read(ours)
    assert [s.name for s in log.set_aside] == ["mlp_from_elsewhere"]
    assert "from another run" in log.set_aside[0].why
    notes: list[str] = []
    assert load_saved(ours, notes).summary.geomean_speedup == pytest.approx(before)
    assert notes and "1 row(s) set aside" in notes[0] and "mlp_from_elsewhere" in notes[0]


def test_unstamped_rows_and_models_outside_the_header_are_set_aside(tmp_path: Path) -> None:
    ours = _run(tmp_path, "ours.jsonl")
    lines = _lines(ours)
    stamp = json.loads(lines[1])["run"]
    unstamped = {"row": {"name": "bert", "status": "pass", "speedup": 9.0}}
    outside = {"row": {"name": "not_in_header", "status": "pass", "speedup": 9.0}, "run": stamp}
    ours.write_text("\n".join([*lines, json.dumps(unstamped), json.dumps(outside)]) + "\n")
    aside = {s.name: s.why for s in runlog.read(ours).set_aside}
    assert aside == {"bert": "no run stamp", "not_in_header": "not a model of this file's header"}


def test_files_written_before_stamping_still_read_whole(tmp_path: Path) -> None:
    ours = _run(tmp_path, "ours.jsonl")
    old = []
    for n, line in enumerate(_lines(ours)):
        record = json.loads(line)
        record.pop("run", None)
        old.append(json.dumps(record))
        assert n == 0 or "row" in record
    ours.write_text("\n".join(old) + "\n")
    log = runlog.read(ours)
    assert len(log.rows) == 5 and log.set_aside == ()


def test_merge_refuses_shards_from_another_device_or_torch(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    run_suite(
        SuiteOptions(cache_dir=tmp_path, results=a, shard=runlog.Shard(1, 2)),
        environ={},
        runner=FakeChildren(),
    )
    run_suite(
        SuiteOptions(cache_dir=tmp_path, results=b, shard=runlog.Shard(2, 2)),
        environ={},
        runner=FakeChildren(device="AMD Instinct MI300X"),
    )
    with pytest.raises(UsageError, match=r"not from the same run .*device 'fake' vs 'AMD Instinct MI300X'"):
        runlog.merge([runlog.read(a), runlog.read(b)])
    header = json.loads(_lines(b)[0])
    header["device"] = "fake"
    header["versions"] = {"torch": "2.14.0"}
    b.write_text("\n".join([json.dumps(header), *_lines(b)[1:]]) + "\n")
    with pytest.raises(UsageError, match=r"torch '2.13.0' vs '2.14.0'"):
        runlog.merge([runlog.read(a), runlog.read(b)])


def test_merge_cli_names_the_rows_it_set_aside(tmp_path: Path) -> None:
    ours = _run(tmp_path, "ours.jsonl")
    with ours.open("a") as fh:
        fh.write(
            json.dumps({"row": {"name": "intruder", "status": "pass", "speedup": 50.0}, "run": "0" * 16})
            + "\n"
        )
    res = rocmkit("bench", "merge", str(ours))
    assert res.code == 0, res.stderr
    assert "1 row(s) set aside, not counted: intruder (line 7: from another run" in res.stderr
    assert "intruder" not in res.stdout


def test_resume_refuses_a_file_holding_another_runs_rows(tmp_path: Path) -> None:
    ours = _run(tmp_path, "ours.jsonl")
    with ours.open("a") as fh:
        fh.write(
            json.dumps({"row": {"name": "mlp", "status": "pass", "speedup": 50.0}, "run": "f" * 16}) + "\n"
        )
    with pytest.raises(UsageError, match=r"--resume: .*1 row\(s\) set aside") as err:
        run_suite(
            SuiteOptions(cache_dir=tmp_path, results=ours, resume=True), environ={}, runner=FakeChildren()
        )
    assert err.value.fix and "start afresh" in err.value.fix
    assert len(_lines(ours)) == 7  # nothing rewritten, nothing lost


def test_compare_says_when_its_runs_are_unlike(tmp_path: Path) -> None:
    a = load_saved(_run(tmp_path, "a.jsonl"))
    b = load_saved(_run(tmp_path, "b.jsonl", device="AMD Instinct MI300X", backend="rocm"))
    notes = compare(a, b).notes
    assert notes == (
        "unlike runs: size tiny vs full; device fake vs AMD Instinct MI300X; backend cpu vs rocm",
    )
    assert compare(a, a).notes == ()
    res = rocmkit("bench", "compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    assert "note: unlike runs: size tiny vs full; device fake vs AMD Instinct MI300X" in res.stdout
