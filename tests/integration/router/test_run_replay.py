"""`router.replay_run` on a real bucket: the same bytes as a new revision of a run's record; only
`run.<id>` keys; a record that is gone names the run; a write over a stale revision is refused.
The whole path (dead letter, CLI, runner) is tests/integration/cli/test_dlq_replay_run.py."""

from __future__ import annotations

import pytest
from nats.aio.client import Client as NATS
from nats.js.kv import KeyValue

from services.router.run_replay import RunReplayer
from shared.contracts.people import may
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_bucket, run_records_bucket
from shared.nats.admin_service import AdminRequestError


async def _replayer(nc: NATS, subjects: Subjects) -> tuple[RunReplayer, KeyValue]:
    spec = run_records_bucket(subjects)
    kv = await ensure_bucket(nc.jetstream(), spec)
    return RunReplayer(kv, spec.name), kv


async def test_a_run_record_is_written_again_with_the_same_bytes(nc: NATS, subjects: Subjects) -> None:
    replayer, kv = await _replayer(nc, subjects)
    first = await kv.create("run.r-1", b'{"run_id": "r-1"}')
    answer = await replayer.replay_run({"key": "run.r-1"})
    assert answer["run_id"] == "r-1" and answer["previous_revision"] == first and answer["revision"] > first
    entry = await kv.get("run.r-1")
    assert entry.revision == answer["revision"] and entry.value == b'{"run_id": "r-1"}'


@pytest.mark.parametrize("key", ["r-1", "run.", "run.a.b", "run.*", None])
async def test_only_a_run_key_is_replayed(nc: NATS, subjects: Subjects, key: object) -> None:
    replayer, _ = await _replayer(nc, subjects)
    with pytest.raises(AdminRequestError) as refused:
        await replayer.replay_run({"key": key})
    assert refused.value.code == "invalid_request"


async def test_a_record_that_is_gone_is_an_error_naming_the_run(nc: NATS, subjects: Subjects) -> None:
    replayer, kv = await _replayer(nc, subjects)
    with pytest.raises(AdminRequestError) as never:
        await replayer.replay_run({"key": "run.r-missing"})
    assert never.value.code == "not_found" and "r-missing" in str(never.value) and "gone" in str(never.value)
    await kv.create("run.r-deleted", b"{}")
    await kv.delete("run.r-deleted")
    with pytest.raises(AdminRequestError) as deleted:
        await replayer.replay_run({"key": "run.r-deleted"})
    assert deleted.value.code == "not_found" and "r-deleted" in str(deleted.value)


def test_replaying_a_run_is_an_operators_operation() -> None:
    assert may(("operator",), "router", "replay_run")
    assert not any(may((role,), "router", "replay_run") for role in ("viewer", "approver", "admin"))
