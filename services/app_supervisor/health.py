"""Process health records in the apps KV bucket (`proc.<app_token>.<instance>`).

They are written on every change and never deleted by the supervisor, so they survive an
abnormal stop: the last record says what the process was doing and why it last ended.
"""

from __future__ import annotations

import msgspec
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.errors import Error as JetStreamError
from nats.js.kv import KeyValue

from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.health import ProcessHealth, process_key
from shared.contracts.subjects import Subjects, app_token
from shared.jetstream.streams import apps_bucket, ensure_bucket
from shared.observability.logs import get_logger

log = get_logger("aurora.app_supervisor.health")
_encoder = msgspec.json.Encoder()


class HealthStore:
    """Writes the supervisor's records into the apps bucket (`open_health_store` opens it)."""

    def __init__(self, kv: KeyValue) -> None:
        self._kv = kv

    async def put(self, record: ProcessHealth) -> None:
        """Write a record; a failure is logged, never raised (health must not stop the relay)."""
        key = process_key(app_token(record.app), record.instance)
        try:
            await self._kv.put(key, _encoder.encode(record))
        except (NatsError, JetStreamError, TimeoutError) as exc:
            log.error("health write failed", key=key, status=record.status, error=str(exc))


async def open_health_store(js: JetStreamContext, subjects: Subjects, plan: StreamPlan = DEFAULT_PLAN) -> HealthStore:
    """The store over the apps bucket, made if it does not exist yet."""
    return HealthStore(await ensure_bucket(js, apps_bucket(subjects), plan=plan))
