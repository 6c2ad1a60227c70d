"""``matrix refresh --write``: generate, validate, show the diff, write atomically.

Nothing is written unless every generated file loads as a valid matrix
(checked in a temporary folder first), and each file is replaced in one
rename, so a reader never sees half a file and a failed refresh leaves the
data as it was.
"""

from __future__ import annotations

import difflib
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rocmkit.matrix.fields import read_toml
from rocmkit.matrix.generate import Inputs, Outcome, generate
from rocmkit.matrix.load import parse_matrix
from rocmkit.matrix.render import header_of, render
from rocmkit.util.atomicio import write_text_atomic

GENERATED = ("torch.toml", "channels.toml", "jax.toml")
TOP_ORDER = {
    "torch.toml": ("sources", "rocm_index", "release"),
    "channels.toml": ("sources", "pytorch", "channel", "family_index"),
    "jax.toml": ("sources", "plugin", "plugin_archs", "route", "fix", "torch_xla_gpu", "release", "torch_xla"),
}


@dataclass(frozen=True, kw_only=True)
class Refresh:
    texts: dict[str, str]  # file name -> new text
    old: dict[str, str]
    outcome: Outcome
    summary: tuple[str, ...] = ()  # what changed, in words (rocmkit.matrix.changes)

    @property
    def changed(self) -> list[str]:
        return [n for n in GENERATED if n in self.texts and self.texts[n] != self.old.get(n)]

    def diff(self) -> str:
        out: list[str] = []
        for name in self.changed:
            out += difflib.unified_diff(
                self.old.get(name, "").splitlines(keepends=True),
                self.texts[name].splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        return "".join(out)


def plan_refresh(directory: Path, inputs: Inputs) -> Refresh:
    old = {n: (directory / n).read_text(encoding="utf-8") for n in GENERATED if (directory / n).exists()}
    outcome = generate(read_toml(directory / "torch.toml"), read_toml(directory / "channels.toml"), inputs)
    texts = {
        "torch.toml": render(
            outcome.torch_doc, header=header_of(old["torch.toml"]), top_order=TOP_ORDER["torch.toml"]
        ),
        "channels.toml": render(
            outcome.channels_doc, header=header_of(old["channels.toml"]), top_order=TOP_ORDER["channels.toml"]
        ),
    }
    if "jax.toml" in old and inputs.jax_pages:
        from rocmkit.matrix.jaxgen import generate_jax

        jax = generate_jax(
            read_toml(directory / "jax.toml"),
            inputs.jax_pages,
            index_url=inputs.index_url,
            read_on=inputs.jax_read_on or inputs.read_on,
        )
        outcome.notes += jax.notes
        texts["jax.toml"] = render(jax.doc, header=header_of(old["jax.toml"]), top_order=TOP_ORDER["jax.toml"])
    _validate(directory, texts)
    from rocmkit.matrix.changes import describe

    summary = describe(
        read_toml(directory / "torch.toml"),
        outcome.torch_doc,
        read_toml(directory / "channels.toml"),
        outcome.channels_doc,
    )
    return Refresh(texts=texts, old=old, outcome=outcome, summary=tuple(summary))


def _validate(directory: Path, texts: dict[str, str]) -> None:
    """Load the would-be data in a scratch copy; a DataError here means nothing is written."""
    with tempfile.TemporaryDirectory(prefix="rocmkit-refresh-") as tmp:
        scratch = Path(tmp)
        for item in directory.iterdir():
            if item.is_file() and item.suffix in (".toml", ".md"):
                shutil.copy2(item, scratch / item.name)
        for name, text in texts.items():
            (scratch / name).write_text(text, encoding="utf-8")
        parse_matrix(scratch)
        if (scratch / "jax.toml").exists():
            from rocmkit.matrix.jaxdata import parse_jax

            parse_jax(scratch)


def write_refresh(target: Path, refresh: Refresh, *, source_dir: Path) -> list[str]:
    """Write the changed files into ``target`` (an overlay folder gets a full copy first)."""
    target.mkdir(parents=True, exist_ok=True)
    if target.resolve() != source_dir.resolve():
        for item in source_dir.iterdir():
            if item.is_file() and item.suffix in (".toml", ".md") and not (target / item.name).exists():
                write_text_atomic(target / item.name, item.read_text(encoding="utf-8"))
    written = []
    for name in GENERATED:
        if name not in refresh.texts:
            continue
        dest = target / name
        current = dest.read_text(encoding="utf-8") if dest.exists() else None
        if current != refresh.texts[name]:
            write_text_atomic(dest, refresh.texts[name])
            written.append(str(dest))
    return written


def main_diff(refresh: Refresh) -> None:  # pragma: no cover - thin printing helper
    sys.stdout.write(refresh.diff())
