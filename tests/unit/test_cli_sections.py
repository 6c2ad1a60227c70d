"""`--help` in sections (cli/sections.py) and the verbs made from install's options (cli/verbs.py)."""

from __future__ import annotations

import re

from click.testing import CliRunner

from rocmkit.cli import cli


def _help(*args: str) -> str:
    result = CliRunner().invoke(cli, [*args, "--help"], prog_name="rocmkit")
    assert result.exit_code == 0, result.output
    return result.output


def test_install_help_is_in_sections_with_nothing_left_over() -> None:
    text = _help("install")
    headings = [line[:-1] for line in text.splitlines() if line and not line[0].isspace() and line.endswith(":")]
    assert headings == ["Target", "What to install", "Sources", "Safety", "Limits", "Output"]
    # The old mode flags still parse (aliases for one release) but --help names the verbs instead.
    for old in ("--lock", "--download-only", "--project"):
        assert not re.search(rf"\s{old}\b", text), old
    assert "`rocmkit lock`, `rocmkit wheelhouse`, `rocmkit export`" in text


def test_lock_and_wheelhouse_take_installs_options_less_its_modes() -> None:
    from rocmkit.cli.install import cli as install
    from rocmkit.cli.verbs import lock, wheelhouse

    modes = {"dry_run", "project", "lock_file", "from_lock", "download_only", "wheelhouse", "no_guard",
        "no_verify", "no_compile", "break_system_packages", "allow_env", "skip", "allow"}
    kept = [p.name for p in install.params if p.name not in modes]
    # --skip and --allow narrowed to the words that apply before an install.
    assert [p.name for p in lock.params] == ["lock_file", "skip", "allow", *kept]
    assert [p.name for p in wheelhouse.params] == ["folder", "skip", "allow", *kept]
    assert "Usage: rocmkit lock [OPTIONS] FILE" in _help("lock")


def test_export_names_its_three_formats() -> None:
    text = _help("export")
    assert all(f"  {fmt} " in text for fmt in ("pylock", "requirements", "uv-project"))
    assert "--project DIR" in _help("export", "uv-project") and "--project" not in _help("export", "pylock")


def _headings(text: str) -> list[str]:
    return [line[:-1] for line in text.splitlines() if line and not line[0].isspace() and line.endswith(":")]


def test_doctor_and_bench_models_help_are_in_sections() -> None:
    assert _headings(_help("bench", "models")) == ["Which models", "How they are measured", "Where", "Results"]
    # An option added without a section still shows, under "Other options".
    assert _headings(_help("doctor"))[:4] == ["Which checks", "What is checked", "How they run", "Reports"]
