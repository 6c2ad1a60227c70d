"""The suites of PyTorch's benchmark dashboard, as data: ``matrices/bench/*.toml``.

``huggingface.toml`` is PyTorch's ``huggingface_models_list.txt`` (names, batch
sizes) with the sequence lengths of its ``huggingface.py`` and, where PyTorch
reads a config from the hub, the published values; ``timm.toml`` is
``timm_models_list.txt``. Both are checked on load; a malformed file is a
:class:`~rocmkit.errors.DataError` naming the entry.

This module does not import torch, transformers or timm: the build functions
(:mod:`rocmkit.bench.hf`, :mod:`rocmkit.bench.timm_suite`) do, in the child.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from rocmkit.errors import DataError
from rocmkit.util.paths import shipped_matrices_dir

SuiteName = Literal["builtin", "huggingface", "timm"]
SUITES: tuple[SuiteName, ...] = ("builtin", "huggingface", "timm")


@dataclass(frozen=True, kw_only=True)
class HfEntry:
    name: str  # the list's name ("BertForMaskedLM", "meta-llama/Llama-3.2-1B")
    cls: str  # the transformers model class
    config: str | None  # the config class, where not the model class's own
    batch: int  # the list's batch size (full)
    seq: int  # PyTorch's sequence length for it (full)
    hub: Mapping[str, Any] = field(default_factory=dict)  # published config values
    tiny: Mapping[str, Any] = field(default_factory=dict)  # tiny overrides for this architecture
    pad_token_id: int | None = None
    sources: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True, kw_only=True)
class TimmEntry:
    name: str
    batch: int
    tiny_image: int | None = None
    tiny_kwargs: Mapping[str, Any] = field(default_factory=dict)
    sources: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class SuiteData:
    sources: Mapping[str, str]
    tiny: Mapping[str, int]
    hf: tuple[HfEntry, ...] = ()
    timm: tuple[TimmEntry, ...] = ()


def data_dir() -> Path:
    return shipped_matrices_dir() / "bench"


def _read(path: Path) -> dict[str, Any]:
    from rocmkit.matrix.fields import read_toml

    return read_toml(path)


def _sources(doc: dict[str, Any], path: Path, entry: dict[str, Any]) -> tuple[str, ...]:
    known = doc.get("sources") or {}
    srcs = entry.get("sources")
    if not isinstance(srcs, list) or not srcs:
        raise DataError(f"{path.name}: {entry.get('name')!r} names no sources", "add sources = [...]")
    for s in srcs:
        if s not in known:
            raise DataError(f"{path.name}: {entry.get('name')!r} cites unknown source {s!r}")
    return tuple(srcs)


def _int(path: Path, entry: dict[str, Any], key: str) -> int:
    value = entry.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise DataError(f"{path.name}: {entry.get('name')!r} has {key} = {value!r}, not a positive integer")
    return value


def _tiny(path: Path, doc: dict[str, Any]) -> dict[str, int]:
    tiny = doc.get("tiny")
    if not isinstance(tiny, dict) or not all(isinstance(v, int) and v > 0 for v in tiny.values()):
        raise DataError(f"{path.name}: [tiny] must map names to positive integers")
    return dict(tiny)


def _models(doc: Mapping[str, Any], path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each ``[[model]]`` table with its name, which must be present and not repeated."""
    seen: set[str] = set()
    for raw in doc.get("model") or []:
        name = raw.get("name") if isinstance(raw, dict) else None
        if not isinstance(name, str) or not name or name in seen:
            raise DataError(f"{path.name}: model name {name!r} is missing or repeated")
        seen.add(name)
        yield name, raw


@lru_cache(maxsize=4)
def load_hf(path: Path | None = None) -> SuiteData:
    path = path or data_dir() / "huggingface.toml"
    doc = _read(path)
    entries: list[HfEntry] = []
    for name, raw in _models(doc, path):
        cls = raw.get("class")
        if not isinstance(cls, str) or not cls.isidentifier():
            raise DataError(f"{path.name}: {name!r} has class {cls!r}, not a class name")
        config = raw.get("config")
        if config is not None and not (isinstance(config, str) and config.isidentifier()):
            raise DataError(f"{path.name}: {name!r} has config {config!r}, not a class name")
        if raw.get("hub") and config is None:
            raise DataError(f"{path.name}: {name!r} has hub values but no config class")
        entries.append(
            HfEntry(
                name=name,
                cls=cls,
                config=config,
                batch=_int(path, raw, "batch"),
                seq=_int(path, raw, "seq"),
                hub=dict(raw.get("hub") or {}),
                tiny=dict(raw.get("tiny") or {}),
                pad_token_id=raw.get("pad_token_id"),
                sources=_sources(doc, path, raw),
                note=str(raw.get("note", "")),
            )
        )
    if not entries:
        raise DataError(f"{path.name}: no [[model]] entries")
    return SuiteData(sources=dict(doc.get("sources") or {}), tiny=_tiny(path, doc), hf=tuple(entries))


@lru_cache(maxsize=4)
def load_timm(path: Path | None = None) -> SuiteData:
    path = path or data_dir() / "timm.toml"
    doc = _read(path)
    entries: list[TimmEntry] = []
    for name, raw in _models(doc, path):
        tiny = raw.get("tiny") or {}
        image = tiny.get("image")
        if image is not None and (not isinstance(image, int) or image < 8):
            raise DataError(f"{path.name}: {name!r} has tiny image {image!r}")
        entries.append(
            TimmEntry(
                name=name,
                batch=_int(path, raw, "batch"),
                tiny_image=image,
                tiny_kwargs=dict(tiny.get("kwargs") or {}),
                sources=_sources(doc, path, raw),
            )
        )
    if not entries:
        raise DataError(f"{path.name}: no [[model]] entries")
    return SuiteData(sources=dict(doc.get("sources") or {}), tiny=_tiny(path, doc), timm=tuple(entries))
