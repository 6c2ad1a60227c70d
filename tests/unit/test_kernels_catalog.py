"""The kernel catalog: each kernel module's ``CHECK`` declaration, read without importing it."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from rocmkit.errors import DataError
from rocmkit.kernels import catalog, sizes
from rocmkit.kernels.catalog import SOURCES, CatalogError, read_folder, read_module
from rocmkit.kernels.tolerance import tolerance

KERNELS_DIR = Path(catalog.__file__).parent

GOOD = """\
CHECK = {
    "level": 2,
    "description": "y = a*x + y",
    "options": {
        "saxpy_n": {"help": "elements", "kind": "positive_int", "gpu": 1_000_003, "interpreter": 4099},
    },
    "tolerances": {"float32": {"atol": 1e-6, "rtol": 1e-6, "source": "fp32-reduction"}},
}
"""
BODY = """

def run(k):
    pass


def aot_builds(backend):
    yield from ()
"""


def _module(tmp_path: Path, declaration: str, *, name: str = "saxpy", body: str = BODY) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text('"""A kernel."""\n\nimport triton\n\n' + textwrap.dedent(declaration) + body)
    return path


def _error(path: Path) -> CatalogError:
    with pytest.raises(CatalogError) as err:
        read_module(path)
    e = err.value
    assert str(path) in e.message, e.message  # names the file
    assert e.fix, "a fix"
    assert "\n" not in e.one_line()
    assert isinstance(e, DataError) and e.exit_code == 5
    return e


# --- the kernels rocmkit ships -------------------------------------------------------------


def test_the_shipped_kernels_in_report_order() -> None:
    ks = catalog.kernels()
    assert [k.check for k in ks] == [
        "triton.vector_add",
        "triton.softmax",
        "triton.matmul",
        "triton.layernorm",
        "triton.atomics",
    ]
    assert [k.level for k in ks] == [1, 1, 2, 2, 2]
    assert catalog.kernel("matmul").timeout_s == 600.0 and catalog.kernel("softmax").timeout_s == 180.0
    with pytest.raises(Exception, match="no Triton smoke kernel named 'nope'"):
        catalog.kernel("nope")


def test_declared_tolerances_keep_their_sources_and_the_cdna2_override() -> None:
    assert tolerance("matmul", "bfloat16").source == SOURCES["bf16-ulp"]
    assert tolerance("layernorm", "float32").source == SOURCES["fp32-reduction"]
    assert "05-layer-norm" in tolerance("layernorm", "float16").source
    assert tolerance("matmul", "bfloat16", "gfx90a").rtol == 2e-2
    assert tolerance("layernorm", "float16", "gfx90a").rtol == 0.0  # no override declared
    # The attention check is not a Triton kernel: its table stays shared.
    assert tolerance("sdpa", "float16", "gfx90a:xnack-").atol == 2e-2
    assert tolerance("sdpa", "float16", "gfx942").atol == 1e-2


def test_reading_the_catalog_imports_no_kernel_module_nor_triton(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the doctor's parent does for --list and level 0: it must never import triton."""
    names = {f"rocmkit.kernels.{k.name}" for k in catalog.kernels()}
    for mod in list(sys.modules):
        if mod in names or mod == "triton" or mod.startswith("triton."):
            monkeypatch.delitem(sys.modules, mod)
    found = read_folder(KERNELS_DIR)
    assert {f"rocmkit.kernels.{k.name}" for k in found} == names
    assert not [m for m in sys.modules if m in names or m == "triton" or m.startswith("triton.")]


def test_a_helper_module_without_a_declaration_is_no_kernel(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text('"""CHECK = {} in a docstring is no declaration."""\nX = 1\n')
    assert read_module(tmp_path / "helpers.py") is None
    _module(tmp_path, GOOD)
    assert [k.name for k in read_folder(tmp_path)] == ["saxpy"]


def test_a_good_declaration(tmp_path: Path) -> None:
    k = read_module(_module(tmp_path, GOOD))
    assert k is not None
    assert (k.check, k.level, k.timeout_s, k.order) == ("triton.saxpy", 2, 180.0, 100)
    opt = k.options["saxpy_n"]
    assert (opt.default("rocm"), opt.default("cpu")) == (1_000_003, 4099)
    assert k.tolerances.pick("saxpy", "float32").source == SOURCES["fp32-reduction"]


def test_a_one_line_declaration_is_read_from_the_whole_module(tmp_path: Path) -> None:
    one_line = (
        'CHECK = {"level": 1, "description": "d", "tolerances": {"float32": {"atol": 0, "rtol": 0, '
        '"source": "exact-int"}}}\n\n\ndef helper():\n    return {\n        "x": 1,\n}\n'
    )
    k = read_module(_module(tmp_path, one_line))
    assert k is not None and k.level == 1 and k.tolerances.pick("saxpy", "float32").exact


# --- a bad declaration is one error naming the file and the fix ------------------------------


@pytest.mark.parametrize(
    ("old", "new", "fragment"),
    [
        ('"level": 2,\n', "", "lacks 'level'"),
        ('"level": 2', '"level": "2"', "not an integer"),
        ('"level": 2', '"level": 7', "level'] is 7"),
        ('"level": 2', '"level": 2, "timeout": 60', "unknown key 'timeout'"),
        ('"description": "y = a*x + y"', '"description": ""', "not a non-empty string"),
        ('"gpu": 1_000_003', '"gpu": 2**20', "not a literal"),
        ('"gpu": 1_000_003', '"gpu": N', "not a literal"),
        ('"gpu": 1_000_003', '"gpu": -1', "saxpy_n=-1 is not a positive integer"),
        ('"kind": "positive_int"', '"kind": "integer"', "'kind'] is 'integer'"),
        ('"kind": "positive_int"', '"kind": "shape"', "kind 'shape' needs 'rank'"),
        ('"help": "elements", ', "", "lacks 'help'"),
        ('"atol": 1e-6', '"atol": -1', "must not be negative"),
        ('"source": "fp32-reduction"', '"source": "fp32-reductoin"', "names no shared source"),
        ('"source": "fp32-reduction"', '"source": 3', "not a non-empty string"),
        ('"tolerances": {', '"tolerances": {}, "x": {', "unknown key 'x'"),
        ('"level": 2,', '"level": 2, "level": 1,', "the key 'level' twice"),
        (
            '"tolerances": {',
            '"arch_tolerances": {"cdna3": {}}, "tolerances": {',
            "unknown family 'cdna3'",
        ),
        (
            '"tolerances": {',
            '"arch_tolerances": {"cdna2": {"float16": {"atol": 0, "rtol": 0, "source": "exact-int"}}}, '
            '"tolerances": {',
            "'float16'] has no base tolerance",
        ),
    ],
)
def test_a_malformed_declaration_is_one_clear_error(tmp_path: Path, old: str, new: str, fragment: str) -> None:
    assert old in GOOD
    e = _error(_module(tmp_path, GOOD.replace(old, new, 1)))
    assert fragment in e.message, e.message


def test_a_non_literal_says_what_and_where_and_how_to_write_one(tmp_path: Path) -> None:
    e = _error(_module(tmp_path, GOOD.replace('"gpu": 1_000_003', '"gpu": 2**20 + 7')))
    # The module's docstring, import and blank lines come first: line 9 of the file.
    assert "is not a literal: '2 ** 20 + 7' on line 9" in e.message, e.message
    assert e.fix and "literals only" in e.fix and "without importing" in e.fix
    e = _error(_module(tmp_path, GOOD.replace('"level": 2,', '"level": 2, "level": 1,')))
    assert "the key 'level' twice (line 6)" in e.message, e.message


def test_a_declaration_that_is_no_dict(tmp_path: Path) -> None:
    assert "not a dict" in _error(_module(tmp_path, 'CHECK = ["level", 1]\n')).message


def test_a_kernel_module_without_its_run_function(tmp_path: Path) -> None:
    e = _error(_module(tmp_path, GOOD, body="\n\ndef aot_builds(backend):\n    yield from ()\n"))
    assert "defines no top-level run()" in e.message


def test_two_kernels_may_not_declare_the_same_option(tmp_path: Path) -> None:
    _module(tmp_path, GOOD, name="saxpy")
    _module(tmp_path, GOOD, name="saxpy2")
    with pytest.raises(CatalogError, match="'saxpy_n' is declared by kernel saxpy too") as err:
        read_folder(tmp_path)
    assert "saxpy2.py" in err.value.message


def test_a_kernel_may_not_take_a_shared_options_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _module(tmp_path, GOOD.replace('"saxpy_n"', '"repeats"'))
    monkeypatch.setattr(sizes, "kernels", lambda: read_folder(tmp_path))
    sizes.all_options.cache_clear()
    try:
        with pytest.raises(CatalogError, match="'repeats' is one every check shares") as err:
            sizes.all_options()
        assert str(path) in err.value.message
    finally:
        sizes.all_options.cache_clear()
