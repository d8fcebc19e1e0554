"""The step log's secret arguments: kept redacted, sealed for a runner with the same key, and a
model turn's proposed calls redacted by their tool's schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.runner.config import load_runner_settings
from services.runner.steps.secrets import SealBroken, StepSecrets, seal_key_material
from shared.redaction import MARKER, Redactor

SCHEMA = {"type": "object", "properties": {"user": {"type": "string"},
                                           "pin": {"type": "string", "writeOnly": True}}}


def secrets(key: str = "k-1") -> StepSecrets:
    return StepSecrets(Redactor(), lambda tool: SCHEMA if tool == "a.set" else None, key)


def test_secret_arguments_are_kept_redacted_and_sealed_for_the_same_key() -> None:
    full = {"user": "ann", "pin": "9876", "password": "pw-123456"}
    kept, sealed = secrets().keep("a.set", full)
    assert kept == {"user": "ann", "pin": MARKER, "password": MARKER}
    assert sealed is not None and "9876" not in sealed and "pw-123456" not in sealed
    assert secrets().opened(sealed) == full  # another runner, same key
    with pytest.raises(SealBroken):
        secrets("another key").opened(sealed)


def test_arguments_without_secrets_are_kept_as_they_are() -> None:
    assert secrets().keep("a.set", {"user": "ann"}) == ({"user": "ann"}, None)


def test_a_model_turn_keeps_its_proposed_calls_redacted() -> None:
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "a__set", "arguments": json.dumps(
            {"user": "ann", "pin": "9876"})}}]}
    kept = secrets().model_message(message, {"a__set": "a.set"})
    assert json.loads(kept["tool_calls"][0]["function"]["arguments"]) == {"user": "ann", "pin": MARKER}
    assert "9876" in message["tool_calls"][0]["function"]["arguments"]  # the live turn is untouched


def test_the_seal_key_comes_from_the_setting_then_the_runner_credential() -> None:
    assert seal_key_material({"AURORA_RUNNER_SEAL_KEY": "s", "NATS_PASSWORD": "p"})[1] == "AURORA_RUNNER_SEAL_KEY"
    assert seal_key_material({"NATS_USER": "runner", "NATS_PASSWORD": "p"})[1] == "the runner's NATS password"
    assert seal_key_material({})[1] == "the development key"


def test_the_seal_key_is_the_same_whether_the_password_is_given_by_value_or_by_file(tmp_path: Path) -> None:
    creds = tmp_path / "runner.env"
    creds.write_text("NATS_USER=runner\nNATS_PASSWORD=p-42\n")
    creds.chmod(0o600)
    by_file = seal_key_material({"NATS_CREDS_ENV_FILE": str(creds)})
    assert by_file == seal_key_material({"NATS_USER": "runner", "NATS_PASSWORD": "p-42"})
    assert by_file[1] == "the runner's NATS password"


def test_the_settings_loader_reads_the_seal_key_and_the_api_keys_before_anything_connects(tmp_path: Path) -> None:
    creds = tmp_path / "runner.env"
    creds.write_text("NATS_USER=runner\nNATS_PASSWORD=p-42\n")
    creds.chmod(0o600)
    config = load_runner_settings({"NATS_CREDS_ENV_FILE": str(creds), "HOUSE_KEY": "sk-house"})
    creds.unlink()  # nothing reads the file again after the settings
    assert config.seal_key == seal_key_material({"NATS_USER": "runner", "NATS_PASSWORD": "p-42"})
    assert config.models.api_keys.get("HOUSE_KEY") == "sk-house"
    assert "p-42" not in repr(config) and "sk-house" not in repr(config)
