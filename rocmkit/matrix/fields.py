"""The dialect of every data file in ``matrices/``, and its strict readers.

Every file is TOML with ``schema = 1``, a ``[sources]`` table (key -> URL or
repository path), and rows that name their sources by key and may say
``confirmed = false`` or ``unconfirmed = [fields]``. :func:`read_toml` is the one
reader of such a file; every value then goes through :class:`Row`, so a typo in
a key, a bad version or a source that is not declared fails on load with an
error naming the file and the entry, never later inside the resolver.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from packaging.version import Version

from rocmkit.errors import DataError

SCHEMA = 1
FIX = "correct the entry, then run `rocmkit matrix check`"

# Keys every row may carry in addition to its own.
COMMON_KEYS = ("sources", "confirmed", "unconfirmed", "note")

# ASCII digits, each part short: int() reads other scripts' digits and refuses past 4300 of them.
_RELEASE = re.compile(r"^[0-9]{1,12}(\.[0-9]{1,12}){1,3}$")


def did_you_mean(word: str, choices: Collection[str]) -> str:
    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_keys(data: Mapping[str, Any], allowed: Collection[str], *, file: str, where: str) -> None:
    for key in data:
        if key not in allowed:
            raise DataError(
                f"{file}: {where}: unknown key {key!r}{did_you_mean(key, allowed)}",
                f"allowed keys are {', '.join(sorted(allowed))}",
            )


def parse_release(text: str, *, file: str, where: str, key: str) -> tuple[int, ...]:
    """A dotted release number ("6.2", "6.2.4", "570.26") as a tuple of ints."""
    if not isinstance(text, str) or not _RELEASE.match(text):
        raise DataError(f"{file}: {where}: {key} = {text!r} is not a version like '6.2' or '6.2.4'", FIX)
    return tuple(int(p) for p in text.split("."))


class Row:
    """One table of a matrix file, read with type checks and error context."""

    def __init__(
        self,
        data: Any,
        *,
        file: str,
        where: str,
        keys: Collection[str],
        sources: Mapping[str, str],
        name_key: str | None = None,
    ) -> None:
        if not isinstance(data, dict):
            raise DataError(f"{file}: {where}: expected a table, got {type(data).__name__}", FIX)
        # Name the entry by its own key ("release '2.5.1'") rather than its position when it has one.
        if name_key and isinstance(data.get(name_key), str):
            where = f"{where.split(' #', maxsplit=1)[0]} {data[name_key]!r}"
        self.data: dict[str, Any] = data
        self.file = file
        self.where = where
        self.allowed = (*keys, *COMMON_KEYS)
        self._sources = sources
        check_keys(data, self.allowed, file=file, where=where)

    def error(self, message: str) -> DataError:
        return DataError(f"{self.file}: {self.where}: {message}", FIX)

    def has(self, key: str) -> bool:
        return key in self.data

    def string(self, key: str) -> str:
        value = self.data.get(key)
        if value is None:
            raise self.error(f"missing required key {key!r}")
        if not isinstance(value, str) or not value.strip():
            raise self.error(f"{key} must be a non-empty string, got {value!r}")
        return value

    def opt_string(self, key: str) -> str | None:
        return self.string(key) if key in self.data else None

    def opt_bool(self, key: str) -> bool | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, bool):
            raise self.error(f"{key} must be true or false, got {value!r}")
        return value

    def strings(self, key: str, *, required: bool = False) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.error(f"missing required key {key!r}")
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.error(f"{key} must be a list of strings, got {value!r}")
        if len(set(value)) != len(value):
            dup = next(v for v in value if value.count(v) > 1)
            raise self.error(f"{key} lists {dup!r} twice")
        return tuple(value)

    def release(self, key: str) -> str:
        text = self.string(key)
        parse_release(text, file=self.file, where=self.where, key=key)
        return text

    def opt_release(self, key: str) -> str | None:
        return self.release(key) if key in self.data else None

    def pep440(self, key: str) -> str:
        text = self.string(key)
        try:
            Version(text)
        except ValueError:  # InvalidVersion, or more digits than int() takes
            raise self.error(f"{key} = {text!r} is not a valid version") from None
        return text

    def opt_pep440(self, key: str) -> str | None:
        return self.pep440(key) if key in self.data else None

    def source_keys(self, key: str = "sources", *, required: bool = True) -> tuple[str, ...]:
        names = self.strings(key, required=required)
        if required and not names:
            raise self.error(f"{key} is empty: every fact names at least one source")
        for name in names:
            if name not in self._sources:
                raise self.error(
                    f"{key} names {name!r}, which [sources] does not define{did_you_mean(name, self._sources)}"
                )
        return names

    def unconfirmed(self) -> tuple[str, ...]:
        """Fields marked as not confirmed by a source: ``("*",)`` is the whole row."""
        names = list(self.strings("unconfirmed"))
        for name in names:
            if name != "*" and (name not in self.allowed or name in COMMON_KEYS):
                raise self.error(
                    f"unconfirmed names {name!r}, which is not a field of this entry"
                    f"{did_you_mean(name, self.allowed)}"
                )
        confirmed = self.opt_bool("confirmed")
        if confirmed is False and "*" not in names:
            names.insert(0, "*")
        return tuple(names)


def read_sources(doc: Mapping[str, Any], *, file: str) -> dict[str, str]:
    table = doc.get("sources")
    if not isinstance(table, dict) or not table:
        raise DataError(f"{file}: missing [sources] table (every fact names its source)", FIX)
    out: dict[str, str] = {}
    for name, text in table.items():
        if not isinstance(text, str) or not text.strip():
            raise DataError(f"{file}: [sources] {name}: must be a URL or a repository path", FIX)
        out[name] = text
    return out


def rows(doc: Mapping[str, Any], key: str, *, file: str) -> list[Any]:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise DataError(f"{file}: {key} must be an array of tables ([[{key}]])", FIX)
    return value


def table(
    doc: Mapping[str, Any],
    key: str,
    *,
    file: str,
    keys: Collection[str],
    sources: Mapping[str, str],
    name_key: str | None = None,
    label: str | None = None,
) -> Iterator[Row]:
    """Each row of the ``[[key]]`` array of tables as a :class:`Row`, named ``key #N`` (``label #N``
    where given) until its ``name_key`` names it: the one loop every loader of ``matrices/`` runs."""
    for i, data in enumerate(rows(doc, key, file=file)):
        yield Row(data, file=file, where=f"{label or key} #{i + 1}", keys=keys, sources=sources, name_key=name_key)


def read_toml(path: Path) -> dict[str, Any]:
    """One data file of ``matrices/``, parsed, with its schema checked (rows are read with :class:`Row`)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataError(
            f"matrix file {path} is missing", "reinstall rocmkit or set ROCMKIT_MATRICES_DIR"
        ) from None
    except OSError as exc:
        raise DataError(f"cannot read matrix file {path}: {exc.strerror}", "check its permissions") from None
    from rocmkit.util.safeload import loads_toml

    try:
        # Bounded (size, nesting, finite numbers): ROCMKIT_MATRICES_DIR and refreshed data are files too.
        doc: dict[str, Any] = loads_toml(data.decode("utf-8"), path.name)
    except UnicodeDecodeError as exc:
        raise DataError(f"{path.name}: not valid TOML: {exc}", FIX) from None
    except DataError as exc:
        raise DataError(exc.message.replace(" is not valid TOML:", ": not valid TOML:"), FIX) from None
    schema = doc.get("schema")
    if schema != SCHEMA:
        raise DataError(f"{path.name}: schema = {schema!r}, this rocmkit reads schema = {SCHEMA}", FIX)
    return doc
