"""Dead letters: what a stage could not process goes to `amp.dlq.<stage>` with the reason.

A dead letter is the original bytes, untouched, with headers saying where it came from, why it
was given up and how often it was delivered, and the original's own headers (JSON), so that
`aurora dlq replay` can send it again exactly as it was. Two writers name it the same way
(`Nats-Msg-Id` = `dlq:<stage>:<stream>:<seq>`): the stage's consumer loop, which writes it
before it terminates the message, and the advisory listener (`shared/jetstream/advisories.py`), which
writes what a stage could not (it died on the last delivery); JetStream keeps the first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from nats.js import JetStreamContext

from shared.clock import now_iso
from shared.contracts.subjects import Subjects

REASON = "Aurora-Dlq-Reason"
STAGE = "Aurora-Dlq-Stage"
ORIGINAL_SUBJECT = "Aurora-Dlq-Subject"
ORIGINAL_STREAM = "Aurora-Dlq-Stream"
ORIGINAL_SEQUENCE = "Aurora-Dlq-Sequence"
AT = "Aurora-Dlq-At"
DELIVERIES = "Aurora-Dlq-Deliveries"
CONSUMER = "Aurora-Dlq-Consumer"
ORIGINAL_HEADERS = "Aurora-Dlq-Headers"
VIA = "Aurora-Dlq-Via"  # "stage": the stage wrote it; "advisory": the advisory listener did

MAX_HEADERS_BYTES = 16 * 1024  # original headers beyond this are cut (said in the header itself)


def dead_letter_id(stage: str, stream: str, sequence: int) -> str:
    """The one name both writers give the dead letter of one stored message."""
    return f"dlq:{stage}:{stream}:{sequence}"


def encode_original_headers(headers: Mapping[str, str] | None) -> str | None:
    """The original's headers as one JSON object, or None when it had none."""
    if not headers:
        return None
    # ASCII only: a header line is bytes on the wire, and JSON escapes keep any value intact.
    text = json.dumps(dict(headers), ensure_ascii=True, separators=(",", ":"))
    if len(text.encode()) > MAX_HEADERS_BYTES:
        return json.dumps({"Aurora-Dlq-Cut": f"the original headers exceeded {MAX_HEADERS_BYTES} bytes"})
    return text


def decode_original_headers(value: str | None) -> dict[str, str]:
    """The original's headers back from `Aurora-Dlq-Headers` (empty when absent or unreadable)."""
    if not value:
        return {}
    try:
        decoded = json.loads(value)
    except ValueError:
        return {}
    if not isinstance(decoded, dict):
        return {}
    return {str(k): str(v) for k, v in decoded.items()}


def dead_letter_headers(*, stage: str, reason: str, original_subject: str, stream: str | None = None,
                        sequence: int | None = None, headers: Mapping[str, str] | None = None,
                        deliveries: int | None = None, consumer: str | None = None,
                        via: str = "stage", at: str | None = None) -> dict[str, str]:
    out = {
        REASON: reason.replace("\r", " ").replace("\n", " ")[:1000],
        STAGE: stage,
        ORIGINAL_SUBJECT: original_subject,
        AT: at or now_iso(),
        VIA: via,
    }
    if stream is not None and sequence is not None:
        out[ORIGINAL_STREAM] = stream
        out[ORIGINAL_SEQUENCE] = str(sequence)
        out["Nats-Msg-Id"] = dead_letter_id(stage, stream, sequence)
    if deliveries is not None:
        out[DELIVERIES] = str(deliveries)
    if consumer:
        out[CONSUMER] = consumer
    encoded = encode_original_headers(headers)
    if encoded is not None:
        out[ORIGINAL_HEADERS] = encoded
    return out


async def dead_letter(
    js: JetStreamContext,
    subjects: Subjects,
    *,
    stage: str,
    data: bytes,
    reason: str,
    original_subject: str,
    stream: str | None = None,
    sequence: int | None = None,
    headers: Mapping[str, str] | None = None,
    deliveries: int | None = None,
    consumer: str | None = None,
    via: str = "stage",
) -> bool:
    """Keep the original bytes untouched and say why in headers; true when this stored a new
    dead letter, false when JetStream already had it.

    When the original has a stream sequence, it names the dead letter (`Nats-Msg-Id`), so
    a stage that crashes after dead-lettering and sees the message again adds no second copy,
    nor does the advisory listener that hears of the same message.
    """
    out = dead_letter_headers(stage=stage, reason=reason, original_subject=original_subject, stream=stream,
                              sequence=sequence, headers=headers, deliveries=deliveries, consumer=consumer,
                              via=via)
    ack = await js.publish(subjects.dlq(stage), data, headers=out)
    return not ack.duplicate
