"""Imported Petstore drafts executed against a real HTTP server: the mapping puts every argument
where the document says, with its JSON type intact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.mcp_gateway.systems.executor import HttpExecutor
from services.mcp_gateway.systems.openapi_import import import_operations
from services.mcp_gateway.systems.openapi_load import load_openapi
from shared.contracts.system import System
from shared.contracts.tooldef import ToolDefinition
from tests.integration.mcp_gateway.systems.recording_server import RecordingServer

PETSTORE = Path(__file__).resolve().parents[3] / "fixtures" / "openapi" / "petstore-3.0.json"


@pytest.fixture(scope="module")
def tools() -> dict[str, ToolDefinition]:
    result = import_operations(load_openapi(str(PETSTORE)), system="petstore", package="petstore",
                               now="2026-09-09T00:00:00+00:00", by="test")
    return {t.name.removeprefix("petstore."): t for t in result.tools}


async def test_petstore_operations_reach_the_server_as_mapped(server: RecordingServer, client: httpx.AsyncClient,
                                                              tools: dict[str, ToolDefinition]) -> None:
    petstore = System(name="petstore", base_url=server.url + "/v3", idempotency_header="Idempotency-Key")
    executor = HttpExecutor(client)
    pet = {"id": 10, "name": "doggie", "category": {"id": 1, "name": "Dogs"}, "photoUrls": ["a.png"],
           "tags": [{"id": 2, "name": "calm"}], "status": "available"}
    calls: list[tuple[str, dict[str, Any], str | None]] = [
        ("addPet", pet, "k-add"),
        ("getPetById", {"petId": 10}, None),
        ("findPetsByStatus", {"status": "sold"}, None),
        ("findPetsByTags", {"tags": ["calm", "small"]}, None),
        ("updatePetWithForm", {"petId": 10, "name": "rex", "status": "pending"}, "k-form"),
        ("deletePet", {"petId": 10, "api_key": "header-value"}, "k-del"),
        ("updateUser", {"username": "theUser", "body_username": "newName", "userStatus": 1}, "k-user"),
        ("createUsersWithListInput", {"body": [{"id": 1, "username": "u1"}, {"id": 2, "username": "u2"}]}, "k-list"),
    ]
    for name, arguments, key in calls:
        result = await executor.execute(petstore, tools[name], arguments, idempotency_key=key)
        assert result.status == "ok", (name, result)
    add, get, by_status, by_tags, form, delete, user, user_list = server.requests
    assert (add.method, add.path, add.header("Idempotency-Key")) == ("POST", "/v3/pet", "k-add")
    assert json.loads(add.body) == pet
    assert (get.method, get.target, get.body) == ("GET", "/v3/pet/10", b"")
    assert get.header("Idempotency-Key") is None
    assert by_status.target == "/v3/pet/findByStatus?status=sold"
    assert by_tags.query == [("tags", "calm"), ("tags", "small")]
    assert (form.path, form.query, form.body) == ("/v3/pet/10", [("name", "rex"), ("status", "pending")], b"")
    assert (delete.method, delete.path, delete.header("api_key")) == ("DELETE", "/v3/pet/10", "header-value")
    assert delete.header("Idempotency-Key") == "k-del"
    assert (user.method, user.path) == ("PUT", "/v3/user/theUser")
    assert json.loads(user.body) == {"username": "newName", "userStatus": 1}
    assert json.loads(user_list.body) == [{"id": 1, "username": "u1"}, {"id": 2, "username": "u2"}]


async def test_a_draft_refuses_arguments_its_schema_does_not_know(server: RecordingServer,
                                                                 client: httpx.AsyncClient,
                                                                 tools: dict[str, ToolDefinition]) -> None:
    result = await HttpExecutor(client).execute(System(name="petstore", base_url=server.url), tools["addPet"],
                                                {"photoUrls": []}, idempotency_key="k")
    assert result.status == "denied" and result.error is not None
    assert result.error.message == "missing required argument(s): name"
    assert server.requests == []
