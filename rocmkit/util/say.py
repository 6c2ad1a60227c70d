"""The message callback, one name for the whole tree: a stage that has something to tell the
user (a step, a warning, what it chose) is handed a ``Say`` and calls it with one line; the
command decides where the line goes (stderr, a ticker, a test's list). Defined here once so
that install, containers and the rest do not each restate it under a name of their own
(``tests/unit/test_import_graph.py`` fails on a second definition)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

Say: TypeAlias = Callable[[str], None]
