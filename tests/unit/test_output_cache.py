"""The output cache of detect and resolve: what its key covers, and what it stores and replays."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from rocmkit.cache import detect_cache, output_cache
from rocmkit.sources import BUILTIN, COMMANDS
from rocmkit.util import paths
from tests.conftest import REPO

ENV = {"PATH": "/usr/bin:/bin", "HOME": "/root"}


def _key(argv: list[str], env: dict[str, str] | None = None) -> str | None:
    return output_cache.output_key(argv, ENV if env is None else env)


def test_the_key_is_none_where_nothing_is_cached() -> None:
    if _key(["detect", "--json"]) is None:
        pytest.skip("no boot id here (/proc hidden): nothing is cached at all")
    assert _key(["doctor", "--level", "0"]) is None
    assert _key(["detect", "--json", "--capture", "/x"]) is None
    assert _key(["resolve", "--capture=/x", "--offline"]) is None
    assert _key(["resolve", "--help"]) is None and _key(["detect", "-h"]) is None
    assert _key([]) is None


def test_the_key_follows_the_command_line_and_the_environment_detection_reads() -> None:
    base = _key(["resolve", "--json", "--offline"])
    if base is None:
        pytest.skip("no boot id here (/proc hidden): nothing is cached at all")
    # --fresh reads nothing but stores under the key of the same command without it.
    assert _key(["resolve", "--json", "--offline", "--fresh"]) == base
    assert _key(["resolve", "--json", "--offline"]) == base
    assert _key(["resolve", "--json", "--offline", "--torch", "2.5"]) != base
    assert _key(["detect", "--json"]) != base
    assert _key(["resolve", "--json", "--offline"], {**ENV, "HIP_VISIBLE_DEVICES": "1"}) != base
    assert _key(["resolve", "--json", "--offline"], {**ENV, "ROCMKIT_INDEX_BASE": "http://m/whl"}) != base
    assert _key(["resolve", "--json", "--offline"], {**ENV, "PATH": "/opt/x/bin:/usr/bin"}) != base
    # A variable neither detection nor resolve reads is not part of it.
    assert _key(["resolve", "--json", "--offline"], {**ENV, "OLDPWD": "/tmp"}) == base


def test_the_key_follows_the_matrix_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "matrices"
    shutil.copytree(REPO / "matrices", data)
    monkeypatch.setattr(paths, "matrices_dir", lambda: data)
    before = _key(["resolve", "--json", "--offline"])
    if before is None:
        pytest.skip("no boot id here (/proc hidden): nothing is cached at all")
    torch_toml = data / "torch.toml"
    torch_toml.write_text(torch_toml.read_text() + "\n# edited\n")
    assert _key(["resolve", "--json", "--offline"]) != before


def test_the_key_follows_the_tools_detection_runs(tmp_path: Path) -> None:
    env = {**ENV, "PATH": f"{tmp_path}:/usr/bin:/bin"}
    before = detect_cache.state_key(env)
    if before is None:
        pytest.skip("no boot id here (/proc hidden): nothing is cached at all")
    tool = tmp_path / "rocminfo"
    tool.write_text("#!/bin/sh\necho one\n")
    tool.chmod(0o755)
    with_tool = detect_cache.state_key(env)
    assert with_tool != before
    tool.write_text("#!/bin/sh\necho a longer answer\n")
    assert detect_cache.state_key(env) != with_tool


def test_the_entry_point_asks_the_cache_about_the_commands_it_stores() -> None:
    from rocmkit.cli import CACHED_COMMANDS

    assert CACHED_COMMANDS == output_cache.COMMANDS


def test_the_tools_in_the_key_are_every_command_detection_runs() -> None:
    assert set(detect_cache.TOOLS) == {argv[0] for argv in COMMANDS.values() if argv[0] != BUILTIN}
    from rocmkit.sources import LIB_DIRS

    assert detect_cache.LIB_DIRS == LIB_DIRS


@pytest.fixture(autouse=True)
def _no_command_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    # What a command said through cacheable() is process state: none leaks between tests.
    monkeypatch.setattr(output_cache, "_detected_at", None)


def _recording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, now: float = 1000.0) -> output_cache.Recording:
    monkeypatch.setenv("ROCMKIT_CACHE_DIR", str(tmp_path))
    return output_cache.Recording(["detect", "--json"], "k" * 32, now=lambda: now)


def test_a_recording_replays_what_was_written_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _recording(tmp_path, monkeypatch)
    rec.chunks += [(False, '{\n  "a": "\\u00e9 \u00e9"\n}\n'), (True, "warning: x\n"), (False, "tail")]
    output_cache.cacheable(900.0)
    rec.commit()
    again = output_cache.Recording(["detect", "--json"], "k" * 32, now=lambda: 1000.0)
    out, err = io.StringIO(), io.StringIO()
    assert again.replay(out, err)
    assert out.getvalue() == '{\n  "a": "\\u00e9 \u00e9"\n}\ntail'
    assert err.getvalue() == "warning: x\n"
    stored = json.loads((tmp_path / "output" / f"{'k' * 32}.json").read_text())
    assert stored["detected_at"] == 900.0 and stored["argv"] == ["detect", "--json"]


def test_nothing_is_stored_unless_the_command_said_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCMKIT_CACHE_DIR", str(tmp_path))
    rec = output_cache.start(["detect", "--json"], ENV)
    if rec is None:
        pytest.skip("no boot id here (/proc hidden): nothing is cached at all")
    rec.chunks.append((False, "{}\n"))
    rec.commit()  # start() forgot any earlier cacheable(): a run that never said so
    assert not (tmp_path / "output").exists()
    # Colour codes: click strips them when not on a terminal, a replay would not.
    output_cache.cacheable(1.0)
    rec.chunks.append((True, "\x1b[31mred\x1b[0m\n"))
    rec.commit()
    assert not (tmp_path / "output").exists()


def test_an_entry_expires_with_the_detection_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _recording(tmp_path, monkeypatch)
    rec.chunks.append((False, "{}\n"))
    output_cache.cacheable(1000.0)
    rec.commit()
    young = output_cache.Recording(["detect", "--json"], "k" * 32, now=lambda: 1000.0 + 60)
    old = output_cache.Recording(
        ["detect", "--json"], "k" * 32, now=lambda: 1000.0 + detect_cache.MAX_AGE_S + 1
    )
    assert young.replay(io.StringIO(), io.StringIO())
    assert not old.replay(io.StringIO(), io.StringIO())
    fresh = output_cache.Recording(["detect", "--json", "--fresh"], "k" * 32, now=lambda: 1000.0)
    assert not fresh.replay(io.StringIO(), io.StringIO())


def test_a_broken_entry_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = _recording(tmp_path, monkeypatch)
    rec.path.parent.mkdir(parents=True)
    damaged = ("", "{", '{"schema": "rocmkit.output-cache/1"}', '{"schema": "other", "chunks": []}', "[" * 100_000)
    for text in damaged:
        rec.path.write_text(text)
        out = io.StringIO()
        assert not rec.replay(out, io.StringIO())
        assert out.getvalue() == ""


def test_a_token_on_the_command_line_never_reaches_the_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROCMKIT_CACHE_DIR", str(tmp_path))
    argv = ["resolve", "--offline", "--index-base", "https://alice:s3cr3tTOKEN@mirror.example/whl"]
    rec = output_cache.Recording(argv, "t" * 32, now=lambda: 1000.0)
    rec.chunks.append((False, "Plan: ...\n"))
    output_cache.cacheable(900.0)
    rec.commit()
    text = (tmp_path / "output" / f"{'t' * 32}.json").read_text()
    assert "s3cr3tTOKEN" not in text
    assert json.loads(text)["argv"][-1] == "https://alice:***@mirror.example/whl"
