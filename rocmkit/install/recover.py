"""Journal recovery: finish the restore an install killed in an environment (kill -9, OOM)
left behind, before anything looks at what the environment holds.

The small interface a command that uses a venv without installing (``doctor``) calls:
:func:`recover_for_python`. In the common case (no journal) it costs one ``lstat`` and imports
nothing of install's flow, uv or pip; only a journal found brings in the restore (the installer
that undoes the change, :mod:`rocmkit.install.transaction`). The install flow uses the same
:func:`recover_pending` under its own lock before it changes anything.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.install import journal
from rocmkit.util.say import Say

if TYPE_CHECKING:
    from rocmkit.install.base import Installer
    from rocmkit.pyenv import PyEnv


def recover_for_python(python: Path, echo: Say) -> bool:
    """For commands that use a venv without installing (``doctor``): True when a killed
    install's restore was finished here."""
    # venv/bin/python -> venv: checked before starting any process or importing the restore
    # (the common case: none). lexists: a journal planted as a symlink is refused (said), not skipped.
    if not journal.present(python.parent.parent / journal.JOURNAL_NAME):
        return False
    from rocmkit.errors import LockHeldError
    from rocmkit.install.base import Limits
    from rocmkit.install.installers import choose_installer
    from rocmkit.pyenv import probe

    target = probe(python)
    try:
        with journal.exclusive(target):
            return recover_pending(target, choose_installer("auto", target, Limits()), echo)
    except LockHeldError:
        echo(f"rocmkit: an install is changing {target.prefix} right now; what is checked may change under it")
        return False


def recover_pending(target: PyEnv, installer: Installer, echo: Say) -> bool:
    """Finish the restore of an install that was killed (kill -9, OOM) in ``target``; the
    caller holds the environment's lock (:func:`rocmkit.install.journal.exclusive`)."""
    from rocmkit.install.transaction import restore_state

    with signals_deferred(echo):
        return journal.recover(target, lambda j: restore_state(installer, j.backup()), echo)


@contextmanager
def signals_deferred(echo: Say, *, reraise: bool = True) -> Iterator[None]:
    """While a restore runs, SIGINT/SIGTERM/SIGHUP wait: a second Ctrl-C must not leave
    half a restore (the journal would still finish it later, but now is better).
    ``reraise``: act on a deferred signal afterwards (not when already unwinding from one)."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def note(signum: int, _frame: object) -> None:
        if not caught:
            echo("rocmkit: restoring the environment first; the signal is handled after that")
        caught.append(signum)

    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {sig: signal.signal(sig, note) for sig in sigs}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    if caught and reraise:
        # Restored: now the signal does what it would have done.
        from rocmkit.errors import Terminated

        raise KeyboardInterrupt if caught[0] == signal.SIGINT else Terminated(caught[0])
