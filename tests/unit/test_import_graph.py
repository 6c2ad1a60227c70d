"""The import graph of rocmkit, read statically (ast): no circle, no upward arrow.

Every import counts, including those inside functions (a lazy import that closes a
circle is still a circle: it only moves the failure from import time to run time) and those
under ``if TYPE_CHECKING:`` (they never run, but a type named across a circle still ties the
two modules together: changing one means reading the other).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

import rocmkit

ROOT = Path(rocmkit.__file__).parent

# The ground floor: facts and helpers every wing uses. They import only each other.
GROUND = {
    "arch",
    "errors",
    "machine",
    "packages",
    "plan",
    "planschema",
    # The ground floor's rooms: helpers (atomic and bounded IO, safe loading, redaction, env vars,
    # paths), processes (runner, prefork server and worker, child results, interpreter probe) and
    # the package-index client.
    "util",
    "proc",
    "pkgindex",
    # The package itself holds __version__ only (util.paths compares an overlay's writer with it).
    "rocmkit",
    # The Python rocmkit acts on and the one child-result protocol (docs/architecture.md lists it
    # on the ground floor; this set now says so too).
    "pyenv",
}
# The top level holds records, facts and the front doors; everything else lives in a room.
MAX_LOOSE_MODULES = 10
# Features: pipeline stages and commands built on the ground floor and the data.
FEATURES = {"detect", "resolve", "install", "source_build", "doctor", "bench", "fleet", "slurm", "containers"}


def _module_name(path: Path) -> str:
    parts = ["rocmkit", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST, package: str, known: set[str]) -> set[str]:
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in known else base)
        else:
            visit(node)

    visit(tree)
    return {name for name in found if name in known}


@lru_cache(maxsize=1)
def graph() -> Mapping[str, frozenset[str]]:
    paths = {_module_name(p): p for p in ROOT.rglob("*.py")}
    known = set(paths)
    out: dict[str, frozenset[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        out[name] = frozenset(_imports(tree, package, known) - {name})
    return out


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted."""
    nodes = set(edges) | {m for targets in edges.values() for m in targets}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            connect(v)
    return found


def room(module: str) -> str:
    """``rocmkit.resolve.core`` -> ``resolve``; ``rocmkit.arch`` -> ``arch``; ``rocmkit`` -> ``rocmkit``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def arrows(src_room: str, dst_room: str) -> list[str]:
    return sorted(
        f"{a} -> {b}" for a, bs in graph().items() for b in bs if room(a) == src_room and room(b) == dst_room
    )


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert cycles({"a": ["b"], "b": []}) == []


def test_graph_sees_lazy_imports() -> None:
    # doctor/checks/archs.py imports the matrix inside a function.
    assert "rocmkit.matrix" in graph()["rocmkit.doctor.checks.archs"]


def test_graph_counts_type_checking_imports() -> None:
    # install/prepare.py names InstallRequest under `if TYPE_CHECKING:` only.
    source = (ROOT / "install" / "prepare.py").read_text(encoding="utf-8")
    assert "    from rocmkit.install.request import InstallRequest" in source
    assert "rocmkit.install.request" in graph()["rocmkit.install.prepare"]


def test_no_import_cycle_among_modules() -> None:
    assert cycles(graph()) == []


def test_no_import_cycle_between_rooms() -> None:
    """Subpackages and top-level modules, as rooms. The doctor <-> kernels arrow is the
    one known exception; test_kernels_do_not_import_the_doctor tracks it."""
    rooms: dict[str, set[str]] = {}
    for a, bs in graph().items():
        for b in bs:
            if room(a) != room(b):
                rooms.setdefault(room(a), set()).add(room(b))
    assert cycles(rooms) == []


def test_kernels_do_not_import_the_doctor() -> None:
    assert arrows("kernels", "doctor") == []


def test_ground_floor_imports_only_the_ground_floor() -> None:
    up = [f"{a} -> {b}" for a, bs in graph().items() for b in bs if room(a) in GROUND and room(b) not in GROUND]
    assert up == []


def test_data_and_parsers_import_no_feature() -> None:
    for low in ("matrix", "parsers", "probes", "sources"):
        up = [line for feature in FEATURES for line in arrows(low, feature)]
        assert up == [], f"{low} imports a feature: {up}"


def test_only_main_imports_the_cli() -> None:
    users = {room(a) for a, bs in graph().items() for b in bs if room(b) == "cli" and room(a) != "cli"}
    assert users <= {"__main__"}


def test_few_loose_modules_at_the_top() -> None:
    loose = sorted(p.stem for p in ROOT.glob("*.py") if p.stem not in {"__init__", "__main__"})
    assert len(loose) <= MAX_LOOSE_MODULES, f"{len(loose)} loose modules at the top: {loose}"


def test_the_doctor_reaches_install_only_through_recover() -> None:
    """A doctor run asks install one thing, whether a killed install left a journal to finish:
    through ``install/recover.py`` alone, which never imports install's flow (a doctor walk used
    to pass through flow, journal, guard, transaction, state, uv and pip for it)."""
    doctor = {m for m in graph() if room(m) == "doctor" or m == "rocmkit.cli.doctor"}
    used = sorted(f"{a} -> {b}" for a in doctor for b in graph()[a] if room(b) == "install")
    assert used == ["rocmkit.doctor.prepare -> rocmkit.install.recover"]
    assert "rocmkit.install.flow" not in graph()["rocmkit.install.recover"]



def test_only_the_session_names_the_index_base_variable() -> None:
    """``ROCMKIT_INDEX_BASE`` is read once, by the front door (``session.INDEX_BASE_ENV``): no other
    module holds the name as a value it could look up (help text and the image recipe's ``ARG``
    line only mention it inside longer strings)."""
    holders = sorted(
        _module_name(path)
        for path in ROOT.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value == "ROCMKIT_INDEX_BASE"
    )
    assert holders == ["rocmkit.session"]


def _message_aliases(text: str) -> list[str]:
    """Module-level names bound to ``Callable[[str], None]`` (``X = …`` or ``X: TypeAlias = …``;
    ``type X = …`` needs Python 3.12, above the floor)."""
    found = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name, value = node.target.id, node.value
        else:
            continue
        if ast.unparse(value).replace("typing.", "").replace("collections.abc.", "") == "Callable[[str], None]":
            found.append(name)
    return found


def test_the_message_callback_is_defined_once() -> None:
    """``Say`` (``util/say.py``) is the one name of the message callback; install and containers
    used to restate it as ``Say`` or ``Echo`` seven times. Import it; do not define another."""
    aliases = sorted(
        f"{_module_name(p)}.{name}" for p in ROOT.rglob("*.py") for name in _message_aliases(p.read_text(encoding="utf-8"))
    )
    assert aliases == ["rocmkit.util.say.Say"]


def test_the_message_alias_guard_sees_each_spelling() -> None:
    # The guard above can fail: each way of writing a second alias is seen, and a parameter's
    # annotation or a wider type is not an alias.
    text = (
        "Echo = Callable[[str], None]\n"
        "Tell: TypeAlias = typing.Callable[[str], None]\n"
        "Sink = Callable[[str], None] | None\n"
        "def f(say: Callable[[str], None]) -> None: ...\n"
    )
    assert _message_aliases(text) == ["Echo", "Tell"]
