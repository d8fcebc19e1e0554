"""Dead letters: what a stage could not process goes to `amp.dlq.<stage>` with the reason."""

from __future__ import annotations

from nats.js import JetStreamContext

from shared.clock import now_iso
from shared.subjects import Subjects

REASON = "Aurora-Dlq-Reason"
STAGE = "Aurora-Dlq-Stage"
ORIGINAL_SUBJECT = "Aurora-Dlq-Subject"
ORIGINAL_STREAM = "Aurora-Dlq-Stream"
ORIGINAL_SEQUENCE = "Aurora-Dlq-Sequence"
AT = "Aurora-Dlq-At"


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
) -> bool:
    """Keep the original bytes untouched and say why in headers; true when this stored a new
    dead letter, false when JetStream already had it.

    When the original has a stream sequence, it names the dead letter (`Nats-Msg-Id`), so
    a stage that crashes after dead-lettering and sees the message again adds no second copy.
    """
    headers = {
        REASON: reason.replace("\r", " ").replace("\n", " ")[:1000],
        STAGE: stage,
        ORIGINAL_SUBJECT: original_subject,
        AT: now_iso(),
    }
    if stream is not None and sequence is not None:
        headers[ORIGINAL_STREAM] = stream
        headers[ORIGINAL_SEQUENCE] = str(sequence)
        headers["Nats-Msg-Id"] = f"dlq:{stage}:{stream}:{sequence}"
    ack = await js.publish(subjects.dlq(stage), data, headers=headers)
    return not ack.duplicate
