"""A loaded run is "not judged: too noisy (why)", never "same": CPU steal, load average, spread."""

from __future__ import annotations

from dataclasses import replace

from rocmkit.bench import compare, noise
from rocmkit.bench.results import ModelResult, SuiteResult
from tests.support.cli import rocmkit

STAT = "cpu  {user} 0 {system} {idle} 0 0 0 {steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"


def _reader(load: str, **stat: int) -> noise.HostSample:
    files = {"/proc/loadavg": f"{load} 0.50 0.40 3/200 1234\n", "/proc/stat": STAT.format(**stat)}
    return noise.sample(read=files.get)


def test_steal_and_load_are_read_from_proc() -> None:
    before = _reader("0.30", user=100, system=50, idle=800, steal=50)
    after = _reader("9.80", user=200, system=100, idle=900, steal=250)
    got = noise.host_load(before, after)
    assert got["loadavg"] == 9.8
    assert got["steal"] == 200 / 450  # steal grew 200 of the 450 jiffies that passed
    assert got["cpus"] >= 1


def test_unreadable_proc_records_only_the_cpu_count() -> None:
    s = noise.sample(read=lambda path: None)
    assert noise.host_load(s, s) == {"cpus": float(s.cpus)}


def _row(speedup: float, q1: float, q3: float, **load: float) -> ModelResult:
    return ModelResult(name="BertForMaskedLM", status="pass", speedup=speedup, speedup_q1=q1, speedup_q3=q3,
                       eager_ms=10.0, compiled_ms=10.0 / speedup, host_load=load or None)


def _suite(row: ModelResult) -> SuiteResult:
    return SuiteResult(backend="cpu", device="cpu", mode="infer", dtype="fp32", size="tiny", repeat=10, models=(row,))


# The case: 0.80x on an idle run, 0.02x on a loaded one whose repeats spread over everything.
IDLE = _row(0.80, 0.78, 0.82, loadavg=0.4, cpus=2.0, steal=0.0)
LOADED = _row(0.02, 0.01, 0.85, loadavg=11.8, cpus=2.0, steal=0.23)


def test_the_loaded_run_is_not_judged_and_says_why() -> None:
    d = compare.diff_model(IDLE, LOADED, 0.05)
    assert d.verdict == "not judged"
    assert "not judged: too noisy (" in d.why
    for reason in ("B: CPU steal 23% while it ran", "B: load average 11.8 on 2 CPU(s)", "B: repeats spread 0.01-0.85x"):
        assert reason in d.why
    assert "A:" not in d.why


def test_each_reason_alone_is_enough() -> None:
    assert noise.too_noisy(replace(IDLE, host_load={"steal": 0.11, "cpus": 2.0})) == ["CPU steal 11% while it ran"]
    assert noise.too_noisy(replace(IDLE, host_load={"loadavg": 3.1, "cpus": 2.0})) == ["load average 3.1 on 2 CPU(s)"]
    assert noise.too_noisy(replace(IDLE, speedup_q1=0.5, speedup_q3=0.95))[0].startswith("repeats spread")
    assert noise.too_noisy(IDLE) == []
    assert noise.too_noisy(replace(IDLE, host_load=None)) == []  # an older row without the record


def test_compare_never_says_same_for_it_and_the_cli_exits_3(tmp_path: object) -> None:
    c = compare.compare(_suite(IDLE), _suite(LOADED))
    assert [d.verdict for d in c.models] == ["not judged"] and c.flagged == []
    text = compare.to_text(c)
    assert "same" not in text.split("\n\n", 1)[1] and "1 model(s) not judged, too noisy to tell" in text
    assert compare.to_dict(c)["not_judged"] == ["BertForMaskedLM"]


def test_the_cli_exit_code(tmp_path: object) -> None:
    import json
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_suite(IDLE).to_dict()))
    b.write_text(json.dumps(_suite(LOADED).to_dict()))
    res = rocmkit("bench", "compare", str(a), str(b))
    assert res.code == 3 and "not judged: too noisy" in res.stdout
    assert rocmkit("bench", "compare", str(a), str(a)).code == 0
