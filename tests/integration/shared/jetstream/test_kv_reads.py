"""A bucket's latest entry read with one msgspec decode (shared/jetstream/kv_reads.py) is what
nats-py's own `KeyValue.get` gives, for every kind of entry, on a real nats-server; a bucket
Aurora creates on one server is read with direct gets, which answer the same, and as nats-py's
direct get reads them; its revision-checked writes answer as nats-py's (shared/jetstream/bucket.py);
and a bucket's last sequence is what `KeyValue.status()` says."""

from __future__ import annotations

from collections.abc import Awaitable

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.errors import KeyNotFoundError, NotFoundError
from nats.js.kv import KeyValue

from shared.config.stream_plan import DEFAULT_PLAN
from shared.jetstream.bucket import Bucket
from shared.jetstream.kv_reads import last_sequence, read_entry
from shared.jetstream.streams import BucketSpec, ensure_bucket


async def _both(kv: KeyValue, bucket: Bucket, key: str) -> tuple[object, object]:
    """nats-py's answer and Aurora's, each an entry's fields or the error's type."""
    answers: list[object] = []
    for read in (kv.get, bucket.get):  # nats-py's, then Aurora's, on the same bucket
        try:
            entry = await read(key)
            answers.append((entry.key, entry.value, entry.revision, entry.operation))
        except KeyNotFoundError as exc:
            answers.append(type(exc))
    return answers[0], answers[1]


async def test_every_kind_of_entry_reads_as_nats_py_reads_it(nc: NATS) -> None:
    js = nc.jetstream()
    kv = await js.create_key_value(bucket="READS", history=3)
    bucket = Bucket(js, "READS", direct=False, plan=DEFAULT_PLAN)
    answers = await _every_kind(kv, bucket)
    assert {key: ours for key, (_, ours) in answers.items()} == {key: theirs for key, (theirs, _) in answers.items()}
    assert answers["changed"][1] == ("changed", b"two", 4, None)
    assert answers["gone"][1] is KeyNotFoundError and answers["never"][1] is KeyNotFoundError


async def test_a_bucket_created_on_one_server_reads_by_direct_get_as_by_message_get(nc: NATS) -> None:
    """A direct get is answered by the stream's server itself, without the JetStream API's JSON
    and base64; on one server it reads what was just written, as a message get does."""
    js = nc.jetstream()
    direct = await ensure_bucket(js, BucketSpec(name="DIRECT_READS", history=3))
    assert (await js.stream_info("KV_DIRECT_READS")).config.allow_direct
    by_message_get = Bucket(js, "DIRECT_READS", direct=False, plan=DEFAULT_PLAN)
    answers = await _every_kind(direct, by_message_get)
    assert {key: by_direct for key, (by_direct, _) in answers.items()} == {
        key: by_message for key, (_, by_message) in answers.items()}
    assert answers["changed"][0] == ("changed", b"two", 4, None)
    asked: list[str] = []

    async def noted(msg: Msg) -> None:
        asked.append(msg.subject)

    watching = await nc.subscribe("$JS.API.>", cb=noted)
    await nc.flush()
    await direct.get("plain")
    await nc.flush()
    await watching.unsubscribe()
    assert asked == ["$JS.API.DIRECT.GET.KV_DIRECT_READS.$KV.DIRECT_READS.plain"], asked


async def test_a_direct_get_reads_every_kind_of_entry_as_nats_py_s_direct_get(nc: NATS) -> None:
    js = nc.jetstream()
    ours = await ensure_bucket(js, BucketSpec(name="DIRECT_SAME", history=3))
    theirs = await js.key_value("DIRECT_SAME")  # nats-py's own, reading by direct get as the stream allows
    assert ours._direct and theirs._direct
    answers = await _every_kind(theirs, ours)
    assert {key: mine for key, (_, mine) in answers.items()} == {key: its for key, (its, _) in answers.items()}
    assert answers["changed"][1] == ("changed", b"two", 4, None)
    assert answers["empty"][1] == ("empty", None, 5, None)  # an empty value reads as nats-py gives it
    assert answers["gone"][1] is KeyNotFoundError and answers["purged"][1] is KeyNotFoundError


async def test_revision_checked_writes_answer_as_nats_py_s(nc: NATS) -> None:
    js = nc.jetstream()
    ours = await ensure_bucket(js, BucketSpec(name="WRITES_OURS", history=3))
    await ensure_bucket(js, BucketSpec(name="WRITES_THEIRS", history=3))
    theirs = await js.key_value("WRITES_THEIRS")
    missing_ours = Bucket(js, "NO_SUCH_BUCKET", direct=True, plan=DEFAULT_PLAN)
    missing_theirs = KeyValue(name="NO_SUCH_BUCKET", stream="KV_NO_SUCH_BUCKET", pre="$KV.NO_SUCH_BUCKET.",
                              js=js, direct=True)
    said_ours = await _writes(ours, missing_ours)
    said_theirs = await _writes(theirs, missing_theirs)
    assert said_ours == said_theirs
    assert said_ours == [1, "KeyWrongLastSequenceError", 2, "KeyWrongLastSequenceError", 4,
                         "KeyWrongLastSequenceError", "NoStreamResponseError"]


async def _writes(kv: KeyValue, missing: KeyValue) -> list[object]:
    """What each write gives: its revision, or its error's class name."""
    said: list[object] = []

    async def write(made: Awaitable[int]) -> None:
        try:
            said.append(await made)
        except Exception as exc:
            said.append(type(exc).__name__)

    await write(kv.create("a", b"1"))
    await write(kv.create("a", b"again"))  # there already
    await write(kv.update("a", b"2", last=1))
    await write(kv.update("a", b"3", last=1))  # not the last revision
    await kv.delete("a")  # revision 3
    await write(kv.create("a", b"4"))  # created again over its delete marker
    await write(kv.update("never", b"x", last=9))
    await write(missing.create("a", b"1"))
    return said


async def _every_kind(kv: KeyValue, bucket: Bucket) -> dict[str, tuple[object, object]]:
    """Every kind of entry written through `kv`, each read through `kv` and `bucket`."""
    await kv.put("plain", b"value")
    await kv.create("created", b"written create-only: with headers")  # Nats-Expected-Last-Subject-Sequence
    await kv.put("changed", b"one")
    await kv.put("changed", b"two")
    await kv.put("empty", b"")
    await kv.put("gone", b"x")
    await kv.delete("gone")
    await kv.put("purged", b"x")
    await kv.purge("purged")
    await kv.put("a.b.c", "nested ü".encode())
    keys = ["plain", "created", "changed", "empty", "gone", "purged", "a.b.c", "never"]
    return {key: await _both(kv, bucket, key) for key in keys}


async def test_a_missing_stream_is_an_error_not_an_entry(nc: NATS) -> None:
    with pytest.raises(KeyNotFoundError):
        await read_entry(nc.jetstream(), "KV_NO_SUCH", "NO_SUCH", "key")


async def test_a_bucket_s_last_sequence_is_the_one_its_status_says_through_writes_deletes_and_purges(nc: NATS) -> None:
    js = nc.jetstream()
    kv = await js.create_key_value(bucket="LAST_SEQ", history=1)
    said: list[tuple[int, int]] = []

    async def both() -> None:
        said.append((await last_sequence(kv), (await kv.status()).stream_info.state.last_seq))

    await both()  # empty
    await kv.put("a", b"1")
    await kv.put("b", b"2")
    await kv.put("a", b"3")  # replaces a's first revision: the last sequence still grows
    await both()
    await kv.delete("b")
    await kv.purge("a")
    await both()
    assert said == [(0, 0), (3, 3), (5, 5)]
    await js.delete_key_value("LAST_SEQ")
    with pytest.raises(NotFoundError):
        await last_sequence(kv)
