"""The report formats, validated against their parsers."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rocmkit.doctor.reporters import json as json_reporter
from rocmkit.doctor.reporters import junit, prom, text
from rocmkit.doctor.result import CheckResult, Figure, Report, Status
from rocmkit.errors import DataError
from rocmkit.machine import Gpu, Machine


def _report(*statuses: Status) -> Report:
    results = [
        CheckResult(
            name=f"grp{i % 2}.check_{i}",
            level=i % 3,
            status=s,
            message=f'message {i} with "quotes", <xml> & a \\ backslash',
            remedy="do the thing" if s is not Status.PASS else None,
            figures=(Figure(name="bandwidth", value=812.5 + i, unit="GB/s", reference=1000.0),)
            if i == 0
            else (),
            duration_s=0.25 * (i + 1),
            backend="cpu-interpreter",
            details={"stderr_tail": ["line one", "Segmentation fault"]} if s is Status.ERROR else {},
        )
        for i, s in enumerate(statuses)
    ]
    machine = Machine(gpus=(Gpu(vendor="amd", index=0, arch="gfx90a"),))
    return Report(
        machine=machine.to_dict(),
        plan=None,
        results=tuple(results),
        versions={"rocmkit": "0.1.0", "torch": None},
        started_at="2026-12-02T14:00:00Z",
        finished_at="2026-12-02T14:00:05Z",
        host_id="node1-abc",
        hostname="node1",
        level=2,
    )


ALL = (Status.PASS, Status.WARN, Status.FAIL, Status.SKIP, Status.ERROR, Status.PASS)


def test_json_round_trips_with_schema() -> None:
    report = _report(*ALL)
    data = json.loads(json_reporter.render(report))
    assert data["schema"] == "rocmkit.report/1"
    assert data["verdict"] == "fail"
    assert data["exit_code"] == 1
    assert data["machine"]["schema"] == "rocmkit.machine/1"
    assert {"host_id", "hostname", "started_at", "finished_at", "versions", "plan", "results"} <= set(data)
    back = Report.from_dict(data)
    assert back.results == report.results
    assert json.loads(json_reporter.render(back)) == data
    with pytest.raises(DataError):
        Report.from_dict({"schema": "other/1"})


def test_junit_parses_and_maps_statuses() -> None:
    root = ET.fromstring(junit.render(_report(*ALL)).encode())
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == (
        "6",
        "1",
        "1",
        "1",
    )
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert len(cases) == 6
    assert cases["grp0.check_2"].find("failure") is not None
    error = cases["grp0.check_4"].find("error")
    assert error is not None and "Segmentation fault" in (error.text or "")
    assert cases["grp1.check_3"].find("skipped") is not None
    assert "WARNING" in (cases["grp1.check_1"].findtext("system-out") or "")
    assert cases["grp0.check_0"].find("failure") is None and cases["grp0.check_0"].find("error") is None
    suites = {s.get("name") for s in root.iter("testsuite")}
    assert suites == {"rocmkit.doctor.grp0", "rocmkit.doctor.grp1"}


def test_prometheus_textfile_parses() -> None:
    report = _report(*ALL)
    families = {f.name: f for f in text_string_to_metric_families(prom.render(report))}
    status = families["rocmkit_check_status"]
    ones = {(s.labels["check"], s.labels["status"]) for s in status.samples if s.value == 1}
    assert ones == {(r.name, r.status.value) for r in report.results}
    assert len(status.samples) == 5 * len(report.results)
    durations = {s.labels["check"]: s.value for s in families["rocmkit_check_duration_seconds"].samples}
    assert durations["grp1.check_5"] == pytest.approx(1.5)
    (fig,) = families["rocmkit_figure"].samples
    assert fig.labels == {"host": "node1", "check": "grp0.check_0", "name": "bandwidth", "unit": "GB/s"}
    assert fig.value == pytest.approx(812.5)
    (verdict,) = families["rocmkit_doctor_verdict"].samples
    assert verdict.value == 1 and verdict.labels["verdict"] == "fail"
    (ts,) = families["rocmkit_doctor_last_run_timestamp_seconds"].samples
    assert ts.value == pytest.approx(1796220005.0)


@pytest.mark.parametrize(
    ("statuses", "code"),
    [
        ((Status.PASS, Status.SKIP), 0),
        ((Status.PASS, Status.WARN), 2),
        ((Status.WARN, Status.ERROR), 3),
        ((Status.ERROR, Status.FAIL), 1),
        ((), 0),
    ],
)
def test_verdict_and_exit_codes(statuses: tuple[Status, ...], code: int) -> None:
    report = _report(*statuses)
    assert report.exit_code == code
    out = text.render(report)
    assert out.rstrip().splitlines()[-1].endswith(f"exit code {code})")


def test_text_table_shows_remedies_and_child_stderr() -> None:
    out = text.render(_report(*ALL), verbose=True)
    assert "fix: do the thing" in out
    assert "| Segmentation fault" in out
    assert "bandwidth=813.5 GB/s (81% of reference)" not in out  # only check 0 has a figure
    assert "bandwidth=812.5 GB/s (81% of reference)" in out
    assert out.splitlines()[-1].startswith("FAIL:")


def test_without_verbose_the_table_is_what_failed_or_warned() -> None:
    """The progress lines showed every check; the summary after them names what needs a look
    (issue 40: every check twice read as noise), then the counts; -v and the reports have all."""
    out = text.render(_report(*ALL))
    rows = [line.split()[:2] for line in out.splitlines() if line[:5].strip() in ("PASS", "WARN", "FAIL", "ERROR", "SKIP")]
    assert rows == [["WARN", "grp1.check_1"], ["FAIL", "grp0.check_2"], ["ERROR", "grp0.check_4"]]
    assert "fix: do the thing" in out and "| Segmentation fault" in out
    assert "3 more passed or skipped: `rocmkit doctor -v` shows every result" in out
    assert out.splitlines()[-1].startswith("FAIL: 1 failed, 1 could not run, 1 warned, 2 passed, 1 skipped")
    clean = text.render(_report(Status.PASS, Status.SKIP))
    assert "STATUS" not in clean and clean.splitlines()[-1].startswith("PASS: 1 passed, 1 skipped")


def test_prom_write_is_atomic_and_readable(tmp_path: Path) -> None:
    target = tmp_path / "rocmkit.prom"
    target.write_text("old")
    prom.write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["rocmkit.prom"]
    assert target.stat().st_mode & 0o777 == 0o644


def test_progress_lines_go_to_the_given_stream() -> None:
    import io

    from rocmkit.doctor.registry import Check

    def fn(ctx: object) -> CheckResult:
        raise AssertionError

    stream = io.StringIO()
    progress = text.Progress(2, stream=stream)
    chk = Check(name="env.x", level=0, description="", func=fn, module=__name__)
    progress.start(chk)
    progress.result(
        chk, [CheckResult(name="env.x", level=0, status=Status.WARN, message="careful", duration_s=0.5)]
    )
    assert stream.getvalue() == "[1/2] WARN  env.x (0.50 s) careful\n"
    # A check with sub-results: each under the check's number; the total (checks) never moves.
    subs = [CheckResult(name=f"env.y.{i}", level=0, status=Status.PASS, message="ok") for i in range(3)]
    progress.result(chk, subs)
    assert stream.getvalue().splitlines()[1:] == [
        "[2/2] PASS  env.y.0 (0.00 s) ok",
        "[2/2] PASS  env.y.1 (0.00 s) ok",
        "[2/2] PASS  env.y.2 (0.00 s) ok",
    ]
    quiet = io.StringIO()
    silent = text.Progress(1, stream=quiet, quiet=True)
    silent.result(chk, subs)
    assert quiet.getvalue() == "" and silent.status.prefix == "doctor [1/1] "


def test_prometheus_series_stay_unique_for_repeated_names() -> None:
    twice = [
        CheckResult(
            name="torch.per_gpu",
            level=1,
            status=s,
            message="m",
            figures=(Figure(name="bw", value=1.0, unit="GB/s"), Figure(name="bw", value=2.0, unit="GB/s")),
        )
        for s in (Status.PASS, Status.FAIL)
    ]
    report = Report(
        machine={},
        plan=None,
        results=tuple(twice),
        versions={},
        started_at="2026-12-02T14:00:00Z",
        finished_at="2026-12-02T14:00:05Z",
        host_id="h",
        hostname="h",
        level=1,
    )
    samples = [
        (s.name, tuple(sorted(s.labels.items())))
        for f in text_string_to_metric_families(prom.render(report))
        for s in f.samples
    ]
    assert len(samples) == len(set(samples))
    checks = {dict(labels)["check"] for _, labels in samples if "check" in dict(labels)}
    assert checks == {"torch.per_gpu", "torch.per_gpu#2"}
