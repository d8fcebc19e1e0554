"""ApprovalPolicy documents and the rules a decision must keep (pure)."""

from __future__ import annotations

import pytest

from shared.contracts.approval_policy import ApprovalPolicy, person_problem, rules_for
from shared.contracts.people import PeopleError, check_name, check_roles, is_person, may, person_of_subject
from shared.contracts.resource import ResourceError, parse_resource

QQ = "im.polaris.qq"


def policy(**fields: object) -> ApprovalPolicy:
    return parse_resource(ApprovalPolicy, {"kind": "ApprovalPolicy", "id": "p", **fields})


def test_a_policy_says_who_decides_and_chat_users_only_narrow_delegation() -> None:
    with pytest.raises(ResourceError, match="say who may decide"):
        policy(tools=["x.*"])
    with pytest.raises(ResourceError, match="chat_users only narrow"):
        policy(users=["amy"], chat_users=[f"{QQ}:1"])
    with pytest.raises(ResourceError, match="roles"):
        policy(roles=["root"])


def test_matching_policies_all_apply_and_none_means_approvers() -> None:
    writes = policy(tools=[f"{QQ}.*"], users=["amy", "bob"])
    narrow = policy(id="q", systems=[QQ], users=["bob"], side_effects=["write"])
    rules = rules_for([writes, narrow], f"{QQ}.send", QQ, "write")
    assert rules.ids == ("p", "q") and rules.deciders() == {"roles": [], "users": ["bob"]}
    assert rules.person_may_decide("bob", ()) and not rules.person_may_decide("amy", ("approver",))
    assert rules_for([writes, narrow], f"{QQ}.send", QQ, "dangerous").ids == ("p",)
    default = rules_for([writes], "other.tool", "other", "write")
    assert default.ids == ("default",) and default.person_may_decide("zoe", ("approver",))
    assert not default.person_may_decide("zoe", ("operator", "admin")) and default.required_grants("dangerous") == 1


def test_dangerous_needs_two_and_the_second_grant_is_someone_elses() -> None:
    rules = rules_for([policy(roles=["approver"])], "t", None, "dangerous")
    assert rules.required_grants("dangerous") == 2 and rules.required_grants("write") == 1
    assert person_problem(rules, name="amy", roles=("approver",), actors=(), requester=None,
                          grants_by=["amy"], granting=True) is not None
    assert person_problem(rules, name="amy", roles=("approver",), actors=(), requester=None,
                          grants_by=["amy"], granting=False) is None  # a deny is always hers to make
    assert person_problem(rules, name="bob", roles=("approver",), actors=(), requester=None,
                          grants_by=["amy"], granting=True) is None


def test_the_requester_may_not_approve_unless_the_policy_says_so() -> None:
    strict = rules_for([policy(roles=["approver"])], "t", None, "write")
    problem = person_problem(strict, name="carl", roles=("approver",), actors=(f"{QQ}:9",), requester=f"{QQ}:9",
                             grants_by=(), granting=True)
    assert problem is not None and "requested this call" in problem
    lax = rules_for([policy(roles=["approver"], requester_may_approve=True)], "t", None, "write")
    assert person_problem(lax, name="carl", roles=("approver",), actors=(f"{QQ}:9",), requester=f"{QQ}:9",
                          grants_by=(), granting=True) is None


FOUR_EYES = rules_for([policy(tools=["demo.notes.*"], roles=["approver"], dangerous_needs_two=True)],
                      "demo.notes.delete_note", None, "dangerous")
# who decides (name, roles, shared identity), who asked, grants so far, grants needed → refused because (None: may)
DECISIONS: list[tuple[str, tuple[str, ...], bool, str | None, tuple[str, ...], int, str | None]] = [
    ("operator", ROLES_ALL := ("viewer", "operator", "approver", "admin"), True, None, (), 2, "shared identity"),
    ("operator", ROLES_ALL, True, None, ("amy",), 2, "shared identity"),  # never the second eye either
    ("operator", ROLES_ALL, True, "oscar", (), 1, "shared identity"),  # nor vouches for a person's call
    ("operator", ROLES_ALL, True, "operator", (), 1, "shared identity"),  # nor for its own
    ("operator", ROLES_ALL, True, None, (), 1, None),  # an agent's one-grant approval: it may
    ("operator", ROLES_ALL, True, f"{QQ}:9", (), 1, None),  # a chat user's request
    ("root", ROLES_ALL, False, "root", (), 2, "requested this call"),  # a person never grants their own call
    ("amy", ("approver",), False, "oscar", (), 2, None),
    ("amy", ("approver",), False, "oscar", ("amy",), 2, "already granted"),
    ("bob", ("approver",), False, "oscar", ("amy",), 2, None),
    ("oscar", ("operator",), False, None, (), 2, "may not decide"),
]


@pytest.mark.parametrize(("name", "roles", "shared", "requester", "grants", "needed", "because"), DECISIONS)
def test_four_eyes_are_two_people_and_the_shared_identity_is_nobody(
        name: str, roles: tuple[str, ...], shared: bool, requester: str | None, grants: tuple[str, ...],
        needed: int, because: str | None) -> None:
    problem = person_problem(FOUR_EYES, name=name, roles=roles, actors=(), requester=requester, grants_by=grants,
                             granting=True, required_grants=needed, shared_identity=shared)
    assert (problem is None) == (because is None), problem
    assert because is None or (problem is not None and because in problem)


def test_the_shared_identity_may_still_deny() -> None:
    assert person_problem(FOUR_EYES, name="operator", roles=("approver",), actors=(), requester="oscar",
                          grants_by=(), granting=False, required_grants=2, shared_identity=True) is None


def test_chat_delegation_only_where_a_policy_or_the_agent_shorthand_says() -> None:
    assert not rules_for([], "t", None, "write").chat_delegated(f"{QQ}:1")
    assert rules_for([], "t", None, "write", chat_shorthand=True).chat_delegated(f"{QQ}:1")
    assert not rules_for([], "t", None, "write", chat_shorthand=True).chat_delegated(None)
    narrowed = [policy(roles=["approver"], delegate_to_chat_user=True, chat_users=[f"{QQ}:1"])]
    assert rules_for(narrowed, "t", None, "write").chat_delegated(f"{QQ}:1")
    assert not rules_for(narrowed, "t", None, "write").chat_delegated(f"{QQ}:2")
    # An explicit policy without delegation wins over the agent's shorthand.
    assert not rules_for([policy(roles=["approver"])], "t", None, "write", chat_shorthand=True).chat_delegated(
        f"{QQ}:1")


def test_people_names_roles_and_subjects() -> None:
    assert person_of_subject("amp.admin.approvals.grant.u.amy") == "amy"
    assert person_of_subject("amp.admin.approvals.grant") is None
    assert is_person("amy") and not is_person("operator") and not is_person("runner") and not is_person(None)
    for bad in ("Amy", "runner", "a.b", ""):
        with pytest.raises(PeopleError):
            check_name(bad)
    assert check_roles(["admin", "viewer", "admin"]) == ("viewer", "admin")
    with pytest.raises(PeopleError, match="unknown role"):
        check_roles(["root"])
    assert may(("viewer",), "approvals", "list") and not may(("viewer",), "approvals", "grant")
    assert may(("approver",), "approvals", "grant") and not may(("approver",), "bindings", "apply")
