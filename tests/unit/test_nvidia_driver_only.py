"""An NVIDIA machine with the kernel driver loaded but no nvidia-smi (issue 11): CUDA, not CPU."""

from __future__ import annotations

import pytest

from rocmkit.detect import load_machine
from rocmkit.machine import Machine, NvidiaInfo
from rocmkit.parsers.nvidia_smi import parse_driver_version
from rocmkit.resolve import Constraints, resolve
from tests.conftest import CAPTURES

CAPTURE = CAPTURES / "synthetic-nvidia-driver-only-580"


@pytest.mark.parametrize(
    ("text", "version"),
    [
        # The open kernel module (R560 on): "Open Kernel Module for x86_64".
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  "
            "(dvs-builder@U16-I3-B03-4-3)  Sun Jul 27 06:54:38 UTC 2025\nGCC version:  gcc version 13.3.0\n",
            "580.65.06",
        ),
        # The proprietary module.
        (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n",
            "550.54.15",
        ),
        ("550.54.15\n", "550.54.15"),  # /sys/module/nvidia/version
        ("", None),
        ("NVRM version: garbage\n", None),
    ],
)
def test_driver_version_files(text: str, version: str | None) -> None:
    assert parse_driver_version(text) == version


def test_capture_has_the_driver_and_no_gpu() -> None:
    machine = load_machine(CAPTURE)
    assert machine.gpus == ()
    assert machine.nvidia is not None and machine.nvidia.driver_version == "580.65.06"


def test_driver_only_capture_gets_a_cuda_plan_for_that_driver() -> None:
    plan = resolve(load_machine(CAPTURE), Constraints(python="3.11"))
    assert (plan.backend.cuda or "").startswith("13.")  # driver 580: CUDA 13.x under minor-version compatibility
    assert any("driver 580.65.06 is loaded but no tool listed its GPUs" in r for r in plan.reasons)
    assert any("compute capability is not checked" in w for w in plan.warnings)


def test_driver_only_550_gets_cuda_12() -> None:
    plan = resolve(Machine(nvidia=NvidiaInfo(driver_version="550.54.15")), Constraints(python="3.11"))
    assert (plan.backend.cuda or "").startswith("12.")


def test_no_driver_stays_cpu() -> None:
    assert resolve(Machine(), Constraints(python="3.11")).backend.tag == "cpu"
    # --cpu still wins over a loaded driver.
    plan = resolve(
        Machine(nvidia=NvidiaInfo(driver_version="550.54.15")), Constraints(python="3.11", cpu=True)
    )
    assert plan.backend.tag == "cpu"
