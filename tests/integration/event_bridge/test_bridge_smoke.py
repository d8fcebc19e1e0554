"""The bridge in-process against a real nats-server: a native event goes through."""

from __future__ import annotations

import asyncio
import json

from nats.aio.client import Client as NATS

from services.event_bridge.bridge import EventBridge
from shared.clock import now_iso
from shared.contracts.signals import NativeEventSignal
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_streams, fabric_streams
from shared.nats.signal_publisher import new_signal_id, publish_signal


async def test_native_event_is_completed_and_published(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    await ensure_streams(js, fabric_streams(subjects))
    sub = await nc.subscribe("amp.evt.>")
    async with EventBridge(nc, subjects) as bridge:
        stop = asyncio.Event()
        task = asyncio.create_task(bridge.run(stop))
        signal = NativeEventSignal(
            signal_id=new_signal_id(), app="im.polaris.qq", observed_at=now_iso(),
            event={"payload": {"type": "message.received", "data": {"text": "你好"}}},
        )
        await publish_signal(js, subjects, signal)
        msg = await sub.next_msg(timeout=5)
        stop.set()
        await task
    event = json.loads(msg.data)
    assert msg.subject == "amp.evt.im_polaris_qq.message.received"
    assert event["header"]["source"] == {"app": "im.polaris.qq", "instance": "default"}
    assert event["payload"]["data"] == {"text": "你好"}
    assert msg.headers and msg.headers["Nats-Msg-Id"] == event["header"]["message_id"]
