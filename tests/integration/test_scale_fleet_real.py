"""Fleet summaries over reports from REAL `rocmkit doctor --json` runs, plus crafted faults.

One machine stands in for several nodes, so each report gets its node's name
(hostname, host_id) after the run; everything else in them is what the doctor
wrote. Faults are crafted on top: a slow node (its all-reduce figures halved)
and drift (another torch on one node). The failing node is real: a capture
whose /dev/kfd could not be opened.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from rocmkit.proc.runner import run

pytestmark = pytest.mark.integration

ROCMKIT = [sys.executable, "-m", "rocmkit"]
CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"


def doctor(*args: str, tmp_path: Path) -> dict[str, Any]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "ROCMKIT_CACHE_DIR": str(tmp_path / "cache"),
    }
    res = run([*ROCMKIT, "doctor", "--json", *args], timeout=180, env=env)
    assert res.status in ("ok", "failed"), res.describe()
    data: dict[str, Any] = json.loads(res.stdout)
    assert data["schema"] == "rocmkit.report/1"
    # The exit code is the report's verdict (0 pass, 1 fail, ...).
    assert res.returncode == data["exit_code"]
    return data


def as_node(report: dict[str, Any], name: str) -> dict[str, Any]:
    return {**report, "hostname": name, "host_id": f"{name}-0000"}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("fleet")
    out = tmp / "reports"
    out.mkdir()
    mi210 = doctor("--level", "0", "--capture", str(CAPTURES / "mi210x2-gfx90a-rocm6.3.3"), tmp_path=tmp)
    mi250 = doctor("--level", "0", "--capture", str(CAPTURES / "mi250x-gfx90a-rocm6.2.1"), tmp_path=tmp)
    denied = doctor(
        "--level",
        "0",
        "--capture",
        str(CAPTURES / "rx9070xt-igpu-popos-rocm7.2.1-kfd-permission-denied"),
        tmp_path=tmp,
    )
    # A live level-3 run of the multi-GPU check (gloo across 2 local processes here).
    allreduce = doctor("--level", "3", "--only", "distributed", "--backend", "cpu", tmp_path=tmp)
    assert allreduce["verdict"] == "pass", allreduce["results"]
    slow = json.loads(json.dumps(allreduce))
    for fig in slow["results"][0]["figures"]:
        fig["value"] /= 2  # crafted: a node with half the bus bandwidth
    drifted = json.loads(json.dumps(mi250))
    drifted["versions"]["torch"] = "2.4.1+rocm6.1"  # crafted: an older torch on one node

    nodes = {
        "gpu01": mi210,
        "gpu02": drifted,
        "gpu03": denied,
        "net01": allreduce,
        "net02": allreduce,
        "net03": slow,
    }
    for name, rep in nodes.items():
        (out / f"{name}.json").write_text(json.dumps(as_node(rep, name)))
    (out / "notes.json").write_text('{"not": "a report"}')
    return out


def summarize(*args: str) -> tuple[int, str, str]:
    res = run([*ROCMKIT, "fleet", "summarize", *args], timeout=60)
    return res.returncode or 0, res.stdout, res.stderr


def test_summary_of_real_reports(fleet: Path, tmp_path: Path) -> None:
    html = tmp_path / "fleet.html"
    rc, out, err = summarize(str(fleet), "--json", "--html", str(html))
    assert rc == 0, err
    assert "notes.json is not a rocmkit.report/1 file" in err
    data = json.loads(out)
    nodes = {n["hostname"]: n for n in data["nodes"]}
    assert sorted(nodes) == ["gpu01", "gpu02", "gpu03", "net01", "net02", "net03"]
    assert nodes["gpu01"]["archs"] == ["gfx90a"] and nodes["gpu01"]["gpus"] == 2
    assert nodes["gpu03"]["verdict"] == "fail" and nodes["gpu03"]["archs"] == ["gfx1036", "gfx1201"]

    # The real failure, grouped with the doctor's remedy.
    fails = [f for f in data["failures"] if f["status"] == "fail"]
    assert [(f["check"], f["nodes"]) for f in fails] == [("env.device_nodes", ["gpu03"])]
    assert "usermod -aG render,video" in fails[0]["remedy"]

    drift = {d["field"]: d for d in data["drift"]}
    assert drift["torch"]["values"]["2.4.1+rocm6.1"] == ["gpu02"]

    # The slow node, and only it, is an outlier on the real all-reduce figures.
    assert {o["hostname"] for o in data["outliers"]} == {"net03"}
    assert {o["figure"] for o in data["outliers"]} == set(nodes["net03"]["figures"])
    assert all(k.startswith("distributed.all_reduce:busbw_") for k in nodes["net03"]["figures"])
    assert all(o["deviation"] == pytest.approx(0.5, abs=0.01) for o in data["outliers"])
    page = html.read_text()
    assert "net03" in page and "env.device_nodes" in page


def test_text_view_and_strict_exit(fleet: Path) -> None:
    rc, out, _ = summarize(str(fleet))
    assert rc == 0
    assert out.startswith("6 node(s): 1 fail, 5 pass")
    assert "[fail] env.device_nodes on 1 node(s): gpu03" in out
    rc, _, _ = summarize(str(fleet), "--strict")
    assert rc == 1


def test_node_labels_from_a_real_report(fleet: Path) -> None:
    res = run([*ROCMKIT, "fleet", "labels", str(fleet / "gpu03.json")], timeout=60)
    assert res.ok, res.describe()
    labels = dict(line.split("=", 1) for line in res.stdout.splitlines())
    assert labels["rocmkit.io/doctor"] == "fail"
    assert labels["rocmkit.io/gfx"] == "gfx1036_gfx1201"
    assert labels["rocmkit.io/gpus"] == "2"
