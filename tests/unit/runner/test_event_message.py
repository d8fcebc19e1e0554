"""What a model sees of the current event: the event as data, a large payload cut to its start."""

from __future__ import annotations

import json

from services.runner.drivers.prompt import EVENT_DATA_LIMIT, describe_event


def shown(message: str) -> dict[str, object]:
    return dict(json.loads(message.split("\n", 1)[1].split("\n\nThe message text", 1)[0]))


def test_the_event_is_shown_as_data_with_its_source() -> None:
    view = {"type": "message.received", "source": {"app": "im.polaris.qq"}, "data": {"text": "你好"},
            "message_id": "evt-1", "expire_at": None}
    seen = shown(describe_event(view, None))
    assert seen == {"type": "message.received", "source": {"app": "im.polaris.qq"}, "data": {"text": "你好"}}


def test_a_large_payload_reaches_the_model_as_its_start_and_size() -> None:
    blob = "x" * (3 * EVENT_DATA_LIMIT)
    message = describe_event({"type": "file.uploaded", "data": {"blob": blob}}, "summary")
    data = shown(message)["data"]
    assert isinstance(data, dict) and data["truncated"] is True
    assert data["size_chars"] == len(json.dumps({"blob": blob})) and len(data["start"]) == EVENT_DATA_LIMIT
    assert len(message) < 2 * EVENT_DATA_LIMIT
    assert message.endswith("The message text, after the pipeline's pre-processing:\nsummary")
