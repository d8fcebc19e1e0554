"""What the console's sign-in accepts: a person's name and password, typed or from the
credentials file `aurora users add` wrote; never a platform identity, and nothing half given."""

from __future__ import annotations

import pytest

from aurora_cli.console.sessions import SignIn, SignInRefused, refusal_text, sign_in_from


def test_a_typed_name_and_password() -> None:
    assert sign_in_from({"name": " alice ", "password": "pw-1"}) == SignIn("alice", "pw-1")


def test_a_credentials_file() -> None:
    text = "# from aurora users add\nNATS_USER=alice\nNATS_PASSWORD=pwSecret\n"
    assert sign_in_from({"creds": text, "name": "ignored"}) == SignIn("alice", "pwSecret")


@pytest.mark.parametrize(("body", "says"), [
    ({"name": "alice"}, "user name and password"),
    ({"name": "", "password": "x"}, "user name and password"),
    ({"name": ["alice"], "password": "x"}, "user name and password"),
    ({"creds": "NATS_USER=alice\n"}, "must set NATS_USER and NATS_PASSWORD"),
    ({"creds": "not a line of an env file"}, "line 1 is not KEY=VALUE"),
    ({"name": "operator", "password": "x"}, "platform identity, not a person"),
    ({"creds": "NATS_USER=mcp-gateway\nNATS_PASSWORD=x\n"}, "platform identity, not a person"),
    ({"name": "Alice Smith", "password": "x"}, "is not a user name"),
])
def test_what_is_refused_says_what_to_fix(body: dict[str, object], says: str) -> None:
    with pytest.raises(SignInRefused, match=says):
        sign_in_from(body)


def test_a_wrong_password_is_told_apart_from_a_missing_server() -> None:
    assert "did not accept the password for 'alice'" in refusal_text("alice", "nats: 'Authorization Violation'")
    assert refusal_text("alice", "cannot connect to NATS at nats://x") == \
        "sign-in failed: cannot connect to NATS at nats://x"
