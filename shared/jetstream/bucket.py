"""A KV bucket as Aurora opens it (`shared.jetstream.streams.ensure_bucket`): nats-py's
`KeyValue`, its context kept where Aurora can use it, and its reads and revision-checked writes
on the services' hot paths without nats-py's per-message parsing.

- `get` of an entry's latest revision: one msgspec decode of a message get, or a direct get's
  headers read as they are (shared/jetstream/kv_reads.py); nats-py builds a JSON request it does
  not send, dataclasses and a parsed timestamp for each.
- `create` and `update` (nats-py's, through `_update`): the write's JetStream ack decoded with
  msgspec (`shared.nats.acked_publish.stored_sequence`), where nats-py's `js.publish` goes
  through `json.loads` and a dataclass built field by field. Errors are nats-py's own:
  `KeyWrongLastSequenceError` for a revision that is not the last, `NoStreamResponseError` with
  no bucket, its `APIError`s for the rest.

On bench-e2e's path these are the runner's look for a stored task and its task's write, and the
gateway's reads of the run's record and the call's ledger entry and its ledger claim and `done`.
"""

from __future__ import annotations

import nats.errors
from nats.js import JetStreamContext
from nats.js.api import Header
from nats.js.errors import APIError, InvalidKeyError, KeyWrongLastSequenceError, NoStreamResponseError
from nats.js.kv import KeyValue, _is_key_valid

from shared.config.stream_plan import StreamPlan
from shared.jetstream.kv_reads import read_direct, read_entry
from shared.nats.acked_publish import stored_sequence

# nats-py's KV: a write expecting another last revision of its key (JSStreamWrongLastSequenceErrF
# and JSStreamWrongLastSequenceConstantErr).
_WRONG_LAST_SEQUENCE = (10071, 10164)


class Bucket(KeyValue):
    """A KV bucket that keeps its JetStream context where Aurora can use it (nats-py's is
    private): its watchers are named pull consumers (shared/jetstream/kvwatch.py) placed by its `plan`."""

    def __init__(self, js: JetStreamContext, name: str, *, direct: bool, plan: StreamPlan) -> None:
        super().__init__(name=name, stream=f"KV_{name}", pre=f"$KV.{name}.", js=js, direct=direct)
        self.js = js
        self.bucket = name
        self.plan = plan

    async def get(self, key: str, revision: int | None = None, validate_keys: bool = True) -> KeyValue.Entry:
        """nats-py's `get`; an entry's latest revision read as the module says."""
        if revision:
            return await super().get(key, revision, validate_keys)
        if validate_keys and not _is_key_valid(key):
            raise InvalidKeyError
        read = read_direct if self._direct else read_entry
        return await read(self.js, self._stream, self.bucket, key)

    async def _update(self, key: str, value: bytes, last: int | None = None, validate_keys: bool = True,
                      msg_ttl: float | None = None) -> int:
        """nats-py's revision-checked write (`create`, `update`), its ack read as the module says."""
        if msg_ttl is not None:  # not one Aurora makes
            return await super()._update(key, value, last, validate_keys, msg_ttl)  # type: ignore[no-any-return]
        if validate_keys and not _is_key_valid(key):
            raise InvalidKeyError(key)
        js = self.js
        try:
            ack = await js._nc.request(f"{self._pre}{key}", value, timeout=js._timeout,
                                       headers={Header.EXPECTED_LAST_SUBJECT_SEQUENCE: str(last or 0)})
        except nats.errors.NoRespondersError:
            raise NoStreamResponseError from None
        try:
            return stored_sequence(ack)
        except APIError as err:
            if err.err_code in _WRONG_LAST_SEQUENCE:
                raise KeyWrongLastSequenceError(description=err.description) from None
            raise
