"""OpenAPI import: the public Swagger Petstore 3.0 document and a 3.1 YAML with local $refs."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from services.mcp_gateway.systems.openapi_import import ImportResult, import_operations
from services.mcp_gateway.systems.openapi_load import OpenApiError, load_openapi, parse_openapi
from shared.contracts.tooldef import TOOL_NAME_PATTERN, HttpExecution, HttpParam, ToolDefinition

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "openapi"
PETSTORE = FIXTURES / "petstore-3.0.json"
DEVICES = FIXTURES / "devices-3.1.yaml"


def run(document: dict[str, Any], package: str = "petstore") -> ImportResult:
    return import_operations(document, system="petstore", package=package, now="2026-09-09T00:00:00+00:00",
                             by="reviewer")


@pytest.fixture(scope="module")
def petstore() -> ImportResult:
    return run(load_openapi(str(PETSTORE)))


def tool(result: ImportResult, name: str) -> ToolDefinition:
    return next(t for t in result.tools if t.name == name)


def mapping(definition: ToolDefinition) -> HttpExecution:
    assert isinstance(definition.execution, HttpExecution)
    return definition.execution


def test_the_fixture_is_the_public_petstore_document() -> None:
    document = load_openapi(str(PETSTORE))
    assert document["info"]["title"] == "Swagger Petstore - OpenAPI 3.0"
    assert document["openapi"] == "3.0.2"


def test_one_draft_per_operation(petstore: ImportResult) -> None:
    assert sorted(petstore.names()) == sorted(f"petstore.{op}" for op in (
        "addPet", "updatePet", "findPetsByStatus", "findPetsByTags", "getPetById", "updatePetWithForm",
        "deletePet", "uploadFile", "getInventory", "placeOrder", "getOrderById", "deleteOrder", "createUser",
        "createUsersWithListInput", "loginUser", "logoutUser", "getUserByName", "updateUser", "deleteUser"))
    assert petstore.renamed == () and petstore.skipped == ()
    assert petstore.title == "Swagger Petstore - OpenAPI 3.0"
    for definition in petstore.tools:
        assert definition.state == "DRAFT" and definition.source == "openapi" and definition.version == 1
        assert definition.system == "petstore" and definition.changed_by == "reviewer"
        assert re.match(TOOL_NAME_PATTERN, definition.name)
        jsonschema.Draft202012Validator.check_schema(definition.input_schema)
        assert definition.input_schema["additionalProperties"] is False


def test_side_effects_follow_the_method(petstore: ImportResult) -> None:
    effects = {t.name.split(".")[1]: (mapping(t).method, t.side_effect) for t in petstore.tools}
    assert effects["getPetById"] == ("GET", "read")
    assert effects["addPet"] == ("POST", "write")
    assert effects["updatePet"] == ("PUT", "write")
    assert effects["deletePet"] == ("DELETE", "dangerous")
    assert {effect for method, effect in effects.values() if method == "DELETE"} == {"dangerous"}


def test_get_pet_by_id_maps_its_path_parameter(petstore: ImportResult) -> None:
    definition = tool(petstore, "petstore.getPetById")
    assert mapping(definition).path == "/pet/{petId}"
    assert mapping(definition).params == (HttpParam(name="petId", location="path", required=True),)
    assert definition.input_schema["properties"]["petId"] == {
        "type": "integer", "format": "int64", "description": "ID of pet to return"}
    assert definition.input_schema["required"] == ["petId"]
    assert definition.description == "Find pet by ID\n\nReturns a single pet"
    assert definition.output_schema is not None and definition.output_schema["required"] == ["name", "photoUrls"]


def test_find_by_status_and_tags_are_query_parameters(petstore: ImportResult) -> None:
    status = tool(petstore, "petstore.findPetsByStatus")
    assert mapping(status).params == (HttpParam(name="status", location="query", required=False),)
    assert status.input_schema["properties"]["status"]["enum"] == ["available", "pending", "sold"]
    assert "required" not in status.input_schema
    tags = tool(petstore, "petstore.findPetsByTags")
    assert tags.input_schema["properties"]["tags"]["type"] == "array"


def test_add_pet_flattens_the_json_body_with_refs_inlined(petstore: ImportResult) -> None:
    definition = tool(petstore, "petstore.addPet")
    params = mapping(definition).params
    assert [(p.name, p.location, p.required) for p in params] == [
        ("id", "body", False), ("name", "body", True), ("category", "body", False),
        ("photoUrls", "body", True), ("tags", "body", False), ("status", "body", False)]
    assert mapping(definition).body_param is None
    schema = definition.input_schema
    assert schema["required"] == ["name", "photoUrls"]
    assert schema["properties"]["category"]["properties"]["name"]["type"] == "string"  # Category inlined
    assert schema["properties"]["tags"]["items"]["properties"]["id"]["format"] == "int64"  # Tag inlined
    assert "$ref" not in repr(schema) and "xml" not in repr(schema) and "x-swagger" not in repr(schema)
    assert schema["properties"]["id"]["examples"] == [10]  # 3.0 `example` → JSON Schema `examples`


def test_delete_pet_is_dangerous_with_its_header(petstore: ImportResult) -> None:
    definition = tool(petstore, "petstore.deletePet")
    assert definition.side_effect == "dangerous"
    assert {(p.name, p.location, p.required) for p in mapping(definition).params} == {
        ("petId", "path", True), ("api_key", "header", False)}
    assert "input `api_key` (header): no description" in definition.missing
    assert any(m.startswith("responses: no success (2xx)") for m in definition.missing)


def test_colliding_inputs_and_non_object_bodies(petstore: ImportResult) -> None:
    update_user = tool(petstore, "petstore.updateUser")
    renamed = next(p for p in mapping(update_user).params if p.wire_name == "username")
    assert (renamed.name, renamed.location) == ("body_username", "body")
    assert "petstore.updateUser: body field `username` is input `body_username` (`username` is taken)" \
        in petstore.notes
    with_list = tool(petstore, "petstore.createUsersWithListInput")
    assert mapping(with_list).body_param == "body"
    assert with_list.input_schema["properties"]["body"]["type"] == "array"


def test_missing_lists_what_a_reviewer_must_supply(petstore: ImportResult) -> None:
    upload = tool(petstore, "petstore.uploadFile")
    assert ("request body: content type application/octet-stream is not supported (JSON only); "
            "the body cannot be sent") in upload.missing
    order = tool(petstore, "petstore.placeOrder")
    assert "input `quantity` (body): no description; it is a number: give its unit" in order.missing
    assert not any("`petId`" in m for m in order.missing if "unit" in m)  # identifiers need no unit
    get_pet = tool(petstore, "petstore.getPetById")
    assert "response 200: fields without a description: id, name, category, photoUrls, tags" in get_pet.missing
    assert "authorization: requires api_key or petstore_auth; configure the system's auth header" in get_pet.missing
    logout = tool(petstore, "petstore.logoutUser")
    assert "response default: no content schema; say what the result means" in logout.missing


def test_reimport_yields_identical_tools() -> None:
    first = run(load_openapi(str(PETSTORE)))
    second = run(load_openapi(str(PETSTORE)))
    assert [t.model_dump() for t in first.tools] == [t.model_dump() for t in second.tools]


def test_names_do_not_depend_on_document_order() -> None:
    document = load_openapi(str(DEVICES))
    reordered = copy.deepcopy(document)
    reordered["paths"] = dict(reversed(list(document["paths"].items())))
    assert sorted(run(document, "dev").names()) == sorted(run(reordered, "dev").names())
    assert run(document, "dev").renamed == run(reordered, "dev").renamed


@pytest.fixture(scope="module")
def devices() -> ImportResult:
    return run(load_openapi(str(DEVICES)), package="plant.dev")


def test_31_yaml_with_local_refs(devices: ImportResult) -> None:
    rule = tool(devices, "plant.dev.createRule")
    assert [(p.name, p.location, p.wire_name, p.required) for p in mapping(rule).params] == [
        ("deviceId", "path", None, True),  # from #/components/parameters/DeviceId at path level
        ("metric", "body", None, True), ("threshold", "body", None, True), ("window", "body", None, False),
        ("enabled", "body", None, False), ("body_deviceId", "body", "deviceId", False),
        ("labels", "body", None, False)]  # body from #/components/requestBodies/RuleBody; read-only id left out
    assert rule.input_schema["properties"]["deviceId"]["description"] == "The device's id in the acquisition system"
    assert "input `window` (body): a number without a unit in its description" in rule.missing
    assert not any("`threshold`" in m for m in rule.missing)  # "°C or kPa" is a unit
    device = tool(devices, "plant.dev.getDevice")
    assert device.output_schema is not None
    properties = device.output_schema["properties"]
    assert properties["temperature"]["type"] == ["number", "null"]
    assert properties["installedOn"]["examples"] == ["2026-01-01"]  # YAML dates stay strings
    assert properties["owner"] == {"type": "object", "properties": {"name": {"type": "string",
                                   "description": "Full name"}}, "description": "Who is responsible for the device"}
    for definition in devices.tools:
        jsonschema.Draft202012Validator.check_schema(definition.input_schema)


def test_31_recursion_collisions_and_unsupported_parts(devices: ImportResult) -> None:
    topology = tool(devices, "plant.dev.putTopology")
    assert topology.input_schema["properties"]["children"]["items"] == {
        "description": "(recursive Node, not expanded further)", "type": "object"}
    assert "schema: recursive $ref #/components/schemas/Node is cut after one level" in topology.missing
    [rename] = devices.renamed
    assert rename.operation == "GET /devices/list" and rename.wanted == "plant.dev.devices_list"
    assert re.fullmatch(r"plant\.dev\.devices_list_[0-9a-f]{8}", rename.name)
    assert "plant.dev.devices_list" in devices.names() and rename.name in devices.names()
    removal = tool(devices, "plant.dev.delete_devices_deviceId")
    assert removal.missing[0].startswith("operationId: none; the name plant.dev.delete_devices_deviceId")
    assert removal.side_effect == "dangerous" and removal.input_schema["required"] == ["deviceId", "X-Reason"]
    assert devices.skipped == ("OPTIONS /session: the OPTIONS method is not supported",)
    whoami = tool(devices, "plant.dev.whoami")
    assert any("cookie parameters are not supported; it is required" in m for m in whoami.missing)
    assert any("content type text/plain is not supported" in m for m in tool(devices, "plant.dev.addNote").missing)
    batch = tool(devices, "plant.dev.replaceRules")
    assert mapping(batch).body_param == "body" and batch.input_schema["required"] == ["deviceId", "body"]
    assert batch.input_schema["properties"]["body"]["description"] == "The complete new rule list"


def test_30_dialect_is_converted() -> None:
    document = {"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/m": {"post": {
        "operationId": "measure", "summary": "Record a measurement",
        "requestBody": {"content": {"application/json": {"schema": {"allOf": [
            {"$ref": "#/components/schemas/Base"},
            {"type": "object", "properties": {"value": {"type": "number", "nullable": True, "minimum": 0,
                                                         "exclusiveMinimum": True,
                                                         "description": "Reading in kPa"}}}]}}}},
        "responses": {"204": {"description": "Stored"}}}}},
        "components": {"schemas": {"Base": {"type": "object", "required": ["sensor"],
                                            "properties": {"sensor": {"type": "string", "description": "Sensor"}}}}}}
    [definition] = run(document).tools
    assert definition.input_schema["properties"]["value"] == {
        "type": ["number", "null"], "exclusiveMinimum": 0, "description": "Reading in kPa"}
    assert definition.input_schema["required"] == ["sensor"]
    assert definition.missing == ()


def test_bad_documents_and_packages() -> None:
    with pytest.raises(OpenApiError, match=r"^x\.yaml: Swagger 2\.0 is not supported"):
        parse_openapi("swagger: '2.0'\npaths: {}\n", "x.yaml")
    with pytest.raises(OpenApiError, match=re.escape("must be 3.0.x or 3.1.x, got '4.0.0'")):
        parse_openapi('{"openapi": "4.0.0"}', "y.json")
    with pytest.raises(OpenApiError, match=r"^z\.yaml: not valid YAML"):
        parse_openapi("openapi: [3.0\n", "z.yaml")
    with pytest.raises(OpenApiError, match=r"^w\.json: not valid JSON"):
        parse_openapi('{"openapi": ', "w.json")
    with pytest.raises(OpenApiError, match="cannot read the document"):
        load_openapi("/nonexistent/spec.yaml")
    with pytest.raises(OpenApiError, match="package"):
        run({"openapi": "3.1.0", "paths": {}}, package="bad package")
