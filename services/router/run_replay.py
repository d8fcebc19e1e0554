"""`amp.admin.router.replay_run`: run again a run the runners gave up on (`aurora dlq replay`).

A run is its record (`$KV.AMP_RUN_RECORDS.run.<run id>`, shared/jetstream/run_records.py), and
only the router writes records: the gateway trusts them for custody, so the operator may not
publish there. A dead-lettered run is replayed here instead: the record is written again, the
same bytes as a new revision of the same key, which the runners' durable delivers again. The
write is checked against the revision read (`last`), so two replays racing make one delivery,
and the runner's create-only task keeps a run that already finished from running twice.
"""

from __future__ import annotations

from typing import Any

from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from shared.jetstream.run_records import RUN_KEY_PREFIX, already_stored, is_record_key
from shared.nats.admin_service import AdminRequestError
from shared.observability.logs import get_logger

log = get_logger("aurora.router.run_replay")


class RunReplayer:
    def __init__(self, records: KeyValue, bucket: str) -> None:
        self._records = records
        self._bucket = bucket

    async def replay_run(self, body: dict[str, Any]) -> dict[str, Any]:
        key = body.get("key")
        run_id = key[len(RUN_KEY_PREFIX):] if isinstance(key, str) and key.startswith(RUN_KEY_PREFIX) else None
        if run_id is None or not is_record_key(run_id):
            raise AdminRequestError("invalid_request", f'send {{"key": "{RUN_KEY_PREFIX}<run id>"}}: only a run\'s '
                                                       f"record is replayed (got {key!r})")
        assert isinstance(key, str)
        try:
            entry = await self._records.get(key)
        except KeyNotFoundError:  # KeyDeletedError too: a deleted record is no run
            entry = None
        if entry is None or not entry.value or entry.revision is None:
            raise AdminRequestError("not_found", f"run {run_id}: its record is gone from {self._bucket} (past its "
                                                 "30-day TTL, or deleted), so there is nothing to replay")
        try:
            revision = await self._records.update(key, entry.value, last=entry.revision)
        except KeyWrongLastSequenceError as exc:
            raise self._raced(run_id) from exc
        except Exception as exc:
            if already_stored(exc):
                raise self._raced(run_id) from exc
            raise
        log.info("run replayed", run=run_id, revision=revision, previous=entry.revision)
        return {"run_id": run_id, "key": key, "stream": "KV_" + self._bucket, "revision": revision,
                "previous_revision": entry.revision}

    @staticmethod
    def _raced(run_id: str) -> AdminRequestError:
        return AdminRequestError("conflict", f"run {run_id}: its record changed while it was replayed (another "
                                             "replay wrote it first): it is delivered again once")
