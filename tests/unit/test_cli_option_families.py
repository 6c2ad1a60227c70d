"""Option families (cli/folds.py): each command's --help stays near 20 options, each family
parses its words and refuses a bad one in one line, and each flag a family replaced still works
for a release and says its new spelling on stderr, once.

The commands run through ``main`` (as a shell would); the carrying out is replaced by a recorder
of the request the command made, so the test shows what each spelling asks for, not an install.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click
import pytest

from rocmkit.cli.folds import Renamed
from rocmkit.cli.group import cli as root
from rocmkit.errors import UsageError
from tests.support.cli import rocmkit

MOST_OPTIONS = 20
# A command above MOST_OPTIONS, with how many it shows and why they are not folded (yet).
_PLAN = ("what to plan (--torch --backend --framework --channel --capture --python --strict-data --with --build "
    "--upgrade): each a question of its own, spelled alike in install, lock, wheelhouse, resolve and export")
_INPUT = ("and install's inputs (--plan FILE, --from-lock FILE, --wheelhouse DIR): each names what the file is, as "
    "the verbs that write them do (a single --from would guess a file's kind from its contents)")
WIDER = {
    "install": (24, f"{_PLAN}; {_INPUT}"),
    "lock": (21, _PLAN),
    "wheelhouse": (21, _PLAN),
    "doctor": (24, "which checks (--level --only --skip --framework --backend --list), on what (--capture --venv "
        "--python --image-build), how (--jobs --isolation --timeout-scale --fresh --warm-caches --strict --set): "
        "each a question of its own"),
    "bench models": (23, "what a measurement is (--mode --dtype --size --repeat --warmup --compile-mode --cosine "
        "--threads --device --impl): each a question of its own"),
}


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            out += _commands(command, (*path, name))
        else:
            out.append((" ".join((*path, name)), command))
    return out


def _visible(command: click.Command) -> list[str]:
    ctx = click.Context(command)
    help_option = command.get_help_option(ctx)
    return [
        max(p.opts, key=len) for p in command.get_params(ctx)
        if isinstance(p, click.Option) and not p.hidden and p is not help_option
    ]


def test_no_command_shows_more_than_twenty_options_without_a_reason() -> None:
    """A new option needs a fold into a family, or a line in WIDER saying why."""
    commands = _commands(root)
    assert len(commands) > 20  # the walk reached every group's commands
    over = {name: len(_visible(c)) for name, c in commands if len(_visible(c)) > MOST_OPTIONS}
    assert over == {name: most for name, (most, _why) in WIDER.items()}


# -- the families' words -------------------------------------------------------------------------


@pytest.fixture
def installs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The InstallRequests `rocmkit install/lock/wheelhouse` made (nothing is installed)."""
    seen: list[Any] = []

    class Done:
        def to_dict(self) -> dict[str, str]:
            return {}

    def carry_out(req: Any, say: Any, session: Any = None) -> Done:
        seen.append(req)
        return Done()

    monkeypatch.setattr("rocmkit.install.carry.carry_out", carry_out)
    return seen


class _Planned(Exception):
    pass


@pytest.fixture
def resolves(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The ResolveRequests `rocmkit resolve/export` made (stopped before planning)."""
    seen: list[Any] = []

    def planned(req: Any, session: Any) -> None:
        seen.append(req)
        raise UsageError("stopped by the test")

    monkeypatch.setattr("rocmkit.cli.resolve.planned", planned)
    return seen


@pytest.fixture
def benches(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The BenchRequests `rocmkit bench models` made (nothing is measured)."""
    seen: list[Any] = []

    def carry_out(req: Any, argv: Any, out: Any) -> int:
        seen.append(req)
        return 0

    monkeypatch.setattr("rocmkit.bench.carry.carry_out", carry_out)
    return seen


def _fields(req: Any, *names: str) -> dict[str, Any]:
    return {n: getattr(req, n) for n in names}


def test_skip_allow_and_timeout_set_installs_fields(installs: list[Any], tmp_path: Path) -> None:
    venv = str(tmp_path / "v")
    result = rocmkit(
        "install", "--venv", venv, "--skip", "guard,verify,", "--skip", "compile",
        "--allow", "insecure-index,redirect=mirror.example.org", "--allow", "env=MY_VAR,system-packages",
        "--allow", "redirect=other.example.org", "--timeout", "60", "--timeout", "net=7.5,probe=2",
    )
    assert result.code == 0, result.stderr
    (req,) = installs
    assert _fields(req, "no_guard", "no_verify", "no_compile", "no_companions") == {
        "no_guard": True, "no_verify": True, "no_compile": True, "no_companions": False,
    }
    assert req.allow_insecure_index and req.break_system_packages
    assert req.allow_redirect == ("mirror.example.org", "other.example.org")
    assert req.allow_env == ("MY_VAR",)
    assert (req.install_timeout, req.net_timeout, req.probe_timeout) == (60.0, 7.5, 2.0)
    assert "note:" not in result.stderr  # the new spelling says nothing


def test_the_families_defaults_are_the_requests(installs: list[Any], tmp_path: Path) -> None:
    from rocmkit.install.request import InstallRequest

    assert rocmkit("install", "--venv", str(tmp_path / "v")).code == 0
    (req,) = installs
    defaults = InstallRequest()
    for field in ("no_guard", "no_verify", "no_compile", "no_companions", "allow_insecure_index", "allow_redirect",
                  "allow_env", "break_system_packages", "install_timeout", "net_timeout", "probe_timeout"):
        assert getattr(req, field) == getattr(defaults, field), field


@pytest.mark.parametrize(
    ("args", "error", "fix"),
    [
        (("--skip", "gaurd"), "error: --skip gaurd is not one of guard, verify, compile, companions",
            "fix: give --skip one or more of guard, verify, compile, companions, comma-separated or repeated"),
        (("--skip", "guard=1"), "error: --skip guard=1: guard takes no value", "fix: write --skip guard"),
        (("--skip", ","), "error: --skip ',' names nothing",
            "fix: give --skip one or more of guard, verify, compile, companions"),
        (("--skip", ""), "error: --skip is empty (given as [''] on the command line)",
            "fix: give --skip a value (STEP), or leave the option out"),
        (("--allow", "redirect"), "error: --allow redirect: redirect needs a value",
            "fix: write --allow redirect=HOST"),
        (("--allow", "redirect=https://h/x"), "error: --allow redirect=https://h/x is not a host name",
            "fix: write the host alone, e.g. --allow redirect=mirror.example.org"),
        (("--allow", "env=1X"), "error: --allow env=1X is not an environment variable name",
            "fix: write --allow env=NAME, e.g. --allow env=MY_VAR"),
        (("--allow", "untrusted-python"), "error: --allow untrusted-python is not one of insecure-index, "
            "redirect=HOST, env=NAME, system-packages", None),
        (("--timeout", "0"), "error: --timeout 0 is not a positive number of seconds",
            "fix: write --timeout 30 (any number above 0)"),
        (("--timeout", "net=abc"), "error: --timeout net=abc is not a positive number of seconds",
            "fix: write --timeout net=30 (any number above 0)"),
        (("--timeout", "net=inf"), "error: --timeout net=inf is not a positive number of seconds", None),
        (("--timeout", "disk=5"), "error: --timeout disk=5 is not one of install=SECONDS, net=SECONDS, "
            "probe=SECONDS", None),
    ],
)
def test_a_bad_word_is_one_line_and_exit_4(
    installs: list[Any], tmp_path: Path, args: tuple[str, ...], error: str, fix: str | None
) -> None:
    _refused(rocmkit("install", "--venv", str(tmp_path / "v"), *args), error, fix)
    assert installs == []


def _refused(result: Any, error: str, fix: str | None) -> None:
    """Exit 4 and the one ``error`` line, then ``fix`` (when given) as the only fix line."""
    assert result.code == UsageError.exit_code
    lines = result.one_line_error().splitlines()
    assert lines[0] == error
    if fix is not None:
        assert lines[1:] == [fix]


def test_lock_and_wheelhouse_take_only_the_words_before_an_install(installs: list[Any], tmp_path: Path) -> None:
    result = rocmkit("lock", str(tmp_path / "t.lock"), "--skip", "companions", "--allow", "insecure-index",
        "--timeout", "probe=3")
    assert result.code == 0, result.stderr
    (req,) = installs
    assert req.no_companions and req.allow_insecure_index and req.probe_timeout == 3.0
    assert req.lock_file == tmp_path / "t.lock"
    for words in (("--skip", "guard"), ("--allow", "system-packages"), ("--allow", "env=X")):
        bad = rocmkit("wheelhouse", str(tmp_path / "wh"), *words)
        assert bad.code == UsageError.exit_code and "is not one of" in bad.one_line_error(), words


def test_resolve_and_export_take_allow_redirect(resolves: list[Any]) -> None:
    assert rocmkit("resolve", "--offline", "--allow", "redirect=a.example").code == UsageError.exit_code
    assert rocmkit("export", "pylock", "--offline", "--allow", "redirect=b.example").code == UsageError.exit_code
    assert [r.allow_redirect for r in resolves] == [("a.example",), ("b.example",)]
    assert resolves[1].fmt == "pylock"
    bad = rocmkit("resolve", "--allow", "insecure-index")
    assert bad.one_line_error().startswith("error: --allow insecure-index is not one of redirect=HOST")


def test_doctor_report_and_allow(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[Any] = []
    monkeypatch.setattr("rocmkit.cli.doctor._run", seen.append)
    junit, prom = tmp_path / "j.xml", tmp_path / "p.prom"
    result = rocmkit("doctor", "--report", f"junit={junit}", "--report", f"prom={prom}", "--allow", "untrusted-python")
    assert result.code == 0, result.stderr
    (req,) = seen
    assert (req.junit, req.prom, req.allow_untrusted_python) == (junit, prom, True)
    bad = rocmkit("doctor", "--report", "html=x.html")
    assert bad.one_line_error().startswith("error: --report html=x.html is not one of junit=FILE, prom=FILE")
    # A report file is one value: a comma in its name is not a second word.
    assert rocmkit("doctor", "--report", f"junit={tmp_path}/a,b.xml").code == 0
    assert seen[-1].junit == tmp_path / "a,b.xml"


def test_bench_models_report(benches: list[Any], tmp_path: Path) -> None:
    files = {fmt: tmp_path / f"r.{fmt}" for fmt in ("csv", "html", "svg", "markdown")}
    args = [a for fmt, f in files.items() for a in ("--report", f"{fmt}={f}")]
    result = rocmkit("bench", "models", *args)
    assert result.code == 0, result.stderr
    (req,) = benches
    assert (req.csv_path, req.html_path, req.svg_path, req.md_path) == tuple(files.values())


# -- the old spellings ---------------------------------------------------------------------------

# (command words, old flag and value, the new spelling said, request field, value it sets)
OLD = [
    (("install",), ("--no-guard",), "--skip guard", "no_guard", True),
    (("install",), ("--no-verify",), "--skip verify", "no_verify", True),
    (("install",), ("--no-compile",), "--skip compile", "no_compile", True),
    (("install",), ("--no-companions",), "--skip companions", "no_companions", True),
    (("install",), ("--allow-insecure-index",), "--allow insecure-index", "allow_insecure_index", True),
    (("install",), ("--break-system-packages",), "--allow system-packages", "break_system_packages", True),
    (("install",), ("--allow-env", "MY_VAR"), "--allow env=MY_VAR", "allow_env", ("MY_VAR",)),
    (("install",), ("--allow-redirect", "h.example"), "--allow redirect=h.example", "allow_redirect", ("h.example",)),
    (("install",), ("--net-timeout", "7"), "--timeout net=7", "net_timeout", 7.0),
    (("install",), ("--probe-timeout", "2.5"), "--timeout probe=2.5", "probe_timeout", 2.5),
    (("lock", "x.lock"), ("--no-companions",), "--skip companions", "no_companions", True),
    (("lock", "x.lock"), ("--net-timeout", "9"), "--timeout net=9", "net_timeout", 9.0),
    (("wheelhouse", "wh"), ("--allow-insecure-index",), "--allow insecure-index", "allow_insecure_index", True),
    (("install",), ("--rocm", "7.1"), "--backend rocm7.1", "rocm", "7.1"),
    (("install",), ("--cuda", "12.8"), "--backend cu128", "cuda", "12.8"),
    (("install",), ("--cuda", "cu128"), "--backend cu128", "cuda", "cu128"),
    (("install",), ("--cpu",), "--backend cpu", "cpu", True),
    (("lock", "x.lock"), ("--rocm", "rocm6.2.4"), "--backend rocm6.2.4", "rocm", "rocm6.2.4"),
    (("wheelhouse", "wh"), ("--cpu",), "--backend cpu", "cpu", True),
]


@pytest.mark.parametrize(("words", "old", "new", "field", "value"), OLD)
def test_an_old_install_flag_works_and_says_its_new_spelling_once(
    installs: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    words: tuple[str, ...], old: tuple[str, ...], new: str, field: str, value: Any,
) -> None:
    monkeypatch.chdir(tmp_path)
    venv = ("--venv", str(tmp_path / "v")) if words == ("install",) else ()
    result = rocmkit(*words, *venv, *old)
    assert result.code == 0, result.stderr
    (req,) = installs
    assert getattr(req, field) == value
    note = f"rocmkit: note: `{' '.join(old)}` is now `{new}` (the old spelling works for one more release)"
    assert result.stderr.count("is now") == 1 and note in result.stderr.splitlines(), result.stderr


def test_old_and_new_spellings_add_up(installs: list[Any], tmp_path: Path) -> None:
    result = rocmkit("install", "--venv", str(tmp_path / "v"), "--allow-redirect", "a.example",
        "--allow", "redirect=b.example", "--no-guard", "--skip", "verify")
    assert result.code == 0, result.stderr
    (req,) = installs
    assert req.allow_redirect == ("a.example", "b.example") and req.no_guard and req.no_verify
    assert result.stderr.count("is now") == 2


def test_old_resolve_spellings(resolves: list[Any]) -> None:
    result = rocmkit("resolve", "--offline", "--json", "--allow-redirect", "h.example")
    (req,) = resolves
    assert req.as_json and req.allow_redirect == ("h.example",)
    assert "`--allow-redirect h.example` is now `--allow redirect=h.example`" in result.stderr
    assert result.stderr.count("is now") == 1


def test_old_export_project_spelling_said_once(
    monkeypatch: pytest.MonkeyPatch, installs: list[Any], tmp_path: Path
) -> None:
    # export uv-project --project invokes install: the old flag typed on the verb is said once.
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\nversion = '0'\n")
    result = rocmkit("export", "uv-project", "--project", str(tmp_path), "--allow-redirect", "h.example")
    assert result.code == 0, result.stderr
    (req,) = installs
    assert req.allow_redirect == ("h.example",) and req.project == tmp_path
    assert result.stderr.count("is now `--allow redirect=h.example`") == 1


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        (("--junit", "J"), "--report junit=J", "junit"),
        (("--prom", "P"), "--report prom=P", "prom"),
        (("--allow-untrusted-python",), "--allow untrusted-python", "allow_untrusted_python"),
    ],
)
def test_old_doctor_spellings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, old: tuple[str, ...], new: str, field: str
) -> None:
    seen: list[Any] = []
    monkeypatch.setattr("rocmkit.cli.doctor._run", seen.append)
    monkeypatch.chdir(tmp_path)
    result = rocmkit("doctor", *old)
    assert result.code == 0, result.stderr
    assert getattr(seen[0], field) not in (None, False)
    assert result.stderr.count(f"`{' '.join(old)}` is now `{new}`") == 1


def test_old_bench_spellings(benches: list[Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    result = rocmkit("bench", "models", "--csv", "r.csv", "--html", "r.html", "--svg", "r.svg", "--markdown", "r.md")
    assert result.code == 0, result.stderr
    (req,) = benches
    assert (req.csv_path, req.html_path, req.svg_path, req.md_path) == tuple(
        Path(f) for f in ("r.csv", "r.html", "r.svg", "r.md")
    )
    for old, new in (("--csv r.csv", "csv=r.csv"), ("--html r.html", "html=r.html"), ("--markdown r.md", "markdown=r.md")):
        assert result.stderr.count(f"`{old}` is now `--report {new}`") == 1


def test_every_old_flag_is_hidden_and_names_a_family() -> None:
    """--help shows the new spelling only; each hidden old flag says one that parses."""
    for name, command in _commands(root):
        ctx = click.Context(command)
        for param in command.params:
            if not isinstance(param, Renamed):
                continue
            assert param.hidden and param.get_help_record(ctx) is None, (name, param.name)
            sample = ("x",) if param.multiple else (True if param.is_flag else 5.0)
            _old, new = param.spelling(sample)
            flag, _, words = new.partition(" ")
            family = next(p for p in command.params if flag in getattr(p, "opts", ()))
            family.type.convert(words, family, ctx)  # the new spelling it says is one it takes


def test_a_request_field_set_by_a_word_exists() -> None:
    """Each family word names a field of the requests that take it (a rename of a field fails here)."""
    from rocmkit.bench.request import BenchRequest
    from rocmkit.doctor.request import DoctorRequest
    from rocmkit.install.request import InstallRequest
    from rocmkit.matrix.request import RefreshRequest
    from rocmkit.resolve.request import ResolveRequest

    fields = {f.name for cls in (InstallRequest, ResolveRequest, DoctorRequest, BenchRequest, RefreshRequest)
              for f in dataclasses.fields(cls)}
    from rocmkit.cli import folds

    for vocabulary in (folds.SKIP, folds.ALLOW, folds.TIMEOUT, folds.REPORT):
        for word, spec in vocabulary.items():
            assert spec.field in fields, word


def test_a_fix_adds_a_familys_word_to_those_given(capsys: pytest.CaptureFixture[str]) -> None:
    """A fix that reruns the command with ``--allow WORD`` keeps the words already given (a
    family adds up; replacing ``--allow insecure-index`` would make the fix fail anew)."""
    from rocmkit.cli.group import print_error
    from rocmkit.errors import NetworkError, rerun

    exc = NetworkError("redirected to another host, h", rerun("--allow", "redirect=h") + "   # if you trust that host")
    capsys.readouterr()
    print_error(exc, ("install", "--venv", "v", "--allow", "insecure-index"))
    print_error(exc, ("install", "--venv", "v", "--allow", "redirect=h"))
    assert [line for line in capsys.readouterr().err.splitlines() if line.startswith("fix:")] == [
        "fix: rocmkit install --venv v --allow insecure-index --allow redirect=h   # if you trust that host",
        "fix: rocmkit install --venv v --allow redirect=h   # if you trust that host",
    ]
    assert "(fix: run it again with --allow redirect=h" in exc.one_line()


# -- --backend TAG: one tag for --rocm X.Y, --cuda X.Y, --cpu ------------------------------------

# (the tag, the old spelling that asked for the same builds)
SAME = [
    ("rocm7.1", ("--rocm", "7.1")),
    ("rocm6.2.4", ("--rocm", "6.2.4")),
    ("cu128", ("--cuda", "12.8")),
    ("cu118", ("--cuda", "11.8")),
    ("cpu", ("--cpu",)),
]


@pytest.mark.parametrize(("tag", "old"), SAME)
def test_backend_makes_the_request_the_old_option_made(
    installs: list[Any], resolves: list[Any], tmp_path: Path, tag: str, old: tuple[str, ...]
) -> None:
    """The tag sets the request fields --rocm/--cuda/--cpu set, with the values they held, so the
    request (and so the plan) is the same one, on install, its verbs, resolve and the exports."""
    venv = ("--venv", str(tmp_path / "v"))
    for words in (("install", *venv), ("lock", str(tmp_path / "t.lock")), ("wheelhouse", str(tmp_path / "wh"))):
        new = rocmkit(*words, "--backend", tag)
        assert new.code == 0 and "note:" not in new.stderr, new.stderr
        assert rocmkit(*words, *old).code == 0
    for words in (("resolve", "--offline"), ("export", "requirements", "--offline")):
        rocmkit(*words, "--backend", tag)
        rocmkit(*words, *old)
    assert len(installs) == 6 and len(resolves) == 4
    for new_req, old_req in zip(installs[::2] + resolves[::2], installs[1::2] + resolves[1::2], strict=True):
        assert new_req == old_req
    assert (installs[0].rocm, installs[0].cuda, installs[0].cpu) == {
        "rocm": (old[-1], None, False), "cuda": (None, old[-1], False), "cpu": (None, None, True),
    }[old[0].lstrip("-")]


def test_an_old_cuda_tag_and_release_name_one_index(resolves: list[Any]) -> None:
    # --cuda took the index name too (cu128); the field holds what was typed, read as one index.
    for value in ("cu128", "12.8"):
        rocmkit("resolve", "--offline", "--cuda", value)
    rocmkit("resolve", "--offline", "--backend", "cu128")
    assert len({str(r.constraints().cuda_index) for r in resolves}) == 1
    assert str(resolves[-1].constraints().cuda_index) == "cu128"


@pytest.mark.parametrize(
    ("tag", "amd"),
    [("rocm", False), ("rocm7", False), ("cuda12.8", False), ("12.8", False), ("ROCm7.1", False), ("xpu", False),
     ("gfx942", False), ("cu", False), ("amd-nightly-gfx942", True), ("therock-gfx1151", True)],
)
def test_a_bad_backend_is_one_line_with_the_forms_and_the_known_tags(
    installs: list[Any], tmp_path: Path, tag: str, amd: bool
) -> None:
    from rocmkit.matrix import load_matrix

    result = rocmkit("install", "--venv", str(tmp_path / "v"), "--backend", tag)
    assert result.code == UsageError.exit_code
    lines = result.one_line_error().splitlines()
    assert lines[0] == f"error: --backend {tag!r} is not a ROCm, CUDA or CPU tag"
    assert lines[1] == ("fix: give --backend rocmX.Y or rocmX.Y.Z (PyTorch's ROCm wheels: rocm7.1), "
        "cuXYZ (CUDA XY.Z: cu128 is 12.8) or cpu")
    assert (len(lines) == 4 and "--channel amd, amd-rc or amd-nightly" in lines[2]) is amd
    known = lines[-1].removeprefix("fix: the tags rocmkit's data knows: ").split(", ")
    # Every index the data has, each one a tag --backend takes, and no other.
    assert set(known) == {v.index for r in load_matrix().torch_releases for v in r.variants}
    for good in known:
        assert rocmkit("install", "--venv", str(tmp_path / "v"), "--backend", good).code == 0, good
    assert len(installs) == len(known)


def test_two_backends_are_refused_in_the_new_spelling(resolves: list[Any], tmp_path: Path) -> None:
    result = rocmkit("resolve", "--offline", "--backend", "cu128", "--rocm", "6.2")
    assert result.code == UsageError.exit_code
    assert result.stderr.count("is now `--backend rocm6.2`") == 0  # the request is refused before the note
    assert result.one_line_error() == "error: two backends asked for: rocm6.2 and cu128\nfix: give one --backend"
    assert resolves == []


def test_export_uv_project_passes_backend_to_install(installs: list[Any], tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\nversion = '0'\n")
    result = rocmkit("export", "uv-project", "--project", str(tmp_path), "--backend", "cu126")
    assert result.code == 0, result.stderr
    (req,) = installs
    assert (req.cuda, req.project) == ("12.6", tmp_path)


@pytest.mark.parametrize(("tag", "old"), [("rocm6.2", ("--rocm", "6.2")), ("cu128", ("--cuda", "12.8")), ("cpu", ("--cpu",))])
def test_docker_render_takes_the_same_backend(tag: str, old: tuple[str, ...]) -> None:
    new = rocmkit("docker", "render", "--backend", tag)
    was = rocmkit("docker", "render", *old)
    assert new.code == was.code == 0, (new.stderr, was.stderr)
    assert new.stdout == was.stdout and f"RUN rocmkit install --venv /opt/rocmkit --backend {tag} --torch " in new.stdout
    assert new.stderr == ""
    assert was.stderr.count(f"`{' '.join(old)}` is now `--backend {tag}`") == 1
    bad = rocmkit("docker", "render", "--backend", "rocm")
    assert bad.one_line_error().startswith("error: --backend 'rocm' is not a ROCm, CUDA or CPU tag")


def test_a_fix_with_backend_replaces_the_old_options(capsys: pytest.CaptureFixture[str]) -> None:
    """A rerun fix giving --backend cpu drops --rocm X / --cuda X / --cpu from the line (else
    the rerun would ask for two backends)."""
    from rocmkit.cli.group import print_error
    from rocmkit.errors import NoPlanError, rerun

    exc = NoPlanError("no wheel fits", rerun("--backend", "cpu"))
    capsys.readouterr()
    for argv in (("resolve", "--rocm", "6.2", "--torch", "2.5"), ("resolve", "--cuda=12.8", "--torch", "2.5"),
                 ("resolve", "--backend", "rocm6.2", "--torch", "2.5"), ("resolve", "--cpu", "--torch", "2.5")):
        print_error(exc, argv)
    fixes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("fix:")]
    assert fixes == ["fix: rocmkit resolve --torch 2.5 --backend cpu"] * 4


# -- --framework NAME[=VERSION]: JAX's release on the framework it names ---------------------------


@pytest.mark.parametrize(
    ("given", "old", "framework", "jax"),
    [
        (("--framework", "jax=0.10"), ("--framework", "jax", "--jax", "0.10"), "jax", "0.10"),
        (("--framework", "torch,jax=0.10.2"), ("--framework", "torch,jax", "--jax", "0.10.2"), "torch,jax", "0.10.2"),
        (("--framework", "jax"), ("--framework", "jax"), "jax", None),
        ((), (), "torch", None),
    ],
)
def test_framework_carries_jaxs_release(
    installs: list[Any], resolves: list[Any], tmp_path: Path,
    given: tuple[str, ...], old: tuple[str, ...], framework: str, jax: str | None,
) -> None:
    venv = ("--venv", str(tmp_path / "v"))
    for words in (("install", *venv), ("lock", str(tmp_path / "t.lock"))):
        new = rocmkit(*words, *given)
        assert new.code == 0 and "note:" not in new.stderr, new.stderr
        assert rocmkit(*words, *old).code == 0
    rocmkit("resolve", "--offline", *given)
    rocmkit("resolve", "--offline", *old)
    assert [(r.framework, r.jax_version) for r in (*installs, *resolves)] == [(framework, jax)] * 6
    assert installs[0] == installs[1] and installs[2] == installs[3] and resolves[0] == resolves[1]


@pytest.mark.parametrize(
    ("value", "error", "fix"),
    [
        ("torch=2.5", "error: --framework torch=2.5: only jax takes =VERSION here", "fix: give torch's release with --torch 2.5"),
        ("torch-xla=2.8", "error: --framework torch-xla=2.8: only jax takes =VERSION here", "fix: write --framework torch-xla"),
        ("jax=", "error: --framework jax=: no JAX release after =", "fix: write --framework jax=X.Y, e.g. jax=0.10"),
        ("jax=zero", "error: JAX 'zero' is not a release", "fix: give --framework jax=0.10 or jax=0.10.2"),
        ("tensorflow", "error: --framework 'tensorflow' is not one of torch, jax, torch-xla (or torch,jax)",
            "fix: give torch, jax, torch-xla, or torch,jax"),
    ],
)
def test_a_bad_framework_is_one_line_and_exit_4(resolves: list[Any], value: str, error: str, fix: str) -> None:
    _refused(rocmkit("resolve", "--offline", "--framework", value), error, fix)
    assert resolves == []


@pytest.mark.parametrize(
    ("framework", "new"),
    [((), "--framework jax=0.10"), (("--framework", "jax"), "--framework jax=0.10"),
     (("--framework", "torch,jax"), "--framework torch,jax=0.10")],
)
def test_old_jax_says_the_framework_spelling_once(
    installs: list[Any], tmp_path: Path, framework: tuple[str, ...], new: str
) -> None:
    """The note names the frameworks given beside --jax, so the spelling it says asks for the same."""
    result = rocmkit("install", "--venv", str(tmp_path / "v"), *framework, "--jax", "0.10")
    assert result.code == 0, result.stderr
    assert result.stderr.count(f"`--jax 0.10` is now `{new}`") == 1 and result.stderr.count("is now") == 1
    assert installs[0].jax_version == "0.10"
    # What it says, typed, makes that request with jax in it (without --jax, torch alone has no JAX to pin).
    assert rocmkit("install", "--venv", str(tmp_path / "v"), *new.split()).code == 0
    assert installs[1].jax_version == "0.10" and "jax" in installs[1].framework.split(",")


def test_old_jax_alone_is_refused_naming_the_new_spelling(resolves: list[Any]) -> None:
    result = rocmkit("resolve", "--offline", "--jax", "0.10")
    assert result.one_line_error() == ("error: a JAX release (0.10) goes with --framework jax\n"
        "fix: write --framework jax=0.10")


def test_no_message_in_the_package_names_an_old_plan_option() -> None:
    """Fix lines, reasons, generated Dockerfiles and help say --backend and --framework jax=X.Y;
    the old names live only where they are kept as aliases (and where a fix's --backend drops them)."""
    import re

    import rocmkit

    package = Path(rocmkit.__file__).parent
    kept = {"cli/backend.py", "cli/framework.py", "errors.py"}
    old = re.compile(r"--(rocm|cuda|cpu|jax)\b(?![-\w])")
    found = [
        f"{path.relative_to(package)}:{n}: {line.strip()}"
        for path in sorted(package.rglob("*.py")) if path.relative_to(package).as_posix() not in kept
        for n, line in enumerate(path.read_text().splitlines(), 1) if old.search(line)
    ]
    assert found == []
