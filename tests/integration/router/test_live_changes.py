"""The router follows changes as they happen, and never acks an event whose run was not stored."""

from __future__ import annotations

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_bucket, run_records_bucket
from shared.nats.admin_service import admin_request
from tests.harness.broker import jetstream_time
from tests.integration.router.helpers import (
    apply,
    poll,
    publish_events,
    router_current,
    run_count,
    running_router,
)
from tests.unit.router.factories import event_doc


async def _status(nc: NATS, subjects: Subjects, message_id: str) -> str | None:
    try:
        found = await admin_request(nc, subjects, "router", "trace", {"message_id": message_id})
    except Exception:
        return None
    return str(found["status"])


async def test_bindings_and_agents_changes_apply_to_the_next_event(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    async with running_router(nc, subjects):
        await apply(nc, subjects, "agents", {"id": "chat", "agent_kind": "llm", "events": ["message.*"]})
        await apply(nc, subjects, "bindings", {"id": "chat", "event_pattern": "message.*",
                                               "target_type": "agent", "target_id": "chat"})
        # an entry written past the admin API that is not a binding is ignored, not fatal
        await (await js.key_value(subjects.stream("BINDINGS"))).put("junk", b'{"id": "junk"}')

        async def route(expected: str) -> None:
            await router_current(nc, subjects)  # a change, unlike an addition, is not read through
            doc = event_doc("message.received")
            await publish_events(js, subjects, [doc])

            async def done() -> bool:
                return await _status(nc, subjects, doc["header"]["message_id"]) == expected

            await poll(done, what=expected)

        async def loaded() -> bool:  # the junk entry is not counted as a binding
            health = await admin_request(nc, subjects, "router", "health")
            return bool(health["bindings"] == 1 and health["agents"] == 1)

        await poll(loaded, what="the binding loaded")
        await route("dispatched")
        await apply(nc, subjects, "agents", {"id": "chat", "agent_kind": "llm", "events": ["message.*"],
                                             "enabled": False})
        await route("processor_disabled")
        await admin_request(nc, subjects, "agents", "delete", {"id": "chat"})
        await route("processor_not_found")
        await admin_request(nc, subjects, "bindings", "delete", {"id": "chat"})
        await route("route_not_found")


async def test_an_event_whose_run_cannot_be_stored_is_retried_not_lost(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    async with running_router(nc, subjects) as router:
        await apply(nc, subjects, "agents", {"id": "chat", "agent_kind": "llm", "events": ["*"]})
        await apply(nc, subjects, "bindings", {"id": "all", "event_pattern": "*",
                                               "target_type": "agent", "target_id": "chat"})
        await js.delete_key_value(run_records_bucket(subjects).name)  # runs (their records) have nowhere to go
        doc = event_doc("message.received")
        await publish_events(js, subjects, [doc])

        async def retried() -> bool:
            return router.parts.router.stats.retried >= 1

        await poll(retried, what="a failed publish")
        info = await js.consumer_info(subjects.stream("EVENTS"), "router")
        assert info.num_ack_pending == 1 or info.num_redelivered >= 1, "the event was not acked"
        await ensure_bucket(js, run_records_bucket(subjects))

        async def one_run() -> bool:
            return await run_count(js, subjects) == 1

        await poll(one_run, timeout=30, what="the run after the retry")
        assert await _status(nc, subjects, doc["header"]["message_id"]) == "dispatched"


async def test_an_event_right_after_its_binding_is_routed_with_it_though_the_watch_lags(
        nc: NATS, subjects: Subjects) -> None:
    """The binding is acknowledged before its event is published, but the router's watch of the
    bindings has not brought it (paused here, as a lagging one would be): the event matched no
    binding it knew, so the router reads the bucket as it is now and routes the event again."""
    await _routed_though_watches_lag(nc, subjects, lagging=("BINDINGS",))


async def test_an_event_right_after_its_agent_and_binding_is_routed_though_both_watches_lag(
        nc: NATS, subjects: Subjects) -> None:
    """As above, and the agent the binding names was written a moment before too: the event routed
    again with the binding read through has its target read through as well, not routed to a
    target the router does not know (processor_not_found, the event acknowledged and no run)."""
    await _routed_though_watches_lag(nc, subjects, lagging=("BINDINGS", "AGENTS"))


async def test_an_event_whose_binding_the_watch_brings_while_it_waits_for_the_look_is_routed_with_it(
        nc: NATS, subjects: Subjects) -> None:
    """The event matched no binding the router knew, and while it waited for the look at the
    bindings the watch brought its binding: the look finds nothing the copy lacks, and the event
    is routed again all the same, since it was routed with an older copy of the bindings."""
    js = nc.jetstream()
    bindings = f"KV_{subjects.stream('BINDINGS')}"
    async with running_router(nc, subjects, catch_up_spacing=3600.0) as router:  # one look, then none unasked
        await apply(nc, subjects, "agents", {"id": "fresh", "agent_kind": "llm", "events": ["*"]})
        primer = event_doc("message.received")  # no binding at all: held, and looked for at once
        await publish_events(js, subjects, [primer])

        async def primer_settled() -> str | None:
            return await _status(nc, subjects, primer["header"]["message_id"])

        assert await poll(primer_settled, what="the first look") == "route_not_found"
        held, catalog = router.parts.router.unrouted, router.parts.catalog
        watches = [info.name for info in await js.consumers_info(bindings)]
        for name in watches:
            await js.pause_consumer(bindings, name, jetstream_time(3600))
        await apply(nc, subjects, "bindings", {"id": "fresh", "event_pattern": "message.*",
                                               "target_type": "agent", "target_id": "fresh"})
        doc = event_doc("message.received")
        await publish_events(js, subjects, [doc])

        async def waiting() -> bool:
            return held.held >= 1

        await poll(waiting, what="the event held for the next look")
        for name in watches:
            await js.resume_consumer(bindings, name)

        async def brought() -> bool:
            return catalog.counts()["bindings"] == 1

        await poll(brought, what="the binding brought by the watch")
        assert held.looks == 1
        await held.flush()  # the look: the bucket holds nothing the copy lacks now

        async def routed() -> str | None:
            return await _status(nc, subjects, doc["header"]["message_id"])

        assert await poll(routed, what="the event's route") == "dispatched"


async def _routed_though_watches_lag(nc: NATS, subjects: Subjects, *, lagging: tuple[str, ...]) -> None:
    js = nc.jetstream()
    async with running_router(nc, subjects):
        agent = {"id": "fresh", "agent_kind": "llm", "events": ["*"]}
        if "AGENTS" not in lagging:
            await apply(nc, subjects, "agents", agent)
        paused: list[tuple[str, str]] = []
        for bucket in (f"KV_{subjects.stream(name)}" for name in lagging):
            watches = [info.name for info in await js.consumers_info(bucket)]
            assert watches, f"the router watches {bucket}"
            paused += [(bucket, name) for name in watches]
        for bucket, name in paused:
            await js.pause_consumer(bucket, name, jetstream_time(3600))
        try:
            if "AGENTS" in lagging:
                await apply(nc, subjects, "agents", agent)
            await apply(nc, subjects, "bindings", {"id": "fresh", "event_pattern": "message.*",
                                                   "target_type": "agent", "target_id": "fresh"})
            doc = event_doc("message.received")
            await publish_events(js, subjects, [doc])

            async def routed() -> str | None:
                return await _status(nc, subjects, doc["header"]["message_id"])

            assert await poll(routed, what="the event's route") == "dispatched"
        finally:
            for bucket, name in paused:
                await js.resume_consumer(bucket, name)
