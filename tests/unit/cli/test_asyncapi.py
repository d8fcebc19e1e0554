"""docs/asyncapi.yaml is generated from the contracts, complete, consistent and up to date."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from aurora_cli import asyncapi
from shared.contracts.signals import NativeEventSignal, encode_signal

DOCS = Path(__file__).resolve().parents[3] / "docs"
DOC = asyncapi.build_document()


def test_the_committed_documents_are_up_to_date() -> None:
    stale = asyncapi.stale_files(DOCS)
    assert stale == [], f"out of date: {stale}; run `make asyncapi`"


def test_the_committed_yaml_parses_to_the_generated_document() -> None:
    assert yaml.safe_load((DOCS / "asyncapi.yaml").read_text(encoding="utf-8")) == DOC


def test_a_stale_missing_or_leftover_file_is_detected(tmp_path: Path) -> None:
    asyncapi.write(tmp_path)
    assert asyncapi.stale_files(tmp_path) == []
    (tmp_path / "schemas" / "amp-event.json").write_text("{}")
    (tmp_path / "schemas" / "old.json").write_text("{}")
    (tmp_path / "asyncapi.yaml").unlink()
    assert asyncapi.stale_files(tmp_path) == ["asyncapi.yaml", "schemas/amp-event.json", "schemas/old.json"]
    asyncapi.write(tmp_path)
    assert asyncapi.stale_files(tmp_path) == []


def _generated_in_a_fresh_process(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run([sys.executable, "-m", "aurora_cli.asyncapi"], cwd=DOCS.parent, env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


def test_generation_is_deterministic_and_follows_the_prefix() -> None:
    # Other processes, with other string hashes (set and dict-of-set orders differ between
    # them), write the very same document as this one.
    expected = asyncapi.render_yaml(DOC)
    assert [_generated_in_a_fresh_process(seed) for seed in ("1", "2")] == [expected, expected]
    other = asyncapi.build_document("acme")
    assert other["channels"]["events"]["address"] == "acme.evt.{app}.{type}"
    assert other["channels"]["events"]["x-aurora-stream"] == "ACME_EVENTS"


@pytest.mark.parametrize("pattern", [
    r"^amp\.evt\.\{app\}\.\{type\}$", r"^amp\.sig\.\{app\}\.\{kind\}$",
    r"^amp\.mcp\.\{app\}\.\{instance\}\.c2s$", r"^amp\.mcp\.\{app\}\.\{instance\}\.s2c$",
    r"^amp\.tool\.call$", r"^\$KV\.AMP_RUN_RECORDS\.run\.\{run_id\}$", r"^amp\.audit\.\{app\}$",
    r"^amp\.dlq\.\{stage\}$", r"^amp\.admin\.\{area\}\.\{verb\}$",
])
def test_every_subject_family_of_the_architecture_has_a_channel(pattern: str) -> None:
    addresses = [c["address"] for c in DOC["channels"].values() if c["address"]]
    assert any(re.match(pattern, a) for a in addresses), addresses


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _resolve(ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = DOC
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def test_every_reference_resolves() -> None:
    refs = _refs(DOC)
    assert len(refs) > 50
    for ref in refs:
        _resolve(ref)


def test_parameters_match_the_address_placeholders() -> None:
    for key, channel in DOC["channels"].items():
        placeholders = set(re.findall(r"\{(\w+)\}", channel["address"] or ""))
        assert placeholders == set(channel.get("parameters", {})), key


def test_operations_use_their_channels_messages() -> None:
    for key, op in DOC["operations"].items():
        channel = op["channel"]["$ref"].removeprefix("#/channels/")
        for message in op["messages"]:
            assert message["$ref"].startswith(f"#/channels/{channel}/messages/"), key
        assert op["action"] in ("send", "receive")


def test_every_process_has_operations() -> None:
    services = {tag["name"] for op in DOC["operations"].values() for tag in op["tags"]}
    assert {"app-supervisor", "mcp-gateway", "event-bridge", "router", "runner"} <= services


def test_signal_messages_follow_the_signal_union() -> None:
    kinds = DOC["channels"]["signals"]["parameters"]["kind"]["enum"]
    assert set(kinds) >= {"lifecycle", "list_changed", "tool_result", "resource_read", "notification",
                          "native_event"}
    assert len(DOC["channels"]["signals"]["messages"]) == len(kinds)


def _schema(name: str) -> dict[str, Any]:
    return json.loads((DOCS / "schemas" / name).read_text(encoding="utf-8"))


def test_the_exported_event_schema_accepts_an_event_and_rejects_a_faked_one() -> None:
    validator = Draft202012Validator(_schema("amp-event.json"))
    event = {"header": {"protocol": "amp/1.0", "method": "aurora/event", "message_id": "m-1",
                        "timestamp": "2026-06-19T12:00:00+08:00", "source": {"app": "im.polaris.qq"}},
             "payload": {"type": "message.received", "data": {"text": "你好"}}}
    assert list(validator.iter_errors(event)) == []
    event["payload"]["invented"] = "x"
    assert list(validator.iter_errors(event)) != []


def test_the_exported_signal_schema_accepts_an_encoded_signal() -> None:
    signal = NativeEventSignal(signal_id="s-1", app="a", observed_at="2026-01-01T00:00:00Z",
                               event={"payload": {"type": "x.y"}})
    validator = Draft202012Validator(_schema("signal.json"))
    assert list(validator.iter_errors(json.loads(encode_signal(signal)))) == []
    assert list(validator.iter_errors({"kind": "nope", "signal_id": "s"})) != []


def test_main_writes_and_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert asyncapi.main(["--check", "--docs", str(tmp_path)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert asyncapi.main(["--write", "--docs", str(tmp_path)]) == 0
    assert asyncapi.main(["--check", "--docs", str(tmp_path)]) == 0
