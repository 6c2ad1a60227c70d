"""The click group behind ``rocmkit``, and the one place where a
:class:`rocmkit.errors.RocmkitError` becomes an exit code (:func:`run`).

Subcommands live one per module in this package and are imported only when
invoked, so ``rocmkit --help`` and ``rocmkit detect`` start fast and never
import torch. Data goes to stdout, messages to stderr.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from types import TracebackType
from typing import Any

import click

from rocmkit import __version__
from rocmkit.cli.request import OUT
from rocmkit.errors import RocmkitError, Terminated, UsageError, storage_error

# name -> (module, short help). Each module defines a click command named ``cli``.
COMMANDS: dict[str, tuple[str, str]] = {
    "detect": ("rocmkit.cli.detect", "Detect GPUs, ROCm, drivers, host facts and permissions."),
    "snapshot": ("rocmkit.cli.snapshot", "Write a capture of this machine for a bug report."),
    "matrix": ("rocmkit.cli.matrix", "Check, show and refresh the compatibility matrices."),
    "resolve": ("rocmkit.cli.resolve", "Pick the torch/triton builds and index for this machine."),
    "install": ("rocmkit.cli.install", "Install the resolved builds into a virtual environment."),
    "lock": ("rocmkit.cli.verbs:lock", "Write the plan's pinned closure with hashes to a file."),
    "wheelhouse": ("rocmkit.cli.verbs:wheelhouse", "Download the plan's closure into a folder."),
    "export": ("rocmkit.cli.verbs:export", "The plan as pylock.toml, requirements or a uv project's tables."),
    "build": ("rocmkit.cli.build", "Build PyTorch and Triton from source when no wheel fits."),
    "doctor": ("rocmkit.cli.doctor", "Validate the environment, Triton kernels and torch.compile."),
    "bench": ("rocmkit.cli.bench", "Benchmarks: torch.compile vs eager on a built-in model set."),
    "docker": ("rocmkit.cli.docker", "Render container images from the matrix."),
    "fleet": ("rocmkit.cli.fleet", "Summarize doctor reports from many nodes."),
    "slurm": ("rocmkit.cli.slurm", "Slurm node health check, prolog and onboarding task."),
}


def _empty(value: Any) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_empty(v) for v in value)
    return isinstance(value, str) and not value.strip()


def refuse_empty_values(command: click.Command) -> click.Command:
    """Every option of ``command`` (and its subcommands) given an empty value on the command line
    (``--backend ""``, ``--index-base ""``) is a usage error, never the option left out: a
    variable that expanded to nothing must not render the CPU image or drop a mirror."""
    from click.core import ParameterSource

    if getattr(command, "_rocmkit_no_empty", False):
        return command
    command._rocmkit_no_empty = True  # type: ignore[attr-defined]  # once per command object
    for param in command.params:
        if not isinstance(param, click.Option) or param.is_flag or param.count:
            continue

        def process(
            ctx: click.Context, value: Any, *, _param: click.Option = param, _orig: Any = param.process_value
        ) -> Any:
            if _param.name and ctx.get_parameter_source(_param.name) is ParameterSource.COMMANDLINE and _empty(value):
                flag = max(_param.opts, key=len)
                raise UsageError(
                    f"{flag} is empty (given as {value!r} on the command line)",
                    f"give {flag} a value ({_param.metavar or 'see --help'}), or leave the option out",
                )
            return _orig(ctx, value)

        param.process_value = process  # type: ignore[method-assign]
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            refuse_empty_values(sub)
    return command


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        # "module" (its `cli`) or "module:name", for a module holding several commands (cli/verbs.py).
        name, _, attr = entry[0].partition(":")
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                return None
            raise
        command: click.Command = getattr(module, attr or "cli")
        return refuse_empty_values(command)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Short help comes from the table, so `--help` imports no subcommand module.
        rows = [(name, help_) for name, (_, help_) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="rocmkit")
def cli() -> None:
    """rocmkit: from "nothing works" to "PyTorch and Triton proven fast on this node".

    \b
    Start here:
      rocmkit detect            what this machine has
      rocmkit resolve           which torch/triton builds fit, and why
      rocmkit install --venv V  install them, safely
      rocmkit doctor            prove they work (and are fast)
    """


INTERRUPTED_EXIT = 10


def _on_signal(signum: int, frame: object) -> None:
    raise Terminated(signum)


def _install_signal_handlers() -> None:
    """SIGTERM and SIGHUP unwind like Ctrl-C (an install restores the venv), not die mid-step."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _on_signal)


def _redacted_traceback(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    """A crash (a bug) still shows its traceback, with URL credentials masked: its message
    may quote a mirror URL, and tracebacks are pasted into bug reports."""
    import traceback

    from rocmkit.util.redact import redact_text

    sys.stderr.write(redact_text("".join(traceback.format_exception(kind, exc, tb))))


def print_error(exc: RocmkitError, argv: Sequence[str]) -> None:
    """The one error printer: what is wrong on one line, then a ``fix:`` line per fix, the
    failed command line written into the fixes that rerun it (rocmkit.errors.rerun)."""
    from rocmkit.util.redact import redact_text

    # Errors end up in CI logs: a mirror's user:token in a URL never does.
    for line in exc.lines(argv):
        OUT.message(redact_text(line))


def run(argv: list[str] | None = None) -> Any:
    """Runs the CLI and turns rocmkit's errors into one line and an exit code."""
    from rocmkit.util.ticker import shared

    _install_signal_handlers()
    # A command's waits show on stderr's status line when it is a terminal, and off one as a
    # "still running" line whenever stderr got nothing for 4 s (util/ticker.py; --quiet: off).
    tick = shared()
    before = (tick.enabled, tick.heartbeat, tick.prefix)
    tick.enabled = tick.heartbeat = True
    tick.hold()
    sys.excepthook = _redacted_traceback
    try:
        args = sys.argv[1:] if argv is None else list(argv)
        # The command line, for a command that records it (bench): cli.request.command_line.
        return cli.main(args=args, prog_name="rocmkit", standalone_mode=False, obj={"argv": tuple(args)})
    except RocmkitError as exc:
        print_error(exc, sys.argv[1:] if argv is None else argv)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        OUT.message("error: interrupted")
        sys.exit(INTERRUPTED_EXIT)
    except click.UsageError as exc:
        # A bad argument is bad input like any other (exit 4; 2 means "doctor: warnings"), and
        # reads like every other error: what is wrong, then the fix (the command's help).
        where = exc.ctx.command_path if exc.ctx is not None else "rocmkit"
        message = exc.format_message().rstrip(".").replace(". (Did you mean", " (did you mean")
        print_error(UsageError(message[:1].lower() + message[1:], f"{where} --help   # what it takes"), ())
        sys.exit(UsageError.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt as exc:
        what = f"signal {exc.signum}" if isinstance(exc, Terminated) else "Ctrl-C"
        OUT.message(f"error: interrupted ({what})")
        sys.exit(INTERRUPTED_EXIT)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as exc:
        error = storage_error(exc)
        if error is None and exc.filename is not None:
            # A path the user named that cannot be used (missing folder, /proc, ...): bad input.
            error = UsageError(
                f"cannot use {exc.filename}: {exc.strerror or exc}", "check the path and its permissions"
            )
        if error is None:
            raise
        print_error(error, sys.argv[1:] if argv is None else argv)
        sys.exit(error.exit_code)
    finally:
        tick.release()
        # As it was: a library call after this command (in the same process) draws nothing and
        # says nothing, and no command's counter ("doctor [33/33] ") stays on its lines.
        tick.enabled, tick.heartbeat, tick.prefix = before
