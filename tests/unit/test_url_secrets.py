"""Secrets in every spelling are masked, and index URLs are built on the path (issue 39,
point 4): a password holding ``/``, ``#``, ``?`` or a space, every query value (a cloud
signed URL's token has any name), a password this process was given wherever it appears;
an index base with a query string keeps the query after the backend path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmkit.errors import UsageError
from rocmkit.util.redact import check_url, conceal, forget_credentials, redact_text, url_under

SECRET = "Zq9-very-secret"


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    forget_credentials()
    yield
    forget_credentials()


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"https://user:{SECRET}@host/whl", "https://user:***@host/whl"),
        ("https://user:pa/ss-Zq9@host/whl", "https://user:***@host/whl"),
        ("https://user:pa#ss-Zq9@host/whl", "https://user:***@host/whl"),
        ("https://user:pa?ss-Zq9@host/whl", "https://user:***@host/whl"),
        ("https://user:pa ss-Zq9@host/whl", "https://user:***@host/whl"),
        ("refused 'https://user:pa ss-Zq9@host/whl' here", "refused 'https://user:***@host/whl' here"),
        ("at https://user:a/b?c#d-Zq9@host:8443/x?y=1 now", "at https://user:***@host:8443/x?y=*** now"),
        ("https://tokenZq9@host/x", "https://***@host/x"),
        (
            "https://bucket.s3.amazonaws.com/w/i.html?X-Amz-Credential=AKZq9&X-Amz-Signature=beefZq9#frag",
            "https://bucket.s3.amazonaws.com/w/i.html?X-Amz-Credential=***&X-Amz-Signature=***#frag",
        ),
        ("https://h/x?sv=2024&se=2026&sp=r&sig=Zq9abc", "https://h/x?sv=***&se=***&sp=***&sig=***"),
        ("https://h/x?Zq9bare", "https://h/x?***"),
    ],
)
def test_every_spelling_is_masked(text: str, shown: str) -> None:
    out = redact_text(text)
    assert out == shown and "Zq9" not in out
    assert redact_text(out) == out  # masking twice changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "see git+https://github.com/org/repo@v1.0 and http://host:8080/pkg@1.0",
        "https://download.pytorch.org/whl/rocm6.2/torch-2.5.1%2Brocm6.2-cp311-linux_x86_64.whl#sha256=ab12",
        "no url here, a=b",
    ],
)
def test_what_holds_no_secret_is_kept(text: str) -> None:
    assert redact_text(text) == text


def test_a_password_given_is_masked_wherever_it_appears() -> None:
    conceal(f"https://user:{SECRET}@mirror.example/whl")
    assert redact_text(f"pip said: bad password {SECRET} (decoded)") == "pip said: bad password *** (decoded)"
    conceal("https://user:s%2Fcr%40t-Zq9@mirror.example/whl")
    assert "Zq9" not in redact_text("pip: s/cr@t-Zq9 and s%2Fcr%40t-Zq9")


@pytest.mark.parametrize("url", ["https://user:pa ss-Zq9@host/whl", "https://user:pa\nss-Zq9@host/whl"])
def test_a_refused_url_is_shown_masked(url: str) -> None:
    with pytest.raises(UsageError) as err:
        check_url("--index-base", url)
    assert "Zq9" not in err.value.one_line() and "user:***@host" in err.value.one_line()


@pytest.mark.parametrize(
    ("base", "segments", "slash", "url"),
    [
        ("https://m.example/whl?token=t", ("rocm6.2",), False, "https://m.example/whl/rocm6.2?token=t"),
        ("https://m.example/whl/", ("rocm6.2", "torch"), True, "https://m.example/whl/rocm6.2/torch/"),
        ("https://m.example/whl?a=1#f", ("torch",), True, "https://m.example/whl/torch/?a=1#f"),
        ("https://m.example", ("torch",), True, "https://m.example/torch/"),
    ],
)
def test_index_urls_are_built_on_the_path(base: str, segments: tuple[str, ...], slash: bool, url: str) -> None:
    assert url_under(base, *segments, slash=slash) == url


def test_an_index_base_with_a_query_gets_the_backend_on_its_path() -> None:
    from rocmkit.matrix.load import load_matrix

    m = load_matrix()
    channel = next(n for n, c in m.channels.items() if "{base}" in c.url)
    url = m.index_url(channel, "rocm6.2", "https://mirror.example/pt?sig=abc")
    assert url == "https://mirror.example/pt/rocm6.2?sig=abc"


def test_the_slurm_hook_log_is_masked_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rocmkit.slurm.hooks import Log

    log = tmp_path / "hc.log"
    Log(str(log), "rocmkit-healthcheck")("index https://u:pa/ss-Zq9@mirror.example/whl?sig=Zq9abc refused")
    for text in (log.read_text(), capsys.readouterr().err):
        assert "Zq9" not in text and "https://u:***@mirror.example/whl?sig=***" in text
