"""The guard pins what was installed (and the torch-tied --with libraries); an install that cannot
be resolved against it is one line naming the pin and the fix; the uv-project tables. No processes."""

from __future__ import annotations

from pathlib import Path

from rocmkit.companions.export import apply_to_pyproject, uv_project_text
from rocmkit.install.conflict import guard_conflict
from rocmkit.install.guard import constraints_text, installed_view, pins_for
from rocmkit.plan import Backend, Plan, WithPackage

TV = "torchvision==0.20.1+rocm6.2"
PLAN = Plan(
    backend=Backend.parse("rocm6.2"),
    torch_version="2.5.1+rocm6.2",
    triton="pytorch-triton-rocm==3.1.0",
    requirements=("torch==2.5.1+rocm6.2", TV),
    companions=(TV,),
    index_urls=("https://download.pytorch.org/whl/rocm6.2",),
    with_packages=(
        WithPackage(name="xformers", requirement="xformers==0.0.29", how="wheel",
                    index_url="https://download.pytorch.org/whl/rocm6.2", pins_torch=True),
        WithPackage(name="bitsandbytes", requirement="bitsandbytes==0.50.2", how="wheel",
                    index_url="https://pypi.org/simple"),
        WithPackage(name="flash-attn", requirement="flash-attn==2.8.3.post2", how="source", pins_torch=True),
    ),
)


def test_the_guard_pins_what_was_installed_and_the_torch_tied_libraries() -> None:
    assert pins_for(PLAN) == [
        "torch==2.5.1+rocm6.2",
        TV,
        "pytorch-triton-rocm==3.1.0",
        "xformers==0.0.29",
        "flash-attn==2.8.3.post2",
    ]
    left = installed_view(PLAN, (TV,))
    assert TV not in pins_for(left) and TV not in constraints_text(left)
    assert installed_view(PLAN, ()) is PLAN
    assert "rocmkit install --with PKG" in constraints_text(PLAN)


UV_TEXT = """  × No solution found when resolving dependencies:
  ╰─▶ Because all versions of torchvision depend on torch==9.9.0 and all versions of timmish depend
      on torchvision==0.20.1, we can conclude that all versions of timmish depend on torch==9.9.0.
      And because you require torch==2.5.1+rocm6.2 and timmish, we can conclude that your
      requirements are unsatisfiable.
"""
PIP_TEXT = """ERROR: Cannot install timmish==1.0 because these package versions have conflicting dependencies.

The conflict is caused by:
    The user requested torch==2.5.1+rocm6.2
    The user requested (constraint) torch==2.5.1+rocm6.2
    timmish 1.0 depends on torch==9.9.0
"""


def test_an_unresolvable_install_names_the_guards_pin_and_the_fix(tmp_path: Path) -> None:
    guard = tmp_path / "rocmkit-constraints.txt"
    guard.write_text(constraints_text(PLAN))
    for text in (UV_TEXT, PIP_TEXT):
        err = guard_conflict("uv (resolving)", text, ("torch==2.5.1+rocm6.2", "timmish"), (guard,))
        assert err is not None and err.exit_code == 7
        assert "timmish cannot be installed beside the guard's torch==2.5.1+rocm6.2" in err.message
        assert str(guard) in err.message and err.fix and "rocmkit install --torch" in err.fix
    # Another failure, or one the guard's pins are not part of, is left as it was.
    assert guard_conflict("uv", "error: connection refused", ("timmish",), (guard,)) is None
    assert guard_conflict("uv", "No solution found: numpy==3 does not exist", ("numpy==3",), (guard,)) is None
    # The plan's own torch does not resolve (its mpmath is missing on the index): uv names
    # torch, which the guard pins too, but nothing else was asked for; not the guard's doing.
    own = (
        "No solution found when resolving dependencies\n  cause: Because only mpmath==1.4.1 is available and "
        "all versions of sympy depend on mpmath>=1.1.0,<1.4, we can conclude that all versions of sympy "
        "cannot be used.\n  And because all versions of torch depend on sympy==1.14.0 and you require "
        "torch==2.5.1+rocm6.2, we can conclude that your requirements are unsatisfiable."
    )
    assert guard_conflict("uv", own, ("torch==2.5.1+rocm6.2",), (guard,)) is None


def test_uv_project_tables_and_a_pyproject_written_twice_is_unchanged() -> None:
    text = uv_project_text(PLAN)
    assert '[[tool.uv.index]]\nname = "pytorch-rocm6-2"\nurl = "https://download.pytorch.org/whl/rocm6.2"\nexplicit = true' in text
    assert "xformers = [{ index = \"pytorch-rocm6-2\", marker = \"sys_platform == 'linux'\" }]" in text
    assert "bitsandbytes =" not in text  # from PyPI: no source entry
    assert "#   \"pytorch-triton-rocm==3.1.0 ; sys_platform == 'linux'\"," in text
    original = '[project]\nname = "x"  # mine\nversion = "1"\ndependencies = ["torch"]\n'
    once = apply_to_pyproject(original, PLAN)
    assert once.startswith('[project]\nname = "x"  # mine\n')
    assert apply_to_pyproject(once, PLAN) == once
