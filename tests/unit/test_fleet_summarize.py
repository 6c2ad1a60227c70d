"""Fleet summaries over crafted report sets: a failing node, a slow node, drift."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rocmkit.cli import cli
from rocmkit.doctor.result import CheckResult, Figure, Report, Status
from rocmkit.errors import DataError, UsageError
from rocmkit.fleet import render_html, render_text
from rocmkit.fleet.load import load_reports
from rocmkit.fleet.summarize import find_outliers, summarize
from rocmkit.machine import Gpu, Machine, RocmInfo

KFD_REMEDY = "sudo usermod -aG render,video $USER, then log in again"


def _result(name: str, status: Status = Status.PASS, **kw: Any) -> CheckResult:
    return CheckResult(
        name=name, level=kw.pop("level", 2), status=status, message=kw.pop("message", "ok"), **kw
    )


def make_report(
    host: str,
    *,
    bandwidth: float = 1000.0,
    busbw: float = 150.0,
    latency_ms: float = 2.0,
    torch: str = "2.5.1+rocm6.2",
    rocm: str = "6.2.4",
    driver: str = "6.8.5",
    arch: str = "gfx942",
    extra: tuple[CheckResult, ...] = (),
    finished_at: str = "2026-12-01T10:00:00Z",
) -> Report:
    machine = Machine(
        gpus=tuple(Gpu(vendor="amd", index=i, arch=arch, name="MI300X") for i in range(8)),
        rocm=RocmInfo(version=rocm, driver_version=driver),
    )
    results = (
        _result("env.kfd_access", level=0),
        _result(
            "triton.vector_add",
            figures=(Figure(name="bandwidth", value=bandwidth, unit="GB/s", reference=bandwidth * 1.1),),
        ),
        _result("triton.launch", figures=(Figure(name="latency", value=latency_ms, unit="ms"),)),
        _result(
            "distributed.all_reduce",
            level=3,
            figures=(
                Figure(name="busbw_1M", value=busbw / 10, unit="GB/s"),
                Figure(name="busbw_128M", value=busbw, unit="GB/s"),
            ),
        ),
        *extra,
    )
    return Report(
        machine=machine.to_dict(),
        plan=None,
        results=results,
        versions={
            "rocmkit": "0.1.0",
            "python": "3.11.9",
            "torch": torch,
            "triton": "pytorch-triton-rocm==3.1.0",
        },
        started_at="2026-12-01T09:59:00Z",
        finished_at=finished_at,
        host_id=f"{host}-0123456789ab",
        hostname=host,
        level=3,
    )


def write(dir_: Path, report: Report, name: str | None = None) -> Path:
    path = dir_ / (name or f"{report.hostname}.json")
    path.write_text(json.dumps(report.to_dict()))
    return path


@pytest.fixture
def fleet_dir(tmp_path: Path) -> Path:
    d = tmp_path / "reports"
    d.mkdir()
    kfd_fail = _result(
        "env.kfd_access", Status.FAIL, level=0, message="cannot open /dev/kfd read-write", remedy=KFD_REMEDY
    )
    write(d, make_report("node01"))
    write(d, make_report("node02", bandwidth=1010, busbw=148))
    write(d, make_report("node03", bandwidth=640, latency_ms=3.5))  # slow node
    write(d, make_report("node04", torch="2.4.1+rocm6.1"))  # drift
    # Two nodes fail the same way (their messages differ only in details).
    rep5 = make_report("node05")
    write(d, Report(**{**rep5.__dict__, "results": (kfd_fail, *rep5.results[1:])}))
    rep6 = make_report("node06", busbw=90)
    kfd_fail6 = _result(
        "env.kfd_access", Status.FAIL, level=0, message="cannot open /dev/kfd: EACCES", remedy=KFD_REMEDY
    )
    write(d, Report(**{**rep6.__dict__, "results": (kfd_fail6, *rep6.results[1:])}))
    return d


def test_node_table_failures_drift_outliers(fleet_dir: Path) -> None:
    loaded = load_reports([fleet_dir])
    s = summarize(loaded.reports, threshold=0.2)
    assert [n.hostname for n in s.nodes] == [f"node0{i}" for i in range(1, 7)]
    assert s.counts == {"pass": 4, "fail": 2}
    node1 = s.nodes[0]
    assert node1.archs == ("gfx942",) and node1.gpus == 8 and node1.rocm == "6.2.4"
    assert node1.figures["triton.vector_add:bandwidth"].value == 1000.0

    (group,) = s.failures
    assert group.check == "env.kfd_access" and group.status is Status.FAIL
    assert group.nodes == ("node05", "node06") and group.remedy == KFD_REMEDY

    (drift,) = s.drift
    assert drift.field == "torch" and drift.majority == "2.5.1+rocm6.2"
    assert drift.values["2.4.1+rocm6.1"] == ("node04",)

    found = {(o.hostname, o.figure) for o in s.outliers}
    assert found == {
        ("node03", "triton.vector_add:bandwidth"),  # 36 % below the median of 1000
        ("node03", "triton.launch:latency"),  # a time: 75 % above the median is worse
        ("node06", "distributed.all_reduce:busbw_128M"),
        ("node06", "distributed.all_reduce:busbw_1M"),
    }
    slow = next(o for o in s.outliers if o.figure == "triton.vector_add:bandwidth")
    assert slow.median == 1000.0 and slow.deviation == pytest.approx(0.36)
    assert not s.healthy
    # The busbw sweep's largest size is the table's key figure for that check.
    assert "distributed.all_reduce:busbw_128M" in s.key_figures


def test_threshold_decides_what_is_an_outlier(fleet_dir: Path) -> None:
    nodes = summarize(load_reports([fleet_dir]).reports).nodes
    assert {o.hostname for o in find_outliers(nodes, 0.5)} == {"node03"}  # only the 75 % latency
    assert find_outliers(nodes, 0.9) == ()


def test_nodes_are_compared_with_their_like(tmp_path: Path) -> None:
    # Two MI300X nodes and two MI210 nodes: the MI210s are slower, not outliers...
    for i in range(2):
        write(tmp_path, make_report(f"mi300-{i}", arch="gfx942", bandwidth=4000 + i))
        write(tmp_path, make_report(f"mi210-{i}", arch="gfx90a", bandwidth=1500 + i))
    assert summarize(load_reports([tmp_path]).reports).outliers == ()
    # ...until one MI210 is slow next to the other MI210s.
    write(tmp_path, make_report("mi210-2", arch="gfx90a", bandwidth=900))
    (slow,) = summarize(load_reports([tmp_path]).reports).outliers
    assert (slow.hostname, slow.peers, slow.median) == ("mi210-2", "8x gfx90a", 1500.0)


def test_healthy_fleet(tmp_path: Path) -> None:
    paths = [write(tmp_path, make_report(f"n{i}", bandwidth=1000 + i)) for i in range(3)]
    s = summarize(load_reports(paths).reports)
    assert s.healthy and not s.failures and not s.drift and not s.outliers


def test_newest_report_of_a_node_wins(tmp_path: Path) -> None:
    old = write(
        tmp_path, make_report("n1", torch="2.4.1+rocm6.1", finished_at="2026-11-01T00:00:00Z"), "old.json"
    )
    write(tmp_path, make_report("n1"), "new.json")
    loaded = load_reports([tmp_path])
    assert len(loaded.reports) == 1 and loaded.superseded == (old,)
    assert loaded.reports[0].report.versions["torch"] == "2.5.1+rocm6.2"


def test_other_json_in_a_folder_is_skipped_but_a_named_bad_file_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, make_report("n1"))
    other = tmp_path / "package.json"
    other.write_text('{"name": "x"}')
    assert load_reports([tmp_path]).skipped == (other,)
    with pytest.raises(DataError, match=r"package\.json: not a rocmkit\.report/1"):
        load_reports([other])
    broken = tmp_path / "broken.txt"
    broken.write_text("{not json")
    with pytest.raises(DataError, match="is not valid JSON"):
        load_reports([broken])
    with pytest.raises(UsageError, match="does not exist"):
        load_reports([tmp_path / "missing.json"])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match=r"no rocmkit\.report/1 files"):
        load_reports([empty])


def test_text_and_html_views(fleet_dir: Path) -> None:
    s = summarize(load_reports([fleet_dir]).reports)
    text = render_text.render(s)
    assert text.splitlines()[0] == "6 node(s): 2 fail, 4 pass"
    assert "NODE" in text and "vector_add.bandwidth" in text
    assert f"fix: {KFD_REMEDY}" in text
    assert "torch: majority 2.5.1+rocm6.2" in text
    assert (
        "node03: triton.vector_add:bandwidth = 640 GB/s, median 1000 GB/s over 6 8x gfx942 nodes (36% worse)"
        in text
    )
    page = render_html.render(s)
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page and "http" not in page
    assert "node05, node06" in page and "$USER, then log in again" in page


def test_html_escapes_report_text(tmp_path: Path) -> None:
    bad = _result("env.x", Status.FAIL, message="<script>alert(1)</script>", remedy="a & b")
    write(tmp_path, make_report("n1", extra=(bad,)))
    page = render_html.render(summarize(load_reports([tmp_path]).reports))
    assert "<script>" not in page and "&lt;script&gt;" in page and "a &amp; b" in page


def test_cli_json_html_and_strict(fleet_dir: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    html = tmp_path / "fleet.html"
    res = runner.invoke(
        cli, ["fleet", "summarize", str(fleet_dir), "--json", "--html", str(html), "--threshold", "0.3"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["schema"] == "rocmkit.fleet/1" and data["threshold"] == 0.3 and not data["healthy"]
    assert len(data["nodes"]) == 6 and data["drift"][0]["field"] == "torch"
    assert {o["hostname"] for o in data["outliers"]} == {"node03", "node06"}
    assert html.read_text().startswith("<!DOCTYPE html>")
    strict = runner.invoke(cli, ["fleet", "summarize", str(fleet_dir), "--strict"])
    assert strict.exit_code == 1 and "NOT healthy" in strict.stdout


def test_cli_bad_threshold_is_a_usage_error(fleet_dir: Path) -> None:
    res = CliRunner().invoke(cli, ["fleet", "summarize", str(fleet_dir), "--threshold", "1.5"])
    assert res.exit_code == 2
