"""benchmarks/gpu/floors.py: the GPU session's table of figures against their floors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from rocmkit.doctor.result import CheckResult, Figure, Report, Status
from rocmkit.doctor.sku import apply_floors, load_skus

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "floors.py"


def _floors() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_floors", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_each_figure_with_its_peak_share_and_floor(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fig = Figure(name="vector_add.bandwidth", value=2900.0, unit="GB/s", reference=4300.0)
    results = apply_floors(
        [CheckResult(name="triton.vector_add", level=2, status=Status.PASS, message="ok", figures=(fig,)),
         CheckResult(name="compile.correctness", level=2, status=Status.PASS, message="curves match")],
        load_skus().find("MI300X"), backend="rocm",
    )
    report = Report(machine={}, plan=None, results=tuple(results), versions={"torch": "2.9.0+rocm7.0"},
                    started_at="", finished_at="", host_id="n1-x", hostname="n1", level=2)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report.to_dict()))
    assert _floors().main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "GPU model row: MI300X" in out
    assert ("| triton.vector_add | warn | vector_add.bandwidth | 2900 GB/s | 4300 GB/s | 54.7 % | "
            "3500 GB/s, 0.85x reference | BELOW |") in out
    assert "| compile.correctness | pass | - |" in out


def test_an_unreadable_report_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "other"}')
    assert _floors().main([str(bad)]) == 4
    assert capsys.readouterr().err.startswith(f"error: cannot read {bad}")
