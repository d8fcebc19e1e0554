"""deploy/demo/ as `aurora apply` reads it (a folder of files, the reviewed tool file among them),
and the pure parts of `OpenApiImport`: the environment in base_url, the spec read beside the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from aurora_cli import toolfile
from aurora_cli.commands.apply import DocumentErrors, load_documents
from aurora_cli.devseed import DEMO_DIR, demo_documents, has_model
from shared.contracts.agent import Agent
from shared.contracts.resource import ResourceError, parse_resource


def test_the_demo_folder_is_every_scenario_in_name_order() -> None:
    documents = load_documents(DEMO_DIR)
    names = [f"{d.kind.kind}/{d.id}" for d in documents]
    assert names[0] == "OpenApiImport/assets"  # the tools exist before the agents that bind them
    for agent in ("weather-desk", "greeter", "friend-desk", "deletion-log", "relay-desk", "rule-desk"):
        assert f"Agent/{agent}" in names
    agents = {d.id: parse_resource(Agent, d.body) for d in documents if d.kind.kind == "Agent"}
    assert "demo.assets.search_assets" in agents["relay-desk"].tools
    assert agents["rule-desk"].chat_approval is True
    assert agents["friend-desk"].allowed_platform_tools == ("event_respond_friend_request",)
    imported = toolfile.parse(documents[0].body)
    assert {t.tool for t in imported.publish} <= set(agents["relay-desk"].tools)


def test_a_folder_is_checked_as_a_whole(tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text("kind: Agent\nid: x\nagent_kind: playbook\n", encoding="utf-8")
    (tmp_path / "b.yaml").write_text("kind: Agent\nid: x\nagent_kind: playbook\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not yaml: [", encoding="utf-8")
    with pytest.raises(DocumentErrors) as raised:
        load_documents(tmp_path)
    assert raised.value.problems == [f"{tmp_path / 'b.yaml'}: document 1 (Agent x): the same Agent as "
                                     f"{tmp_path / 'a.yml'}: document 1"]


def test_an_import_document_names_its_bad_fields(tmp_path: Path) -> None:
    path = tmp_path / "tools.yml"
    path.write_text("kind: OpenApiImport\nsystem: bad name\nbase_url: http://x\nspec: s.yaml\n"
                    "publish: [{tool: a.b}]\n", encoding="utf-8")
    with pytest.raises(DocumentErrors) as raised:
        load_documents(path)
    fields = " ".join(raised.value.problems)
    assert "field system" in fields and "field publish.0.note" in fields
    with pytest.raises(ResourceError):
        toolfile.parse({"kind": "OpenApiImport", "system": "s", "spec": "x"})  # no base_url


def test_the_base_url_comes_from_the_environment_and_the_spec_from_beside_the_file(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text("openapi: 3.0.3\n", encoding="utf-8")
    doc = toolfile.parse({"kind": "OpenApiImport", "system": "assets", "package": "demo.assets",
                          "base_url": "${ASSETS:-http://127.0.0.1:8766}", "spec": "spec.yaml"})
    source = tmp_path / "tools.yml"
    body = toolfile.import_body(doc, source, env={})
    assert body["base_url"] == "http://127.0.0.1:8766" and body["document"] == "openapi: 3.0.3\n"
    assert body["spec"] == str(tmp_path / "spec.yaml") and body["package"] == "demo.assets"
    assert toolfile.import_body(doc, source, env={"ASSETS": "http://assets:1"})["base_url"] == "http://assets:1"
    strict = doc.model_copy(update={"base_url": "${ASSETS}"})
    with pytest.raises(toolfile.ToolFileError, match="ASSETS is not set"):
        toolfile.import_body(strict, source, env={})
    with pytest.raises(toolfile.ToolFileError, match="must be an http"):
        toolfile.import_body(doc, source, env={"ASSETS": "ftp://x"})
    with pytest.raises(toolfile.ToolFileError, match="cannot read"):
        toolfile.import_body(doc.model_copy(update={"spec": "missing.yaml"}), source, env={})
    assert "probe" not in body  # none given: the system's probe stays as it is


def test_the_demo_asset_register_is_probed_and_a_bad_probe_is_named() -> None:
    doc = toolfile.parse(next(d.body for d in load_documents(DEMO_DIR) if d.kind.kind == "OpenApiImport"))
    body = toolfile.import_body(doc, DEMO_DIR / "00-assets-tools.yml", env={})
    assert body["probe"] == {"path": "/healthz", "method": "GET", "interval_seconds": 15.0, "timeout_seconds": 3.0}
    with pytest.raises(ResourceError, match=r"probe\.method"):
        toolfile.parse({"kind": "OpenApiImport", "system": "s", "base_url": "http://x", "spec": "x",
                        "probe": {"method": "POST"}})


def test_the_llm_variant_is_valid_and_not_applied_with_the_folder() -> None:
    documents = load_documents(DEMO_DIR / "llm" / "relay-llm.yml")
    agent = parse_resource(Agent, next(d.body for d in documents if d.kind.kind == "Agent"))
    assert agent.agent_kind == "llm" and agent.model is None  # the runners' default model
    assert "relay-llm" not in {d.id for d in load_documents(DEMO_DIR)}


def test_the_llm_variants_take_the_same_events_as_the_playbooks_above_them() -> None:
    """deploy/demo/llm/: an llm agent per scenario whose binding has the playbook binding's event
    and filters at a higher priority; applied by `aurora dev` only when a default model is set."""
    playbook = {d.id: d.body for d in load_documents(DEMO_DIR) if d.kind.kind == "Binding"}
    llm = load_documents(DEMO_DIR / "llm")
    agents = {d.id: parse_resource(Agent, d.body) for d in llm if d.kind.kind == "Agent"}
    assert set(agents) == {"relay-llm", "rule-llm", "greeter-llm", "friend-llm"}
    assert all(a.agent_kind == "llm" and a.model is None for a in agents.values())
    assert agents["rule-llm"].chat_approval is True
    assert agents["rule-llm"].tools == parse_resource(Agent, next(
        d.body for d in load_documents(DEMO_DIR) if d.id == "rule-desk")).tools
    assert agents["friend-llm"].allowed_platform_tools == ("event_respond_friend_request",)
    for binding in (d.body for d in llm if d.kind.kind == "Binding"):
        shadowed = playbook[binding["id"].removesuffix("-llm")]
        assert (binding["event_pattern"], binding["filters"]) == (shadowed["event_pattern"], shadowed["filters"])
        assert binding["priority"] > max(b.get("priority", 0) for b in playbook.values()), binding["id"]
    assert has_model({"AURORA_MODEL_BASE_URL": "http://ollama:11434/v1", "AURORA_MODEL": "qwen2.5:0.5b"})
    assert not has_model({"AURORA_MODEL_BASE_URL": "http://ollama:11434/v1"}) and not has_model({})
    with_llm = [d.id for d in demo_documents(with_llm=True)]
    assert "rule-llm" in with_llm and "rule-llm" not in [d.id for d in demo_documents()]


def test_documents_come_in_dependency_order_across_files(tmp_path: Path) -> None:
    # As deploy/demo/llm/relay-llm.yml is written: the agent, then the skill it names, then its binding.
    (tmp_path / "a.yml").write_text(
        "kind: Binding\nid: b\nevent_pattern: '*'\ntarget_type: agent\ntarget_id: x\n---\n"
        "kind: Agent\nid: x\nagent_kind: llm\nskills: [s]\n", encoding="utf-8")
    (tmp_path / "b.yml").write_text("kind: Skill\nid: s\ntext: first confirm\n---\n"
                                    "kind: Agent\nid: y\nagent_kind: playbook\n", encoding="utf-8")
    assert [f"{d.kind.kind}/{d.id}" for d in load_documents(tmp_path)] == [
        "Skill/s", "Agent/x", "Agent/y", "Binding/b"]  # within a kind, the files' order
    shipped = [d.kind.kind for d in demo_documents(with_llm=True)]
    assert shipped.index("Skill") > shipped.index("OpenApiImport")
    assert max(i for i, k in enumerate(shipped) if k == "Skill") < shipped.index("Agent")
    assert max(i for i, k in enumerate(shipped) if k == "Agent") < shipped.index("Binding")


def test_an_unknown_kind_lists_the_kinds_apply_takes(tmp_path: Path) -> None:
    path = tmp_path / "x.yml"
    path.write_text("kind: Gadget\nid: x\n---\nkind: Tool\nname: t\n", encoding="utf-8")
    with pytest.raises(DocumentErrors) as raised:
        load_documents(path)
    [gadget, tool] = raised.value.problems
    assert gadget == (f"{path}: document 1: field kind: unknown kind 'Gadget'; apply takes: System, OpenApiImport, "
                      "A2AImport, Skill, Agent, Pipeline, ApprovalPolicy, Binding, Schedule")
    assert "unknown kind 'Tool'" in tool  # read with `aurora get tools`, changed by its own commands


def test_an_openapi_import_document_names_the_header_its_system_deduplicates_on(tmp_path: Path) -> None:
    doc = toolfile.parse({"kind": "OpenApiImport", "system": "shop", "base_url": "http://x",
                          "spec": "https://example.com/openapi.json", "idempotency_header": "Idempotency-Key"})
    assert toolfile.import_body(doc, tmp_path / "tools.yml", env={})["idempotency_header"] == "Idempotency-Key"
    with pytest.raises(ResourceError, match="idempotency_header"):
        toolfile.parse({"kind": "OpenApiImport", "system": "shop", "base_url": "http://x", "spec": "s",
                        "idempotency_header": "Idempotency Key"})
