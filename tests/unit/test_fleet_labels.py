"""Kubernetes node labels from a report: valid label values, whatever the report holds."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmkit.cli import cli
from rocmkit.doctor.result import CheckResult, Report, Status
from rocmkit.errors import UsageError
from rocmkit.fleet.labels import label_value, node_labels
from rocmkit.machine import Gpu, Machine, RocmInfo

VALUE = re.compile(r"^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$")


def _report(status: Status, gpus: tuple[Gpu, ...], torch: str | None) -> Report:
    return Report(
        machine=Machine(gpus=gpus, rocm=RocmInfo(version="6.2.4")).to_dict(),
        plan=None,
        results=(CheckResult(name="env.x", level=0, status=status, message="m"),),
        versions={"torch": torch},
        started_at="2026-12-01T00:00:00Z",
        finished_at="2026-12-01T00:01:00Z",
        host_id="n1-abc",
        hostname="n1",
        level=2,
    )


def test_labels_of_a_passing_mi300x_node() -> None:
    gpus = tuple(Gpu(vendor="amd", index=i, arch="gfx942") for i in range(8))
    labels = node_labels(_report(Status.PASS, gpus, "2.5.1+rocm6.2"))
    assert labels == {
        "rocmkit.io/doctor": "pass",
        "rocmkit.io/doctor-level": "2",
        "rocmkit.io/gfx": "gfx942",
        "rocmkit.io/gpus": "8",
        "rocmkit.io/rocm": "6.2.4",
        "rocmkit.io/torch": "2.5.1-rocm6.2",  # '+' is not allowed in a label value
    }


def test_mixed_archs_hidden_gpus_and_no_torch() -> None:
    gpus = (
        Gpu(vendor="amd", index=0, arch="gfx1100"),
        Gpu(vendor="amd", index=1, arch="gfx1036", visible=False),
        Gpu(vendor="amd", index=2, arch="gfx1030"),
    )
    labels = node_labels(_report(Status.FAIL, gpus, None), prefix="example.com")
    assert labels["example.com/gfx"] == "gfx1030_gfx1100"
    assert labels["example.com/gpus"] == "2" and labels["example.com/doctor"] == "fail"
    assert "example.com/torch" not in labels


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2.5.1+rocm6.2", "2.5.1-rocm6.2"),
        ("+weird+", "weird"),
        ("...", None),
        ("a" * 80, "a" * 63),
        ("é", None),
    ],
)
def test_label_value(text: str, value: str | None) -> None:
    assert label_value(text) == value
    if value:
        assert VALUE.match(value)


@pytest.mark.parametrize("prefix", ["bad prefix!", "Example.com", "-a.io", "a..io", ""])
def test_labels_cli_refuses_a_prefix_kubectl_would_refuse(tmp_path: Path, prefix: str) -> None:
    path = tmp_path / "n1.json"
    path.write_text(json.dumps(_report(Status.PASS, (), None).to_dict()))
    bad = CliRunner().invoke(cli, ["fleet", "labels", str(path), "--prefix", prefix])
    assert isinstance(bad.exception, UsageError)
    # An empty value is refused by the CLI's one rule for empty options, before the prefix rule.
    assert ("is empty" if prefix == "" else "DNS subdomain") in bad.exception.message
    good = CliRunner().invoke(cli, ["fleet", "labels", str(path), "--prefix", "gpu.example.com"])
    assert good.exit_code == 0 and "gpu.example.com/doctor=pass" in good.output
