"""The Host/Origin allow-list every local web surface applies (shared/web_origin.py)."""

from __future__ import annotations

import pytest

from shared.errors import SettingsError
from shared.web_origin import OriginPolicy, is_loopback, parse_hosts, parse_origins

POLICY = OriginPolicy.build(8780, hosts=["chat.example.test:8780"], origins=["https://ops.example.test"],
                            hosts_setting="HOSTS_VAR", origins_setting="ORIGINS_VAR")


@pytest.mark.parametrize(("host", "origin", "refused"), [
    ("127.0.0.1:8780", None, None),
    ("localhost:8780", "http://localhost:8780", None),
    ("LOCALHOST:8780", "HTTP://LOCALHOST:8780/", None),
    ("[::1]:8780", "http://[::1]:8780", None),
    ("chat.example.test:8780", "http://chat.example.test:8780", None),
    ("127.0.0.1:8780", "https://ops.example.test", None),
    ("127.0.0.1:8780", "http://evil.example", "forbidden_origin"),
    ("127.0.0.1:8780", "null", "forbidden_origin"),  # a sandboxed frame or a file:// page
    ("127.0.0.1:8780", "http://127.0.0.1:9999", "forbidden_origin"),  # another local server's page
    ("evil.example:8780", None, "forbidden_host"),  # DNS rebinding: the attacker's name in Host
    ("127.0.0.1:9999", None, "forbidden_host"),
    ("127.0.0.1", None, "forbidden_host"),
    (None, None, "forbidden_host"),
])
def test_host_and_origin_decide(host: str | None, origin: str | None, refused: str | None) -> None:
    problem = POLICY.problem(host, origin)
    assert (problem[0] if problem else None) == refused
    if problem:
        setting = "HOSTS_VAR" if refused == "forbidden_host" else "ORIGINS_VAR"
        assert setting in problem[1]


def test_lists_are_parsed_or_refused_naming_the_variable() -> None:
    assert parse_hosts("H", " Localhost:8780, [::1]:80 ,") == {"localhost:8780", "[::1]:80"}
    assert parse_origins("O", "http://a.test:1/, https://B.test") == {"http://a.test:1", "https://b.test"}
    for bad in ("localhost", "http://localhost:8780", "::1:80", "host:port"):
        with pytest.raises(SettingsError, match=r"^H="):
            parse_hosts("H", bad)
    for bad in ("localhost:8780", "ftp://a.test", "http://a.test/path"):
        with pytest.raises(SettingsError, match=r"^O="):
            parse_origins("O", bad)


def test_loopback() -> None:
    assert all(is_loopback(h) for h in ("localhost", "127.0.0.1", "127.3.4.5", "::1", "[::1]"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "example.test", "10.0.0.1", ""))
