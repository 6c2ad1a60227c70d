"""Option families folded into one option each, so that no command's ``--help`` runs past about
20 options: ``--skip guard,verify``, ``--allow redirect=HOST``, ``--timeout net=30``,
``--report junit=FILE``.

A family is a fixed vocabulary of words, each a bare word (``guard``) or ``word=VALUE``
(``redirect=HOST``), given comma-separated or repeated. Each word sets one field of the
command's request, so the requests, and the core behind them, are unchanged: ``--skip guard``
is the request's ``no_guard=True`` as ``--no-guard`` was. The flags a family replaces stay one
release as hidden options (:class:`Renamed`) that set the same field and say the new spelling
on stderr once (:func:`rocmkit.cli.renamed.renamed`).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from rocmkit.errors import UsageError


@dataclass(frozen=True)
class Word:
    """One word of a family: the request field it sets, and the value it takes."""

    field: str
    # The value's name in help and errors ("HOST"); None: a bare word, which sets the field True.
    value: str | None = None
    # The value read from the text after "=", given how to name it in an error ("--timeout net=")
    # and the text; a bad one raises UsageError.
    convert: Callable[[str, str], Any] = lambda _label, text: text
    # The field is a tuple: each use of the word adds to it (--allow redirect=a,redirect=b).
    many: bool = False
    # What it does, for --help (each command lists the words it takes).
    help: str = ""


def seconds(label: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise UsageError(f"{label}{text} is not a positive number of seconds", f"write {label}30 (any number above 0)")
    return value


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_name(label: str, text: str) -> str:
    if not _ENV_NAME.fullmatch(text):
        raise UsageError(f"{label}{text} is not an environment variable name", f"write {label}NAME, e.g. {label}MY_VAR")
    return text


def host(label: str, text: str) -> str:
    # The host alone, as the index check compares it: no scheme, path or user.
    if not re.fullmatch(r"[A-Za-z0-9.\-\[\]:]+", text):
        raise UsageError(f"{label}{text} is not a host name", f"write the host alone, e.g. {label}mirror.example.org")
    return text


def path(_label: str, text: str) -> Path:
    return Path(text)


# Every family's vocabulary; a command takes the words that apply to it (fold_option's ``words``).
SKIP: Mapping[str, Word] = {
    "guard": Word("no_guard", help="torch pinned against later pip/uv installs"),
    "verify": Word("no_verify", help="the check in a child process after installing"),
    "compile": Word("no_compile", help="byte code: the check's imports leave no .pyc files"),
    "companions": Word("no_companions", help="torchvision/torchaudio: torch and its Triton only, for minimal images"),
}
ALLOW: Mapping[str, Word] = {
    "insecure-index": Word(
        "allow_insecure_index", help="plain-http and file:// indexes, warned about; env ROCMKIT_ALLOW_INSECURE_INDEX=1"
    ),
    "redirect": Word("allow_redirect", "HOST", host, many=True, help="a redirect to HOST is followed"),
    "env": Word("allow_env", "NAME", env_name, many=True,
        help="a plan or lock sets NAME in bin/activate, beyond HSA_OVERRIDE_GFX_VERSION and *_VISIBLE_DEVICES"),
    "system-packages": Word("break_system_packages", help="change an externally managed, PEP 668, Python"),
    "untrusted-python": Word("allow_untrusted_python", help="as root, run a --venv/--python another user can "
        "change at start-up (its owner's code then runs as root; a WARNING says why)"),
}
TIMEOUT: Mapping[str, Word] = {
    "install": Word("install_timeout", "SECONDS", seconds, help="per pip/uv run"),
    "net": Word("net_timeout", "SECONDS", seconds, help="per network request of pip/uv"),
    "probe": Word("probe_timeout", "SECONDS", seconds, help="the index reachability check"),
}

# Files a command also writes, each in its format: doctor's junit and prom, bench's csv, html,
# svg and markdown.
REPORT: Mapping[str, Word] = {
    "junit": Word("junit", "FILE", path, help="JUnit XML"),
    "prom": Word("prom", "FILE", path, help="a node_exporter textfile, mode 0644"),
    "csv": Word("csv_path", "FILE", path, help="one row per model"),
    "html": Word("html_path", "FILE", path, help="a self-contained page with the speedup chart"),
    "svg": Word("svg_path", "FILE", path, help="the speedup chart alone"),
    "markdown": Word("md_path", "FILE", path, help="the table"),
}


class Folded(tuple):  # type: ignore[type-arg]
    """The (field, value) pairs one command-line value of a family set."""


class Family(click.ParamType[Folded, Any]):
    """``WORD[=VALUE][,WORD[=VALUE]…]`` of a fixed vocabulary; ``bare``: the word a value
    without a word means (``--timeout 60`` is ``install=60``)."""

    name = "family"

    def __init__(self, flag: str, words: Mapping[str, Word], *, bare: str | None = None, split: bool = True) -> None:
        self.flag = flag
        self.words = dict(words)
        self.bare = bare
        self.split = split

    def spellings(self) -> list[str]:
        return [w if word.value is None else f"{w}={word.value}" for w, word in self.words.items()]

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Folded:
        if isinstance(value, Folded):
            return value
        pairs: list[tuple[str, Any]] = []
        for raw in str(value).split(",") if self.split else [str(value)]:
            item = raw.strip()
            if not item:
                continue  # "guard," as --with and --build read a list
            word, eq, text = item.partition("=")
            if not eq and self.bare is not None and word not in self.words:
                word, eq, text = self.bare, "=", item
            spec = self.words.get(word)
            known = ", ".join(self.spellings())
            if spec is None:
                raise UsageError(
                    f"{self.flag} {item} is not one of {known}",
                    f"give {self.flag} one or more of {known}" + (", comma-separated or repeated" if self.split else ""),
                )
            if spec.value is None and eq:
                raise UsageError(f"{self.flag} {item}: {word} takes no value", f"write {self.flag} {word}")
            if spec.value is not None and not (eq and text):
                raise UsageError(f"{self.flag} {item}: {word} needs a value", f"write {self.flag} {word}={spec.value}")
            label = f"{self.flag} " if word == self.bare and item == text else f"{self.flag} {word}="
            pairs.append((spec.field, True if spec.value is None else spec.convert(label, text)))
        if not pairs:
            known = ", ".join(self.spellings())
            raise UsageError(f"{self.flag} {value!r} names nothing", f"give {self.flag} one or more of {known}")
        return Folded(pairs)


def fold_option(family: Family, *, intro: str, metavar: str, defaults: Mapping[str, Any] | None = None) -> click.Option:
    """The repeatable option of ``family``; its help is ``intro`` then each word's, with its
    default from ``defaults`` (field -> value) where given."""
    parts = []
    for word, spec in family.words.items():
        spelling = spec.value if word == family.bare else word if spec.value is None else f"{word}={spec.value}"
        default = (defaults or {}).get(spec.field)
        parts.append(f"{spelling} ({spec.help}{'' if default is None else f'; {default:g}'})")
    help = f"{intro}{', comma-separated or repeated' if family.split else ', repeated'}: {', '.join(parts)}."
    return click.Option(
        [family.flag, family.flag.lstrip("-").replace("-", "_")], type=family, multiple=True, metavar=metavar,
        help=help, show_default=False,
    )


def words(vocabulary: Mapping[str, Word], *names: str, **helps: str) -> dict[str, Word]:
    """The words ``names`` of ``vocabulary``, in that order; ``helps`` says one in this command's
    terms (``insecure_index="..."`` for insecure-index)."""
    out = {}
    for name in names:
        said = helps.get(name.replace("-", "_"))
        out[name] = vocabulary[name] if said is None else dataclasses.replace(vocabulary[name], help=said)
    return out


def skip_option(*names: str) -> click.Option:
    return fold_option(Family("--skip", words(SKIP, *names)), intro="Leave steps out", metavar="STEP")


def allow_option(*names: str, **helps: str) -> click.Option:
    family = Family("--allow", words(ALLOW, *names, **helps))
    return fold_option(family, intro="Let through what is refused by default", metavar="WHAT")


def timeout_option(*names: str, defaults: Mapping[str, Any]) -> click.Option:
    family = Family("--timeout", words(TIMEOUT, *names), bare="install")
    return fold_option(family, intro="Limits in seconds", metavar="[net=|probe=]SECONDS", defaults=defaults)


def report_option(*names: str, intro: str) -> click.Option:
    # A file name may hold a comma: one file per --report.
    return fold_option(Family("--report", words(REPORT, *names), split=False), intro=intro, metavar="FORMAT=FILE")


def unfold(*names: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorate a command body: the family options ``names`` become the request fields their
    words set, merged with what their hidden old flags set (a list grows; a flag or a value is
    set by the family when given there)."""

    def wrap(body: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(body)
        def command(**params: Any) -> None:
            for name in names:
                given = params.pop(name, None)
                # A family is repeatable (a tuple of Folded); --backend is given once (one Folded).
                for folded in (given,) if isinstance(given, Folded) else given or ():
                    for field, value in folded:
                        old = params.get(field)
                        params[field] = (*old, value) if isinstance(old, tuple) else value
            body(**params)

        return command

    return wrap


def with_params(*params: click.Parameter) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Add ready-made click parameters to a command being decorated, as ``@click.option`` does
    (the verbs take the same objects, narrowed, in :func:`rocmkit.cli.verbs.derived`)."""

    def wrap(f: Callable[..., None]) -> Callable[..., None]:
        held: list[click.Parameter] = f.__dict__.setdefault("__click_params__", [])
        held.extend(reversed(params))
        return f

    return wrap


class Renamed(click.Option):
    """An old flag kept one release: hidden, it sets its request field as before, and
    :func:`rocmkit.cli.renamed.renamed` says ``new`` (its value -> the new spelling)."""

    def __init__(self, *args: Any, new: Callable[[Any], str], **kwargs: Any) -> None:
        kwargs["hidden"] = True
        super().__init__(*args, **kwargs)
        self.new = new

    def spelling(self, value: Any) -> tuple[str, str]:
        """(the old spelling as typed, the new one)."""
        flag = max(self.opts, key=len)
        if self.is_flag:
            return flag, self.new(value)
        values = value if isinstance(value, tuple) else (value,)
        return " ".join(f"{flag} {v:g}" if isinstance(v, float) else f"{flag} {v}" for v in values), self.new(value)


def renamed_flag(flag: str, new: str, *, field: str | None = None) -> Renamed:
    """``--no-guard`` -> ``--skip guard``: an old on/off flag."""
    return Renamed([flag, field or "_".join(flag.lstrip("-").split("-"))], is_flag=True, new=lambda _v: new)


def renamed_report(flag: str, word: str, field: str) -> Renamed:
    """``--junit FILE`` -> ``--report junit=FILE``."""
    return renamed_value(flag, lambda v: f"--report {word}={v}", field=field,
        type=click.Path(dir_okay=False, path_type=Path))


def renamed_value(
    flag: str, new: Callable[[Any], str], *, field: str, multiple: bool = False, **kwargs: Any
) -> Renamed:
    """``--net-timeout 30`` -> ``--timeout net=30``: an old option with a value."""
    return Renamed([flag, field], multiple=multiple, new=new, **kwargs)


# The old --allow-redirect, on every command that follows index redirects.
REDIRECT_RENAMED = renamed_value(
    "--allow-redirect", lambda v: "--allow " + ",".join(f"redirect={h}" for h in v), field="allow_redirect",
    multiple=True, metavar="HOST",
)
