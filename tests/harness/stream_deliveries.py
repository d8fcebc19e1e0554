"""An attack on a service's request subject by a push consumer (docs/security.md, "No delivery
onto request subjects"): nats-server does not check a push consumer's deliver subject against its
creator's permissions, so stored bytes can be delivered onto any subject a service listens on."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from nats.js.api import AckPolicy, ConsumerConfig

from services.runner.tools.sampling import QUEUE as SAMPLING_QUEUE
from shared.contracts.subjects import Subjects
from tests.harness.secure_nats import Session

SUBJECTS = Subjects("amp")


@dataclass(frozen=True)
class Target:
    subject: str
    group: str | None  # the subscription's queue group: a push consumer must deliver to it
    what: str
    service: str  # its NATS user, which audits the refusal


SAMPLING = Target(SUBJECTS.model_sample, SAMPLING_QUEUE, "runners sampling", "runner")


async def deliver(session: Session, target: Target, stream: str, filter_subject: str | None = None) -> str:
    """A push consumer on `stream` delivering onto the target's subject; its name."""
    name = f"{session.user}_eph_{uuid.uuid4().hex}"
    await session.nc.jetstream().add_consumer(stream, ConsumerConfig(
        name=name, deliver_subject=target.subject, deliver_group=target.group, ack_policy=AckPolicy.NONE,
        filter_subject=filter_subject, inactive_threshold=30.0))
    return name
