"""ROCm/TheRock: ``RELEASES.md`` (the ``device-gfxNNNN`` extras of the multi-arch
index), ``build_tools/github_actions/configure_pytorch_release_matrix.py``
(``RELEASE_PYTHON_VERSIONS``: the CPythons its torch wheels are built for) and
``build_tools/packaging/python/rocm_whl_next_ownership.yaml`` (which packages the
aggregate ``/rocm/whl-next`` index serves on each release stream)."""

from __future__ import annotations

import ast
import re

from rocmkit.errors import DataError

RELEASES_PATH = "RELEASES.md"
RELEASE_MATRIX_PATH = "build_tools/github_actions/configure_pytorch_release_matrix.py"
WHL_NEXT_PATH = "build_tools/packaging/python/rocm_whl_next_ownership.yaml"
REPO_URL = "https://github.com/ROCm/TheRock"

_PYTHON = re.compile(r"3\.[0-9]{1,3}t?")
_EXTRA = re.compile(r"^\|[^|]*\|\s*(gfx[0-9a-f]+)\s*\|\s*`device-(gfx[0-9a-f]+)`\s*\|", re.MULTILINE)


def device_extras(text: str) -> tuple[str, ...]:
    """The gfx targets with a ``device-gfxNNNN`` extra, in the table's order."""
    out: list[str] = []
    for m in _EXTRA.finditer(text):
        if m.group(1) == m.group(2) and m.group(1) not in out:
            out.append(m.group(1))
    if not out:
        raise DataError(f"{RELEASES_PATH}: no `device-gfxNNNN` table found", "record a newer revision")
    return tuple(out)


def release_pythons(text: str) -> tuple[str, ...]:
    """``RELEASE_PYTHON_VERSIONS = ["3.10", ...]``, read with ast (never executed)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte in the source
        where = f", line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
        raise DataError(
            f"{RELEASE_MATRIX_PATH}: not valid Python ({getattr(exc, 'msg', exc)}{where})", "record another revision"
        ) from None
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "RELEASE_PYTHON_VERSIONS"
        ):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                value = None  # computed, not a literal
            if isinstance(value, list) and value and all(isinstance(v, str) and _PYTHON.fullmatch(v) for v in value):
                return tuple(value)
            raise DataError(
                f"{RELEASE_MATRIX_PATH}: RELEASE_PYTHON_VERSIONS is not a list of Python versions",
                "record another revision",
            )
    raise DataError(f"{RELEASE_MATRIX_PATH}: RELEASE_PYTHON_VERSIONS not found", "record a newer revision")


# The three device packages one `device-gfxNNNN` extra pulls in (torch[...], torchvision[...], rocm[...]).
DEVICE_PACKAGES = ("amd-torch-device-", "amd-torchvision-device-", "rocm-sdk-device-")
_GFX = re.compile(r"gfx[0-9a-f]+")  # one target; family packages (gfx110x, gfx12-0) are left out
def _yaml(text: str, *, where: str) -> dict[str, object]:
    """The block-style YAML subset the ownership manifest is written in: nested mappings, lists
    (of scalars or of mappings), comments. Anything else is an error (the manifest changed form),
    never a guess."""
    # (indent, kind, key, value): kind "key" (key: [value]), "item" (- scalar), "entry" (- key: ...)
    lines: list[tuple[int, str, str, str | None]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        body = "" if raw.lstrip().startswith("#") else raw.split(" #", 1)[0].rstrip()
        if not body.strip():
            continue
        indent = len(body) - len(body.lstrip(" "))
        rest = body.strip()
        if any(c in rest for c in "{}[]&*|>") or "\t" in body:
            raise DataError(f"{where}: line {n} is not in the YAML form this reader takes", "record another revision")
        dash = rest.startswith("- ")
        if dash:
            rest = rest[2:].strip()
        key, colon, value = rest.partition(":")
        if colon and (value == "" or value.startswith(" ")):
            val = value.strip().strip("\"'") or None
            if dash:
                lines.append((indent, "entry", "", None))
                indent += 2
            lines.append((indent, "key", key.strip(), val))
        elif dash:
            lines.append((indent, "item", rest.strip("\"'"), None))
        else:
            raise DataError(f"{where}: line {n} is not in the YAML form this reader takes", "record another revision")

    def block(i: int, indent: int) -> tuple[object, int]:
        if lines[i][1] in ("item", "entry"):
            items: list[object] = []
            while i < len(lines) and lines[i][0] == indent and lines[i][1] in ("item", "entry"):
                if lines[i][1] == "item":
                    items.append(lines[i][2])
                    i += 1
                else:
                    entry, i = block(i + 1, indent + 2)
                    items.append(entry)
            return items, i
        out: dict[str, object] = {}
        while i < len(lines) and lines[i][0] == indent and lines[i][1] == "key":
            _, _, key, value = lines[i]
            i += 1
            if value is not None:
                out[key] = value
            elif i < len(lines) and lines[i][0] > indent:
                out[key], i = block(i, lines[i][0])
            else:
                out[key] = None  # a key with nothing under it (a package on the default streams)
        return out, i

    doc, end = block(0, 0) if lines else ({}, 0)
    if end != len(lines) or not isinstance(doc, dict):
        raise DataError(f"{where}: unexpected indentation in its entry {end + 1}", "record another revision")
    return doc


def _strs(value: object) -> list[str] | None:
    return [str(v) for v in value] if isinstance(value, list) else None


def whl_next_devices(text: str) -> dict[str, tuple[str, ...]]:
    """Per release stream ("nightly", "rc", "stable" ...), the gfx targets whose three device packages
    (amd-torch-device-, amd-torchvision-device-, rocm-sdk-device-) the ``/rocm/whl-next`` index serves
    on that stream; a package's streams are its ``streams`` list, else its ``stream_group``, else the
    manifest's default group. Sorted as gfx names sort (gfx90a after gfx908, gfx1010 after gfx950)."""
    doc = _yaml(text, where=WHL_NEXT_PATH)
    streams = doc.get("streams")
    known = _strs(streams.get("known")) if isinstance(streams, dict) else None
    if not isinstance(streams, dict) or known is None:
        raise DataError(f"{WHL_NEXT_PATH}: no streams.known list", "record a newer revision")
    raw_groups = streams.get("groups")
    groups = {str(k): _strs(v) for k, v in raw_groups.items()} if isinstance(raw_groups, dict) else {}
    default = groups.get(str(streams.get("default")))
    indexes = doc.get("python_indexes")
    index = next(
        (ix for ix in indexes if isinstance(ix, dict) and ix.get("public_base") == "/rocm/whl-next"), None
    ) if isinstance(indexes, list) else None
    packages = index.get("packages") if index is not None else None
    if not isinstance(packages, dict) or default is None:
        raise DataError(
            f"{WHL_NEXT_PATH}: no /rocm/whl-next packages or default stream group", "record a newer revision"
        )

    def on(spec: object) -> set[str]:
        if isinstance(spec, dict) and "streams" in spec:
            listed = _strs(spec["streams"])
        elif isinstance(spec, dict) and "stream_group" in spec:
            listed = groups.get(str(spec["stream_group"]))
        else:
            listed = default
        if listed is None:
            raise DataError(f"{WHL_NEXT_PATH}: a package names streams it does not define", "record another revision")
        return set(listed)

    out: dict[str, tuple[str, ...]] = {}
    for stream in known:
        per_package = [
            {name[len(prefix):] for name, spec in packages.items() if name.startswith(prefix) and stream in on(spec)}
            for prefix in DEVICE_PACKAGES
        ]
        archs = {a for a in set.intersection(*per_package) if _GFX.fullmatch(a)}
        out[stream] = tuple(sorted(archs, key=lambda a: (len(a), a)))
    return out
