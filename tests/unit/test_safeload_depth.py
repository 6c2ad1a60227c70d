"""The one nesting scanner behind load_json and load_toml's depth limit (util/safeload.py)."""

from __future__ import annotations

import pytest

from rocmkit.errors import DataError
from rocmkit.util import safeload


def test_json_brackets_in_strings_do_not_count() -> None:
    assert safeload._depth('{"a": [1, {"b": "[[[{{"}], "c": "\\"[["}') == 3


def test_toml_comments_and_literal_strings_do_not_count() -> None:
    text = "a = [[1], [2]]  # [[[[[\nb = 'C:\\path[[' \nc = \"x\\\"[[\"\nd = {e = [1]}\n"
    assert safeload._depth(text, quotes="\"'", comments=True) == 2


def test_a_deep_toml_text_is_refused_before_parsing() -> None:
    with pytest.raises(DataError, match="nests deeper"):
        safeload.loads_toml("a = " + "[" * 100 + "]" * 100 + "\n", "t.toml")
    assert safeload.loads_toml("a = [[1]]\n# " + "[" * 500 + "\n", "t.toml") == {"a": [[1]]}
