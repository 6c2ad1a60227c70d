"""A command's ``--help`` options in named sections (as hatch's and uv's help reads), not one flat list.

Click has no option groups; this is the short custom formatter the issue asked for: a
``click.Command`` whose ``sections`` map a heading to the parameter names under it, in order.
An option no section names is listed under "Other options", so adding an option never hides it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

Sections = Mapping[str, Sequence[str]]

# `rocmkit install` and the verbs made from its options (lock, wheelhouse): what to install, where,
# from which sources, how safely, how long, and what it prints.
INSTALL_SECTIONS: Sections = {
    "Target": ("venv", "venv_base", "interpreter"),
    "What to install": (
        "plan_file", "from_lock", "wheelhouse", "capture", "torch", "backend", "channel",
        "framework", "strict_data", "with_packages", "build", "upgrade",
    ),
    "Sources": ("index_base", "installer", "fallback_index"),
    "Safety": ("dry_run", "skip", "allow"),
    "Limits": ("timeout",),
    "Output": ("quiet", "as_json"),
}


# `rocmkit doctor`: which checks, on what, how they run, and the reports.
DOCTOR_SECTIONS: Sections = {
    "Which checks": ("level", "only", "skip", "framework", "backend", "settings", "list_only"),
    "What is checked": ("capture", "venv", "python_path", "allow", "image_build"),
    "How they run": ("isolation", "jobs", "timeout_scale", "fresh", "warm_caches", "strict"),
    "Reports": ("as_json", "output_format", "output", "report", "verbose", "quiet"),
}

# `rocmkit bench models`: which models, how they are measured, where, and what is written.
BENCH_SECTIONS: Sections = {
    "Which models": ("suite_name", "models", "shard_text", "list_only", "size", "impl"),
    "How they are measured": (
        "mode", "dtype", "repeat", "warmup", "compile_mode", "cosine", "threads", "timeout_s", "isolation",
    ),
    "Where": ("device", "venv", "python_path"),
    "Results": ("results_path", "resume", "load_path", "as_json", "report"),
}

class SectionedCommand(click.Command):
    """``click.command(..., cls=SectionedCommand, sections={...})``."""

    def __init__(self, *args: Any, sections: Sections, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sections = sections

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows: dict[str, tuple[str, str]] = {}
        help_option = self.get_help_option(ctx)
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            # --help comes last, with the output options (it is one).
            if isinstance(param, click.Option) and record is not None and param is not help_option:
                rows[param.name or ""] = record
        headings = list(self.sections)
        last = headings[-1] if headings else None
        for heading, names in self.sections.items():
            records = [rows.pop(name) for name in names if name in rows]
            if heading == last and help_option is not None and (record := help_option.get_help_record(ctx)):
                records.append(record)
            if records:
                with formatter.section(heading):
                    formatter.write_dl(records)
        if rows:
            with formatter.section("Other options"):
                formatter.write_dl(list(rows.values()))
