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
    """Write the refreshed data into ``target``; the files written (none: it already held it).

    In place (``--dir``, the folder the refresh read) only the changed files are written. An
    overlay is written whole: every data file of ``source_dir`` (the data the refresh was made
    against) with the refreshed ones, stamped with this rocmkit, in a new folder that then
    replaces the old overlay. So an overlay never mixes a refresh's ``torch.toml`` with a
    ``gfx.toml`` copied by an older refresh or rocmkit."""
    if target.exists() and target.resolve() == source_dir.resolve():
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
    return _replace_overlay(target, refresh, source_dir)


def _data_files(folder: Path) -> dict[str, str]:
    from rocmkit.util.paths import OVERLAY_STAMP

    if not folder.is_dir():
        return {}
    return {
        item.name: item.read_text(encoding="utf-8")
        for item in sorted(folder.iterdir())
        if item.is_file() and item.suffix in (".toml", ".md") and item.name != OVERLAY_STAMP
    }


def _replace_overlay(target: Path, refresh: Refresh, source_dir: Path) -> list[str]:
    import os

    from rocmkit import __version__
    from rocmkit.util.paths import OVERLAY_STAMP

    texts = {**_data_files(source_dir), **{n: refresh.texts[n] for n in GENERATED if n in refresh.texts}}
    before = _data_files(target)
    stamp = (target / OVERLAY_STAMP).read_text(encoding="utf-8").strip() if (target / OVERLAY_STAMP).is_file() else ""
    if before == texts and stamp == __version__:
        return []  # the overlay holds exactly this, written by this rocmkit: nothing to switch
    target.parent.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    try:
        for name, text in texts.items():
            write_text_atomic(new / name, text)
        write_text_atomic(new / OVERLAY_STAMP, __version__ + "\n")
        os.chmod(new, 0o755)
        old = None
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            os.rename(target, old / "matrices")
        os.rename(new, target)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    order = [*(n for n in GENERATED if n in texts), *(n for n in sorted(texts) if n not in GENERATED)]
    return [str(target / name) for name in order if before.get(name) != texts[name]] or [str(target / OVERLAY_STAMP)]


def main_diff(refresh: Refresh) -> None:  # pragma: no cover - thin printing helper
    sys.stdout.write(refresh.diff())
