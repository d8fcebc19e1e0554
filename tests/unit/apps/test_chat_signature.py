"""The chat webhook's signature and the page's sessions (apps/aurora_app_chat/signature.py,
page_sessions.py); the HTTP side is tests/integration/apps/test_chat_web_callers.py."""

from __future__ import annotations

import pytest

from apps.aurora_app_chat.page_sessions import PageSessions, SignInRefused
from apps.aurora_app_chat.signature import SignatureRefused, Verifier, secret_problem, sign
from tests.harness.chat_webhook import WEBHOOK_SECRET, signed

NOW = 1_800_000_000.0


def verifier() -> Verifier:
    return Verifier(WEBHOOK_SECRET, clock=lambda: NOW)


def test_what_the_documentation_tells_callers_to_send_is_accepted_once() -> None:
    raw, headers = signed({"type": "message.received"}, at=NOW)
    checking = verifier()
    checking.verify(headers["x-aurora-signature"], headers["x-aurora-timestamp"], raw)
    with pytest.raises(SignatureRefused, match="replay"):
        checking.verify(headers["x-aurora-signature"], headers["x-aurora-timestamp"], raw)


def test_a_signature_given_back_may_be_sent_again_until_accepted() -> None:
    raw, headers = signed({"type": "message.received"}, at=NOW)
    checking = verifier()
    held = checking.verify(headers["x-aurora-signature"], headers["x-aurora-timestamp"], raw)
    checking.release(held)  # its request was not accepted (e.g. the platform was not connected yet)
    checking.verify(headers["x-aurora-signature"], headers["x-aurora-timestamp"], raw)
    with pytest.raises(SignatureRefused, match="replay"):
        checking.verify(headers["x-aurora-signature"], headers["x-aurora-timestamp"], raw)


@pytest.mark.parametrize(("change", "reason"), [
    (lambda sig, ts, raw: (sig, ts, raw + b" "), "does not match"),
    (lambda sig, ts, raw: (sig, str(int(ts) + 1), raw), "does not match"),  # the time is signed too
    (lambda sig, ts, raw: (sig, str(int(ts) - 301), raw), "300 s"),
    (lambda sig, ts, raw: (sig, "soon", raw), "unix seconds"),
    (lambda sig, ts, raw: (None, ts, raw), "needs both"),
    (lambda sig, ts, raw: ("sha256=" + "0" * 64, ts, raw), "does not match"),
])
def test_anything_else_is_refused(change, reason) -> None:  # type: ignore[no-untyped-def]
    raw, headers = signed({"type": "message.received"}, at=NOW)
    signature, timestamp, body = change(headers["x-aurora-signature"], headers["x-aurora-timestamp"], raw)
    with pytest.raises(SignatureRefused, match=reason):
        verifier().verify(signature, timestamp, body)


def test_without_a_secret_nothing_signed_is_accepted() -> None:
    with pytest.raises(SignatureRefused, match="AURORA_CHAT_WEBHOOK_SECRET"):
        Verifier(None).verify(sign("x" * 20, "1", b"{}"), "1", b"{}")
    assert secret_problem("short") is not None and secret_problem(None) is None
    assert secret_problem(WEBHOOK_SECRET) is None


def test_a_user_id_belongs_to_the_first_session_that_takes_it() -> None:
    sessions = PageSessions()
    alice, user = sessions.sign_in(None, "u1")
    assert user == "u1" and sessions.user_of(alice) == "u1"
    with pytest.raises(SignInRefused, match="another page"):
        sessions.sign_in(None, "u1")
    mallory, _ = sessions.sign_in(None, "u2")
    with pytest.raises(SignInRefused, match="another page"):
        sessions.sign_in(mallory, "u1")
    assert sessions.sign_in(alice, "u3") == (alice, "u3")
    assert sessions.sign_in(alice, "u1") == (alice, "u1")  # back to an id it holds
    sessions.webhook_spoke_for("im-9")
    with pytest.raises(SignInRefused, match="signed webhook"):
        sessions.sign_in(alice, "im-9")
    fresh, picked = sessions.sign_in(None, None)
    assert picked.startswith("u-") and sessions.user_of(fresh) == picked
    with pytest.raises(SignInRefused, match="without blanks"):
        sessions.sign_in(None, "two words")
    assert sessions.user_of("forged-token") is None and sessions.user_of(None) is None
