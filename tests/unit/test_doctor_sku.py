"""matrices/sku.toml: peaks and floors per GPU model, `matrix show --sku`, and figures judged by them."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocmkit.doctor.reporters import text
from rocmkit.doctor.result import CheckResult, Figure, Report, Status
from rocmkit.doctor.sku import apply_floors, load_skus, parse_skus
from rocmkit.errors import DataError
from rocmkit.machine import Gpu, Machine
from tests.support.cli import rocmkit

BRIEF = ("MI300X", "MI250X", "MI210", "MI100", "RX 7900 XTX", "H100", "H200")


def test_every_model_the_issue_names_has_peaks_floors_and_sources() -> None:
    skus = load_skus()
    for name in BRIEF:
        s = skus.find(name)
        assert s.get("mem_tbps") and s.get("fp16_tflops") and s.get("copy_tbps") and s.get("gemm_vs_torch")
        assert s.peak_sources and s.sources and all(k in skus.sources for k in (*s.peak_sources, *s.sources))
    mi300x = skus.find("AMD Instinct MI300X")
    assert (mi300x.get("mem_tbps"), mi300x.get("copy_tbps"), mi300x.get("gemm_fp16_tflops")) == (5.3, 3.5, 523.0)
    assert (mi300x.allreduce_gpus, mi300x.allreduce_min_bytes) == (8, 256 << 20)


def test_machines_find_their_row_by_marketing_name() -> None:
    skus = load_skus()
    for gpu, row in (("AMD Instinct MI250X", "MI250X"), ("NVIDIA H100 80GB HBM3", "H100"),
                     ("Radeon RX 7900 XTX", "RX 7900 XTX"), ("AMD Instinct MI210", "MI210")):
        found = skus.for_machine(Machine(gpus=(Gpu(vendor="amd", index=0, name=gpu),)))
        assert found is not None and found.name == row
    assert skus.for_machine(Machine(gpus=(Gpu(vendor="amd", index=0, name="AMD Radeon Graphics"),))) is None


def test_matrix_show_sku_prints_peaks_floors_and_sources() -> None:
    res = rocmkit("matrix", "show", "--sku", "MI300X")
    assert res.code == 0, res.stderr
    assert "memory bandwidth                   5.3 TB/s" in res.stdout
    assert "torch.matmul fp16                  523 TFLOPS" in res.stdout
    assert "rvs_mi300x_l3: https://github.com/ROCm/ROCmValidationSuite" in res.stdout
    assert "(unconfirmed)" in res.stdout  # the dense TFLOPS no source read here confirmed
    bad = rocmkit("matrix", "show", "--sku", "MI400")
    assert bad.code == 4 and "no GPU model 'MI400'" in bad.one_line_error()


def test_bad_rows_are_located_data_errors(tmp_path: Path) -> None:
    base = (
        'schema = 1\n[sources]\ns = "x"\n[[sku]]\nname = "X"\nmatch = ["X"]\nmem_tbps = 1.0\n'
        'fp16_tflops = 10.0\npeak_sources = ["s"]\nsources = ["s"]\n'
    )
    for extra, words in (("copy_vs_torch = 1.5\n", "copy_vs_torch is a fraction"),
                         ("gemm_vs_torch = -1\n", "must be a positive number"),
                         ("allreduce_busbw_gbs = 300.0\n", "needs allreduce_gpus"),
                         ("speed = 3\n", "unknown key 'speed'")):
        path = tmp_path / "sku.toml"
        path.write_text(base + extra)
        with pytest.raises(DataError, match=words):
            parse_skus(path)


def _result(name: str, *figures: Figure, **details: object) -> CheckResult:
    return CheckResult(name=name, level=2, status=Status.PASS, message="ok", figures=figures, details=dict(details))


def test_a_figure_below_its_floor_warns_and_every_figure_carries_pct_of_peak() -> None:
    mi300x = load_skus().find("MI300X")
    fast = _result("triton.vector_add", Figure(name="vector_add.bandwidth", value=4000.0, unit="GB/s", reference=4300.0))
    slow = _result("triton.vector_add", Figure(name="vector_add.bandwidth", value=2900.0, unit="GB/s", reference=4300.0))
    gemm = _result("triton.matmul", Figure(name="matmul.fp16.throughput", value=300.0, unit="TFLOP/s", reference=480.0))
    ar = _result("distributed.all_reduce", Figure(name="busbw_256M", value=250.0, unit="GB/s"),
                 Figure(name="busbw_1M", value=20.0, unit="GB/s"), world_size=8)
    out = apply_floors([fast, slow, gemm, ar], mi300x, backend="rocm")
    ok, low, mm, red = out
    assert ok.status is Status.PASS and ok.figures[0].pct_of_peak == 75.5 and ok.figures[0].floor == 3500.0
    assert low.status is Status.WARN and "vector_add.bandwidth 2900 GB/s < floor 3500 GB/s" in low.message
    assert low.figures[0].below_floor
    # Triton at 0.62x torch.matmul (< 0.7x), and torch.matmul itself under RVS's 523 TFLOPS.
    assert mm.status is Status.WARN and "0.62x torch's < floor 0.70x" in mm.message
    assert "torch.matmul 480 TFLOP/s < floor 523 TFLOP/s" in mm.message
    assert mm.figures[0].pct_of_peak == pytest.approx(22.9, abs=0.05)
    # Only the >= 256 MiB message on 8 GPUs has the all-reduce floor.
    assert red.status is Status.WARN and "busbw_256M 250 GB/s < floor 300 GB/s" in red.message
    assert red.figures[1].floor is None and not red.figures[1].below_floor
    line = text.render(Report(machine={}, plan=None, results=(low,), versions={}, started_at="", finished_at="",
                              host_id="n", hostname="n", level=2))
    assert "[54.7% of MI300X peak, floor 3500 GB/s, floor 0.85x reference: BELOW]" in line
    # The JSON keeps the floor fields only where they apply.
    d = low.to_dict()["figures"][0]
    assert d["sku"] == "MI300X" and d["floor"] == 3500.0 and "reference_floor" not in d


def test_cpu_runs_and_unknown_gpus_are_left_alone() -> None:
    r = _result("triton.vector_add", Figure(name="vector_add.bandwidth", value=1.0, unit="GB/s"))
    assert apply_floors([r], load_skus().find("MI300X"), backend="cpu") == [r]
    assert apply_floors([r], None, backend="rocm") == [r]
    assert r.to_dict()["figures"][0] == {"name": "vector_add.bandwidth", "value": 1.0, "unit": "GB/s", "reference": None}


def test_prometheus_carries_the_floor_and_the_share_of_peak() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from rocmkit.doctor.reporters import prom

    (r,) = apply_floors(
        [_result("triton.vector_add", Figure(name="vector_add.bandwidth", value=2900.0, unit="GB/s", reference=4300.0))],
        load_skus().find("MI300X"), backend="rocm",
    )
    text = prom.render(Report(machine={}, plan=None, results=(r,), versions={}, started_at="2026-12-06T00:00:00Z",
                              finished_at="2026-12-06T00:00:01Z", host_id="n", hostname="n", level=2))
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    (floor,) = fams["rocmkit_figure_floor"].samples
    assert floor.value == 3500.0 and floor.labels["sku"] == "MI300X"
    (ratio,) = fams["rocmkit_figure_peak_ratio"].samples
    assert abs(ratio.value - 0.547) < 1e-9
