"""People as nats-server users: generated permissions and the config copy they go into (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aurora_cli.creds import IDENTITIES, CredentialsError
from aurora_cli.devsecurity import AUTH_CONFIG
from aurora_cli.people import MARKER, PeopleStore, Person, publish_allow, render_auth_config
from shared.contracts.people import RESERVED_NAMES
from tests.harness.processes import REPO


def test_every_platform_identity_is_a_reserved_name() -> None:
    assert set(IDENTITIES) <= set(RESERVED_NAMES)


def test_a_person_publishes_admin_requests_only_under_their_own_name_and_roles() -> None:
    viewer = publish_allow("vera", ["viewer"])
    admin_subjects = [s for s in viewer if s.startswith("amp.admin.")]
    assert admin_subjects and all(s.endswith(".u.vera") for s in admin_subjects)
    assert "amp.admin.approvals.list.u.vera" in viewer and "amp.admin.approvals.grant.u.vera" not in viewer
    assert not any(s.startswith("$JS.API.STREAM.CREATE") or s == "$JS.API.>" for s in viewer)
    approver = publish_allow("amy", ["approver"])
    assert "amp.admin.approvals.grant.u.amy" in approver and "amp.admin.bindings.apply.u.amy" not in approver
    assert "$JS.API.>" in publish_allow("root", ["admin"])
    # a reviewer's wording into a draft (aurora tools edit) is an operator's, never a viewer's
    assert "amp.admin.tools.edit.u.opal" in publish_allow("opal", ["operator"])
    assert "amp.admin.tools.edit.u.vera" not in viewer and "amp.admin.tools.edit.u.amy" not in approver


def test_people_go_in_at_the_marker_and_disabled_ones_do_not(tmp_path: Path) -> None:
    template = (REPO / AUTH_CONFIG).read_text(encoding="utf-8")
    text = render_auth_config(template, [Person("amy", ("approver",), "$2b$04$x"),
                                         Person("bob", ("viewer",), "$2b$04$y", state="disabled")])
    users = text[text.rindex("users = ["):]
    assert '"user": "amy"' in users and '"bob"' not in text
    assert users.index('"user": "amy"') < users.index(MARKER)
    with pytest.raises(CredentialsError, match="@people"):
        render_auth_config("authorization { users = [] }", [])


def test_the_store_keeps_hashes_and_writes_each_credential_once(tmp_path: Path) -> None:
    store = PeopleStore(tmp_path / "creds")
    path, password = store.issue("amy", ["approver"], cost=4)
    assert path.read_text() == f"NATS_USER=amy\nNATS_PASSWORD={password}\n" and path.stat().st_mode & 0o077 == 0
    assert password not in store.file.read_text() and store.load()["amy"].password_hash.startswith("$2b$")
    assert not store.ensure("amy", ["approver"])  # kept
    assert store.disable("amy") and store.load()["amy"].state == "disabled" and not path.exists()
