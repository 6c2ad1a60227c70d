"""Which installer acts on an environment: uv when present, else pip, or the one the user named.

Its own module so journal recovery (:mod:`rocmkit.install.recover`) and the install flow choose
alike without recovery importing the flow."""

from __future__ import annotations

from typing import Literal

from rocmkit.errors import ToolError
from rocmkit.install.base import Installer, Limits
from rocmkit.install.pip import PipInstaller, pip_available
from rocmkit.install.uv import UvInstaller
from rocmkit.install.venv import find_uv
from rocmkit.pyenv import PyEnv

InstallerChoice = Literal["auto", "uv", "pip"]


def choose_installer(choice: InstallerChoice, target: PyEnv, limits: Limits) -> Installer:
    """uv when present (fast, no pip needed in the venv), else pip; or what the user named."""
    if choice == "uv" or (choice == "auto" and find_uv() is not None):
        return UvInstaller(target, limits=limits)
    if choice == "auto" and not pip_available(target):
        raise ToolError("neither uv nor pip is available", "`pip install uv` (or pip) next to rocmkit")
    return PipInstaller(target, limits=limits)
