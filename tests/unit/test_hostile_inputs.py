"""Every input example of issue 12's red-team pass, reproduced: each is a clear one-line
error with its own exit code (or a correct value), never a traceback, a hang or a
silently wrong answer. The fault examples (kill -9, floods, full disks) are in
tests/integration/test_install_faults.py, test_runner_faults.py and test_storage_faults.py."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from rocmkit.errors import DataError, LockHeldError
from rocmkit.plan import Plan
from tests.conftest import CAPTURES
from tests.support.cli import run_main

CAPTURE = CAPTURES / "mi250x-gfx90a-rocm6.2.1"
DEEP = "[" * 100_000


def rk(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code, out, err = run_main(capsys, *args)
    assert "Traceback" not in err
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:") or line.startswith("Error:")]
    assert len(lines) == 1, err
    return lines[0]


def plan_dict(**changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "schema": "rocmkit.plan/1",
        "backend": "rocm6.2",
        "torch_version": "2.5.1+rocm6.2",
        "requirements": ["torch==2.5.1+rocm6.2"],
        "index_urls": ["https://download.pytorch.org/whl/rocm6.2"],
        "env": {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
    }
    data.update(changes)
    return data


# -- plan env into bin/activate --------------------------------------------------------


@pytest.mark.parametrize("key", ["A=1; touch /tmp/x; B", "LD_PRELOAD", "PYTHONPATH", "PATH"])
def test_plan_env_keys_that_are_code_or_dangerous_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(plan_dict(env={key: "x"})))
    code, _, err = rk(capsys, "install", "--plan", str(plan), "--venv", str(tmp_path / "v"), "--dry-run")
    assert code == 5
    assert "env" in one_error_line(err)
    assert not (tmp_path / "v").exists()


def test_plan_env_values_are_quoted_in_activate(tmp_path: Path) -> None:
    from rocmkit.install import guard

    plan = Plan.from_dict(plan_dict(env={"HSA_OVERRIDE_GFX_VERSION": "$(touch /tmp/pwned)`id`"}))
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/activate").write_text("# activate\n")
    guard.write_guard(tmp_path, plan)
    text = (tmp_path / "bin/activate").read_text()
    assert "export HSA_OVERRIDE_GFX_VERSION='$(touch /tmp/pwned)`id`'" in text


def test_a_lock_whose_plan_line_was_edited_is_refused(tmp_path: Path) -> None:
    from rocmkit.install import lock
    from rocmkit.install.base import Locked, Sources

    plan = Plan.from_dict(plan_dict())
    entries = [Locked(name="torch", version="2.5.1+rocm6.2", hashes=("a" * 64,))]
    text = lock.render(entries, Sources(index_urls=plan.index_urls), plan)
    path = tmp_path / "torch.lock"
    path.write_text(text)
    assert lock.parse(path).plan == lock.parse(path).plan  # the untouched lock loads
    path.write_text(text.replace('"env": {', '"env": {"ROCR_VISIBLE_DEVICES": "0", '))
    with pytest.raises(DataError, match="changed after the lock was written"):
        lock.parse(path)


# -- capture files ----------------------------------------------------------------------


def capture_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "cap"
    shutil.copytree(CAPTURE, dest)
    return dest


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda f: os.mkfifo(f), "is a FIFO"),
        (lambda f: f.symlink_to("/dev/zero"), "leads out of"),
        (lambda f: f.symlink_to("/etc/passwd"), "leads out of"),
        (lambda f: f.write_bytes(b"x" * (16 * 1024 * 1024 + 1)), "over rocmkit's limit"),
    ],
    ids=["fifo", "dev-zero", "escape", "too-big"],
)
def test_capture_files_are_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, words: str
) -> None:
    cap = capture_copy(tmp_path)
    target = cap / "cmd/rocminfo.txt"
    target.unlink()
    make(target)  # type: ignore[operator]
    code, _, err = rk(capsys, "detect", "--capture", str(cap))
    assert code == 4
    assert words in one_error_line(err)


# -- parser crashes ---------------------------------------------------------------------


def test_deep_json_in_env_json_is_a_capture_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cap = capture_copy(tmp_path)
    (cap / "env.json").write_text(DEEP)
    code, _, err = rk(capsys, "detect", "--capture", str(cap))
    assert code == 4 and "nests deeper than" in one_error_line(err)


def test_deep_json_plan_bench_and_fleet_are_data_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    for args in (
        ("install", "--plan", str(deep), "--venv", str(tmp_path / "v"), "--dry-run"),
        ("bench", "models", "--load", str(deep)),
        ("fleet", "summarize", str(deep)),
    ):
        code, _, err = rk(capsys, *args)
        assert code == 5, args
        assert "nests deeper than" in one_error_line(err)


def test_non_finite_numbers_in_reports_are_data_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "r.json"
    report.write_text('{"schema": "rocmkit.report/1", "results": [], "x": NaN}')
    code, _, err = rk(capsys, "fleet", "summarize", str(report))
    assert code == 5 and "NaN" in one_error_line(err)


@pytest.mark.parametrize("size", ["Infinity", "NaN", "1e400", '"1e400 MB"', '{"value": -Infinity, "unit": "MB"}'])
def test_amd_smi_non_finite_sizes_are_missing_values(size: str) -> None:
    from rocmkit.parsers import amd_smi

    text = (
        '[{"gpu": 0, "asic": {"market_name": "MI250X", "target_graphics_version": "gfx90a"},'
        f' "vram": {{"size": {size}}}}}]'
    )
    result = amd_smi.parse_static_json(text)
    assert [g.memory_bytes for g in result.gpus] == [None]


def test_kfd_node_folders_that_are_not_ascii_numbers_are_skipped() -> None:
    from rocmkit.parsers import kfd

    assert kfd.node_numbers(["0", "²", "١", "1", "x"]) == [0, 1]


def test_a_non_utf8_lock_is_a_data_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.lock"
    bad.write_bytes(b"\xff\xfe torch==1\n")
    code, _, err = rk(capsys, "install", "--from-lock", str(bad), "--venv", str(tmp_path / "v"))
    assert code == 5 and "not UTF-8" in one_error_line(err)


# -- exit codes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [("doctor", "--level", "9"), ("detect", "--bogus"), ("nosuchcommand",), ("install", "--installer", "x")],
)
def test_click_usage_errors_exit_4(capsys: pytest.CaptureFixture[str], args: tuple[str, ...]) -> None:
    code, _, err = rk(capsys, *args)
    assert code == 4, err


def test_lock_held_and_interrupted_have_their_own_codes() -> None:
    from rocmkit.errors import InterruptedStateError

    assert LockHeldError.exit_code == 11
    assert InterruptedStateError.exit_code == 10


# -- credentials --------------------------------------------------------------------------


def test_snapshot_env_never_carries_credentials() -> None:
    from rocmkit.sources import relevant_env

    env = relevant_env(
        {
            "ROCMKIT_INDEX_BASE": "https://user:token@mirror.example/whl?token=abc",
            "ROCMKIT_API_TOKEN": "s3cret",
            "HOME": "/root",
        }
    )
    text = json.dumps(env)
    assert "token@" not in text and "s3cret" not in text and "abc" not in text
    assert env["ROCMKIT_INDEX_BASE"] == "https://user:***@mirror.example/whl?token=***"
    assert "HOME" not in env


def test_install_outcome_json_does_not_carry_index_credentials() -> None:
    from rocmkit.install.base import Sources
    from rocmkit.install.flow import Outcome

    outcome = Outcome(
        action="dry-run",
        target="/v",
        installer="pip",
        plan=Plan.from_dict(plan_dict(index_urls=["https://u:tok@mirror.example/whl/rocm6.2"])),
        sources=Sources(index_urls=("https://u:tok@mirror.example/whl/rocm6.2",)),
    )
    assert "tok@" not in json.dumps(outcome.to_dict())


def test_credentials_are_masked_where_they_come_in_and_given_back_only_on_request() -> None:
    from rocmkit.util.redact import conceal, forget_credentials, origin_credentials, redact_text, reveal

    forget_credentials()
    try:
        masked = conceal("https://alice:p%40ss@mirror.example:8443/whl/rocm6.2/")
        assert masked == "https://alice:***@mirror.example:8443/whl/rocm6.2/"
        assert conceal(masked) == masked  # idempotent: a masked URL stays masked
        assert reveal(masked) == "https://alice:p%40ss@mirror.example:8443/whl/rocm6.2/"
        assert reveal("https://alice:***@mirror.example:8443/whl/cpu/") == "https://alice:p%40ss@mirror.example:8443/whl/cpu/"
        assert origin_credentials("https", "mirror.example:8443") == "alice:p%40ss"
        # A token-only userinfo is all secret; another host or user gets nothing kept.
        assert conceal("https://ghp_abc@git.example/simple") == "https://***@git.example/simple"
        assert reveal("https://bob:***@mirror.example:8443/whl/") == "https://bob@mirror.example:8443/whl/"
        assert redact_text("see https://carol:s3cret@h.example/x and https://t0ken@h.example") == (
            "see https://carol:***@h.example/x and https://***@h.example"
        )
    finally:
        forget_credentials()
    # Forgotten: the mask is dropped, so pip, uv and rocmkit fall back to ~/.netrc.
    assert reveal("https://alice:***@mirror.example:8443/whl/") == "https://alice@mirror.example:8443/whl/"
    assert reveal("https://***@git.example/simple") == "https://git.example/simple"


def test_a_crash_traceback_is_printed_with_credentials_masked(capsys: pytest.CaptureFixture[str]) -> None:
    from rocmkit.cli.group import _redacted_traceback

    try:
        raise RuntimeError("a bug while reading https://u:tok3n@mirror.example/whl/cpu/torch/")
    except RuntimeError as exc:
        _redacted_traceback(type(exc), exc, exc.__traceback__)
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: a bug while reading https://u:***@mirror.example" in err
    assert "tok3n" not in err


def test_a_lock_never_holds_a_source_token(tmp_path: Path) -> None:
    from rocmkit.install.base import Locked, Sources
    from rocmkit.install.lock import render

    text = render(
        [Locked(name="torch", version="2.5.1", hashes=("a" * 64,))],
        Sources(index_urls=("https://u:tok3n@pip.example/simple",), find_links=("https://v:tok3n@links.example/",)),
        None,
    )
    assert "tok3n" not in text and "--index-url https://u:***@pip.example/simple" in text


@pytest.mark.parametrize("value", ["NaN", "1e400", "[" * 10_000])
def test_doctor_set_values_are_bounded(value: str) -> None:
    from rocmkit.doctor.request import parse_settings
    from rocmkit.errors import UsageError

    with pytest.raises(UsageError):
        parse_settings((f"repeats={value}",))
    assert parse_settings(("repeats=5", "name=plain text")) == {"repeats": 5, "name": "plain text"}


@pytest.mark.parametrize(
    "args",
    [("--python", "3." + "9" * 5000), ("--python", "3.١١"), ("--torch", "9" * 5000 + ".1"), ("--cuda", "١٢.٤")],
)
def test_resolve_versions_are_ascii_and_short(capsys: pytest.CaptureFixture[str], args: tuple[str, ...]) -> None:
    code, _, err = rk(capsys, "resolve", "--cpu", *args)
    assert code == 4, err


def test_a_matrix_version_past_int_limits_is_a_data_error(tmp_path: Path) -> None:
    from rocmkit.matrix.load import parse_matrix
    from tests.conftest import REPO

    for name in ("gfx.toml", "nvidia.toml", "torch.toml", "rocm.toml", "channels.toml"):
        (tmp_path / name).symlink_to(REPO / "matrices" / name)
    text = (REPO / "matrices/torch.toml").read_text()
    (tmp_path / "torch.toml").unlink()
    (tmp_path / "torch.toml").write_text(
        text.replace('triton = "pytorch-triton-rocm==3.3.1"', 'triton = "pytorch-triton-rocm==' + "9" * 5000 + '.1"', 1)
    )
    with pytest.raises(DataError, match="not a valid version"):
        parse_matrix(tmp_path)


def test_an_unusable_output_path_is_one_line_exit_4(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = rk(capsys, "docker", "render", "--out", "/proc/rocmkit-no-such/x")
    assert code == 4 and "cannot use /proc/rocmkit-no-such" in one_error_line(err)


def test_visible_devices_with_absurd_indices_hide_everything() -> None:
    from rocmkit.detect.visibility import _select
    from rocmkit.machine import Gpu

    gpus = [Gpu(vendor="amd", index=0, arch="gfx90a"), Gpu(vendor="amd", index=1, arch="gfx90a")]
    assert _select(gpus, "9" * 5000) == []
    assert _select(gpus, "1,²") == [gpus[1]]
