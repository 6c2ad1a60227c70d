"""Every error rocmkit raises reads the same way: one line saying what is wrong, then ``fix:``
lines (the most likely first), none over ``MAX_LINE`` characters.

The walk reads every ``raise XError(...)`` (and every ``XError(...)`` built to be raised later)
in ``rocmkit/`` with ``ast``, fills each f-string's values with a stand-in of typical length
(a path, a version, a URL), and renders the error through the CLI's own printer
(``rocmkit.cli.group.print_error``), as the user would read it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmkit import errors
from rocmkit.cli.group import print_error
from rocmkit.errors import MAX_LINE, RERUN, NetworkError, RocmkitError, UsageError, rerun

ROOT = Path(__file__).resolve().parents[2] / "rocmkit"
CLASSES: dict[str, type[RocmkitError]] = {
    name: cls
    for name, cls in vars(errors).items()
    if isinstance(cls, type) and issubclass(cls, RocmkitError)
}
# What a value in an f-string stands for, at a typical length: a path, a URL, a name; and one
# named for what is always short (a Python version "3.11", an exit code, a count).
STAND_IN = "<value 20 characters>"
SHORT = "<3.11>"
SHORT_NAMES = {"python", "code", "index", "total", "count", "status", "level", "returncode", "n"}
# A command line the errors' `rerun` fixes are written out with.
ARGV = ("install", "--venv", ".venv")


# The module's top-level NAME = value assignments, which a message or fix may name.
Consts = dict[str, ast.expr]


def _text(node: ast.expr, consts: Consts) -> str | None:
    """The string ``node`` evaluates to, f-string values filled in; None when it is not a string
    literal (a variable, a call: the message is made elsewhere)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and node.id in consts:
        return _text(consts[node.id], consts)
    if isinstance(node, ast.JoinedStr):
        parts = [_text(v, consts) if not isinstance(v, ast.FormattedValue) else _stand_in(v.value) for v in node.values]
        return None if None in parts else "".join(p for p in parts if p is not None)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left, consts), _text(node.right, consts)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.IfExp):
        # Either branch may be printed: the longer one is checked.
        both = [_text(node.body, consts), _text(node.orelse, consts)]
        return None if None in both else max((b for b in both if b is not None), key=len)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "rerun":
        extra = [_text(a, consts) for a in node.args]
        return None if None in extra else rerun(*(e for e in extra if e is not None))
    return None


def _stand_in(value: ast.expr) -> str:
    name = value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) else ""
    return SHORT if name in SHORT_NAMES else STAND_IN


def _fixes(node: ast.expr | None, consts: Consts) -> tuple[str, ...] | None:
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return ()
    if isinstance(node, ast.Name) and node.id in consts:
        return _fixes(consts[node.id], consts)
    if isinstance(node, (ast.Tuple, ast.List)):
        items: list[str] = []
        for e in node.elts:
            got = _fixes(e.value, consts) if isinstance(e, ast.Starred) else _fixes(e, consts)
            if got is None:
                return None
            items += got
        return tuple(items)
    one = _text(node, consts)
    return None if one is None else (one,)


def _raised() -> Iterator[tuple[str, RocmkitError]]:
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        consts: Consts = {
            t.id: stmt.value
            for stmt in tree.body
            if isinstance(stmt, ast.Assign)
            for t in stmt.targets
            if isinstance(t, ast.Name)
        }
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            cls = CLASSES.get(node.func.id)
            if cls is None or not node.args:
                continue
            message = _text(node.args[0], consts)
            fix_node = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "fix"), None
            )
            fixes = _fixes(fix_node, consts)
            if message is None or fixes is None:
                continue
            yield f"{path.relative_to(ROOT.parent)}:{node.lineno}", cls(message, fixes)


def _printed(exc: RocmkitError, capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    print_error(exc, ARGV)
    return capsys.readouterr().err.splitlines()


def test_every_error_is_a_line_then_fix_lines_none_too_long(capsys: pytest.CaptureFixture[str]) -> None:
    found = list(_raised())
    # The walk reads the errors it claims to: most of rocmkit's raises are literal messages.
    assert len(found) > 300, len(found)
    too_long: list[str] = []
    for where, exc in found:
        lines = _printed(exc, capsys)
        assert lines[0].startswith("error: ") and all(line.startswith("fix: ") for line in lines[1:]), where
        assert RERUN not in "".join(lines), where
        too_long += [f"{where}: {len(line)}: {line}" for line in lines if len(line) > MAX_LINE]
    assert not too_long, "\n".join(too_long)


def test_a_fix_that_reruns_the_command_is_written_out_to_copy(capsys: pytest.CaptureFixture[str]) -> None:
    exc = NetworkError("the index did not answer", (rerun("--fallback-index"), "`pip install uv`"))
    assert _printed(exc, capsys) == [
        "error: the index did not answer",
        "fix: rocmkit install --venv .venv --fallback-index",
        "fix: pip install uv",
    ]
    # Where the command line is not known (a report, a log line), the fix says it in words.
    assert exc.one_line() == (
        "error: the index did not answer (fix: run it again with --fallback-index; or pip install uv)"
    )


def test_a_message_that_quotes_several_lines_stays_one(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _printed(UsageError("bad file:\n  line 1\n  line 2", "fix it\nnow"), capsys)
    assert lines == ["error: bad file: line 1 line 2", "fix: fix it now"]


def test_a_rerun_replaces_an_option_the_command_already_gave(capsys: pytest.CaptureFixture[str]) -> None:
    """The fix is a command to copy: an option it sets is not given twice."""
    exc = NetworkError(
        "the index did not answer",
        (rerun("--index-base", "https://MIRROR/whl") + "   # a mirror", rerun("--fallback-index")),
    )
    capsys.readouterr()
    print_error(exc, ("install", "--venv", "v", "--index-base", "http://old/whl", "--fallback-index"))
    assert capsys.readouterr().err.splitlines()[1:] == [
        "fix: rocmkit install --venv v --fallback-index --index-base https://MIRROR/whl   # a mirror",
        "fix: rocmkit install --venv v --index-base http://old/whl --fallback-index",
    ]
    print_error(exc, ("install", "--index-base=http://old/whl"))
    assert "fix: rocmkit install --index-base https://MIRROR/whl   # a mirror" in capsys.readouterr().err
