"""Every Triton smoke kernel's declaration, read from its module's source without importing it.

A kernel module (``rocmkit/kernels/<name>.py``) is the one home of everything about its
kernel. It begins with ``CHECK = {...}``, a literal (dicts, lists, strings, numbers, None):

- ``level``, ``description`` and optionally ``timeout_s`` (180) and ``order`` (100; the
  report lists kernels by it, then by name) of its doctor check, ``triton.<name>``;
- ``options``: its ``--set`` keys, each with ``help``, a ``kind`` (:data:`KINDS`) and the
  ``gpu`` and ``interpreter`` defaults (None: the kernel's own choice);
- ``tolerances``: per dtype, ``atol``, ``rtol`` and the ``source`` of the numbers (a citation,
  or the name of a shared one in :data:`SOURCES`), and ``arch_tolerances``: the same per
  architecture family (:data:`ARCH_FAMILIES`) where that family needs its own.

Below the declaration the module defines the ``@triton.jit`` kernel, ``run(k)`` (the
check body: inputs, the torch reference, measurements; ``k`` is a
:class:`~rocmkit.kernels.spec.KernelRun`) and ``aot_builds(backend)`` (what
``triton.codegen`` compiles).

Why a literal read with ``ast``: the doctor's parent registers every check (name, level,
options, timeout) for ``--list``, ``--help`` and level 0, and must not import triton or
torch (it may not even run in the checked venv's interpreter), while a kernel module
imports triton at module level because ``@triton.jit`` decides at decoration time whether
it is compiled or interpreted. PEP 723 reads inline script metadata from a script the same
way, without running it. No torch, no triton here.
"""

from __future__ import annotations

import ast
import functools
import math
import pkgutil
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

from rocmkit.arch import base_arch
from rocmkit.errors import DataError, UsageError
from rocmkit.kernels.compare import Tolerance
from rocmkit.kernels.options import KINDS, Option

NAME = "CHECK"  # the declaration's variable
CHECK_PREFIX = "triton."
LEVELS = range(4)
DEFAULT_TIMEOUT_S = 180.0
DEFAULT_ORDER = 100

# Architecture families a kernel may give tolerances of their own (``arch_tolerances``).
# CDNA2 (gfx90a: MI210/MI250/MI250X) matrix cores compute fp16/bf16 with reduced precision
# and flush input and output denormals to zero, so the Triton tutorial
# 03-matrix-multiplication relaxes rtol to 1e-2 there (`is_hip_cdna2()`).
ARCH_FAMILIES: dict[str, frozenset[str]] = {"cdna2": frozenset({"gfx90a"})}

# Tolerance sources several kernels (and the attention check) cite: a declaration names one
# by its key instead of repeating the sentence.
SOURCES: dict[str, str] = {
    "fp32-reduction": (
        "rocmkit: fp32 sums in another order differ by about sqrt(n) * 6e-8 relative; 1e-4 leaves 10x headroom"
    ),
    "bf16-ulp": (
        "rocmkit: bf16 keeps 8 significant bits (one ulp is 2^-7 relative), so two correctly "
        "accumulated results may differ by one ulp: atol and rtol 1e-2"
    ),
    "cdna2-tutorial-03": (
        "triton tutorial 03-matrix-multiplication: rtol 1e-2 on CDNA2 (is_hip_cdna2), denormals flushed"
    ),
    "exact-int": "integer counts have one right answer",
}

_TOP_KEYS = {"level", "description", "timeout_s", "order", "options", "tolerances", "arch_tolerances"}
_OPTION_KEYS = {"help", "kind", "gpu", "interpreter", "rank", "choices", "interpreter_choices"}
_KEY = re.compile(r"^[a-z][a-z0-9_]*$")
_SOURCE_NAME = re.compile(r"^[a-z0-9-]+$")
_START = re.compile(rf"^{NAME}\s*(?::[^=\n]*)?=", re.M)
_FIX = "see docs/architecture.md, 'How to add a Triton kernel'"


class CatalogError(DataError):
    """A kernel module's declaration that cannot be used; the message names the file."""


# --- tolerances ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Tolerances:
    """A check's tolerances: per dtype, and per architecture family where it differs."""

    by_dtype: Mapping[str, Tolerance]
    by_family: Mapping[str, Mapping[str, Tolerance]]

    def pick(self, name: str, dtype: str, arch: str | None = None) -> Tolerance:
        """The tolerance for ``name`` computing in ``dtype`` (``"float16"``) on ``arch``."""
        base = base_arch(arch)
        for family, archs in ARCH_FAMILIES.items():
            if base in archs and dtype in self.by_family.get(family, {}):
                return self.by_family[family][dtype]
        try:
            return self.by_dtype[dtype]
        except KeyError:
            known = ", ".join(sorted(self.by_dtype)) or "none"
            raise UsageError(
                f"no tolerance for {name} in {dtype}",
                f"use one of the dtypes with a known tolerance for {name}: {known}",
            ) from None


# --- the kernels -------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Kernel:
    """One kernel module's declaration, validated."""

    name: str  # the module's name: "vector_add"
    path: Path
    level: int
    description: str
    timeout_s: float
    order: int
    options: Mapping[str, Option]
    tolerances: Tolerances

    @property
    def check(self) -> str:
        return CHECK_PREFIX + self.name


def read_folder(folder: Path) -> tuple[Kernel, ...]:
    """The kernels declared by the modules in ``folder``, in report order. A module without a
    declaration is a helper, not a kernel; a bad declaration is a :class:`CatalogError`."""
    found: list[Kernel] = []
    for info in pkgutil.iter_modules([str(folder)]):
        path = folder / f"{info.name}.py"
        if info.ispkg or not path.is_file():
            continue
        kernel = read_module(path)
        if kernel is not None:
            found.append(kernel)
    found.sort(key=lambda k: (k.order, k.name))
    owners: dict[str, Kernel] = {}
    for k in found:
        for key in k.options:
            if key in owners:
                raise CatalogError(
                    f"{k.path}: option {key!r} is declared by kernel {owners[key].name} too",
                    f"give {k.name}'s option a name of its own, e.g. {k.name}_{key.split('_')[-1]}",
                )
            owners[key] = k
    return tuple(found)


@functools.cache
def kernels() -> tuple[Kernel, ...]:
    """Every kernel in this package (``rocmkit/kernels``), read once per process."""
    return read_folder(Path(__file__).parent)


def kernel(name: str) -> Kernel:
    for k in kernels():
        if k.name == name:
            return k
    known = ", ".join(k.name for k in kernels())
    raise UsageError(f"no Triton smoke kernel named {name!r}", f"use one of: {known}")


def read_module(path: Path) -> Kernel | None:
    """``path``'s kernel, or None when it declares none (a helper module)."""
    source = path.read_text(encoding="utf-8")
    raw = declaration(path, source)
    if raw is None:
        return None
    for fn in ("run", "aot_builds"):
        if f"\ndef {fn}(" not in source:
            raise CatalogError(
                f"{path}: declares {NAME} but defines no top-level {fn}()",
                "a kernel module defines run(k) (the check body) and aot_builds(backend) (what "
                f"triton.codegen compiles); {_FIX}",
            )
    return validate(path, raw)


def declaration(path: Path, source: str) -> dict[str, Any] | None:
    """The literal assigned to ``CHECK`` at the top level of ``source``, never executed."""
    # Most modules here are helpers: a substring test spares them the regular expression.
    match = _START.search(source) if source.startswith(NAME) or f"\n{NAME}" in source else None
    if match is None:
        return None
    node = None
    offset = source.count("\n", 0, match.start())  # lines before the statement
    # The formatter closes a top-level literal in column 0: parse that statement alone, which
    # costs a third of parsing the whole module (kernels with their checks are 100-300 lines).
    end = source.find("\n}", match.start())
    if end >= 0:
        try:
            tree = ast.parse(source[match.start() : end + 2])
        except SyntaxError:
            tree = None
        if tree is not None and len(tree.body) == 1:
            node = _value(tree.body[0])
    if node is None:
        offset = 0
        try:
            tree = ast.parse(source, filename=str(path))
        except SyntaxError as exc:
            raise CatalogError(f"{path}: not valid Python: {exc.msg} (line {exc.lineno})", _FIX) from None
        node = next((v for stmt in tree.body if (v := _value(stmt)) is not None), None)
        if node is None:
            return None
    _no_duplicate_keys(path, node, offset)
    try:
        value = ast.literal_eval(node)
    except ValueError:
        bad = _first_non_literal(node)
        raise CatalogError(
            f"{path}: {NAME} is not a literal: {ast.unparse(bad)!r} on line {bad.lineno + offset}",
            f"write {NAME} with dict, list, str, int, float, bool and None literals only (it is read "
            "without importing the module: no names, calls or arithmetic; write 2**24 + 7 as 16_777_223)",
        ) from None
    if not isinstance(value, dict):
        raise CatalogError(f"{path}: {NAME} is a {type(value).__name__}, not a dict", _FIX)
    return value


def _value(stmt: ast.stmt) -> ast.expr | None:
    if isinstance(stmt, ast.Assign) and [ast.unparse(t) for t in stmt.targets] == [NAME]:
        return stmt.value
    if isinstance(stmt, ast.AnnAssign) and ast.unparse(stmt.target) == NAME and stmt.value is not None:
        return stmt.value
    return None


def _first_non_literal(node: ast.expr) -> ast.expr:
    """The first part of ``node`` that :func:`ast.literal_eval` refuses (a name, a call, ``**``)."""
    stack = [node]
    while stack:
        sub = stack.pop(0)
        if isinstance(sub, ast.Dict):
            stack.extend(k for k in sub.keys if k is not None)
            stack.extend(sub.values)
        elif isinstance(sub, (ast.List, ast.Tuple, ast.Set)):
            stack.extend(sub.elts)
        elif isinstance(sub, ast.UnaryOp) and isinstance(sub.op, (ast.USub, ast.UAdd)):
            stack.append(sub.operand)
        elif not isinstance(sub, ast.Constant):
            return sub
    return node


def _no_duplicate_keys(path: Path, node: ast.expr, offset: int) -> None:
    """A key written twice would silently drop the first value."""
    stack = [node]
    while stack:
        sub = stack.pop()
        if isinstance(sub, ast.Dict):
            seen: set[object] = set()
            for key in sub.keys:
                if isinstance(key, ast.Constant):
                    if key.value in seen:
                        raise CatalogError(
                            f"{path}: {NAME} has the key {key.value!r} twice (line {key.lineno + offset})",
                            "keep one of them",
                        )
                    seen.add(key.value)
            stack.extend(sub.values)
        elif isinstance(sub, (ast.List, ast.Tuple)):
            stack.extend(sub.elts)


# --- validation ----------------------------------------------------------------------


def validate(path: Path, raw: Mapping[str, Any]) -> Kernel:
    """``raw`` (the declaration of ``path``) as a :class:`Kernel`, or one CatalogError."""
    v = _Validator(path)
    v.keys(raw, _TOP_KEYS, {"level", "description", "tolerances"}, NAME)
    level = v.integer(raw["level"], f"{NAME}['level']")
    if level not in LEVELS:
        v.fail(f"{NAME}['level'] is {level}", "use a level from 0 to 3 (docs/doctor.md, Levels)")
    timeout = v.number(raw.get("timeout_s", DEFAULT_TIMEOUT_S), f"{NAME}['timeout_s']")
    if timeout <= 0:
        v.fail(f"{NAME}['timeout_s'] is {timeout}", "give the check a positive number of seconds")
    options = {
        key: v.option(key, spec)
        for key, spec in v.mapping(raw.get("options", {}), f"{NAME}['options']").items()
    }
    tolerances = v.tolerances(raw)
    return Kernel(
        name=path.stem,
        path=path,
        level=level,
        description=v.text(raw["description"], f"{NAME}['description']"),
        timeout_s=timeout,
        order=v.integer(raw.get("order", DEFAULT_ORDER), f"{NAME}['order']"),
        options=options,
        tolerances=tolerances,
    )


class _Validator:
    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, problem: str, fix: str) -> NoReturn:
        raise CatalogError(f"{self.path}: {problem}", fix)

    def keys(self, raw: Mapping[str, Any], allowed: set[str], required: set[str], where: str) -> None:
        missing = sorted(required - set(raw))
        if missing:
            self.fail(f"{where} lacks {', '.join(map(repr, missing))}", f"add {missing[0]!r}; {_FIX}")
        unknown = sorted(str(k) for k in set(raw) - allowed)
        if unknown:
            self.fail(
                f"{where} has the unknown key {unknown[0]!r}",
                f"use only {', '.join(sorted(allowed))}",
            )

    def mapping(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            self.fail(f"{where} is not a dict with string keys", _FIX)
        return dict(value)

    def integer(self, value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(f"{where} is {value!r}, not an integer", _FIX)
        return int(value)

    def number(self, value: Any, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(f"{where} is {value!r}, not a number", _FIX)
        return float(value)

    def text(self, value: Any, where: str) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{where} is {value!r}, not a non-empty string", _FIX)
        return str(value)

    def names(self, value: Any, where: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not value or not all(isinstance(n, str) and n for n in value):
            self.fail(f"{where} is {value!r}, not a non-empty list of names", _FIX)
        return tuple(value)

    def option(self, key: str, spec: Any) -> Option:
        where = f"{NAME}['options'][{key!r}]"
        if not _KEY.match(key):
            self.fail(f"{where}: the key is not lower_case", "name --set keys like matmul_shape")
        spec = self.mapping(spec, where)
        self.keys(spec, _OPTION_KEYS, {"help", "kind", "gpu", "interpreter"}, where)
        kind = spec["kind"]
        if kind not in KINDS:
            self.fail(f"{where}['kind'] is {kind!r}", f"use one of {', '.join(KINDS)}")
        for k, field in (("shape", "rank"), ("dtypes", "choices"), ("dtypes", "interpreter_choices")):
            if kind != k and field in spec:
                self.fail(f"{where}: only kind {k!r} takes {field!r}", _FIX)
            if kind == k and field != "interpreter_choices" and field not in spec:
                self.fail(f"{where}: kind {k!r} needs {field!r}", _FIX)
        choices = self.names(spec["choices"], f"{where}['choices']") if kind == "dtypes" else ()
        interpreted = choices
        if "interpreter_choices" in spec:
            interpreted = self.names(spec["interpreter_choices"], f"{where}['interpreter_choices']")
            if set(interpreted) - set(choices):
                self.fail(f"{where}['interpreter_choices'] names a dtype not in 'choices'", _FIX)
        rank = self.integer(spec["rank"], f"{where}['rank']") if kind == "shape" else 0
        if kind == "shape" and rank < 1:
            self.fail(f"{where}['rank'] is {rank}", "a shape has one or more dimensions")
        option = Option(
            key=key,
            help=self.text(spec["help"], f"{where}['help']"),
            kind=kind,
            gpu=None,
            interpreter=None,
            rank=rank,
            choices=choices,
            interpreter_choices=interpreted,
        )
        defaults: dict[str, Any] = {}
        for field, backend in (("gpu", "rocm"), ("interpreter", "cpu")):
            value = spec[field]
            try:
                defaults[field] = None if value is None else option.parse(value, backend)
            except UsageError as exc:
                self.fail(f"{where}[{field!r}]: {exc.message}", exc.fix or _FIX)
        return replace(option, gpu=defaults["gpu"], interpreter=defaults["interpreter"])

    def tolerance(self, value: Any, where: str) -> Tolerance:
        spec = self.mapping(value, where)
        self.keys(spec, {"atol", "rtol", "source"}, {"atol", "rtol", "source"}, where)
        atol, rtol = (self.number(spec[k], f"{where}[{k!r}]") for k in ("atol", "rtol"))
        if atol < 0 or rtol < 0:
            self.fail(f"{where}: atol and rtol must not be negative", "use 0 for an exact comparison")
        source = self.text(spec["source"], f"{where}['source']")
        if _SOURCE_NAME.match(source):
            if source not in SOURCES:
                self.fail(
                    f"{where}['source'] names no shared source: {source!r}",
                    f"cite the number's source, or name one of {', '.join(SOURCES)}",
                )
            source = SOURCES[source]
        return Tolerance(atol=atol, rtol=rtol, source=source)

    def tolerances(self, raw: Mapping[str, Any]) -> Tolerances:
        where = f"{NAME}['tolerances']"
        table = self.mapping(raw["tolerances"], where)
        if not table:
            self.fail(f"{where} is empty", "give the tolerance of each dtype the check compares in")
        by_dtype = {d: self.tolerance(t, f"{where}[{d!r}]") for d, t in table.items()}
        by_family: dict[str, dict[str, Tolerance]] = {}
        where = f"{NAME}['arch_tolerances']"
        for family, overrides in self.mapping(raw.get("arch_tolerances", {}), where).items():
            if family not in ARCH_FAMILIES:
                self.fail(f"{where} names the unknown family {family!r}", f"use {', '.join(ARCH_FAMILIES)}")
            here = f"{where}[{family!r}]"
            for dtype, t in self.mapping(overrides, here).items():
                if dtype not in by_dtype:
                    self.fail(f"{here}[{dtype!r}] has no base tolerance in 'tolerances'", _FIX)
                by_family.setdefault(family, {})[dtype] = self.tolerance(t, f"{here}[{dtype!r}]")
        return Tolerances(by_dtype=by_dtype, by_family=by_family)
