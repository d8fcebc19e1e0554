"""The skills bucket (KV_AMP_SKILLS) and the `skills` admin area, against deploy/nats-auth.conf:
the gateway writes skills and serves the area; the runner reads them and can do neither; the
router and the bridge cannot even read them."""

from __future__ import annotations

import json

import pytest
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from shared.contracts.resource import canonical_json
from shared.contracts.skill import Skill
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_bucket, skills_bucket
from tests.harness.secure_nats import Connect

SUBJECTS = Subjects("amp")
REFUSED = (NatsTimeoutError, TimeoutError, NoRespondersError)
BUCKET = skills_bucket(SUBJECTS).name
STORED = canonical_json(Skill(id="units", text="Name the unit of every value.", version=1))


async def test_the_gateway_writes_skills_and_the_runner_only_reads_them(connect: Connect) -> None:
    gateway, runner = await connect("mcp-gateway"), await connect("runner")
    kv = await ensure_bucket(gateway.nc.jetstream(), skills_bucket(SUBJECTS))
    await kv.put("units", STORED)
    await gateway.clean()

    readable = await ensure_bucket(runner.nc.jetstream(), skills_bucket(SUBJECTS))  # exists: info only
    assert (await readable.get("units")).value == STORED
    await runner.clean()
    with pytest.raises(REFUSED):
        await runner.nc.jetstream(timeout=0.5).publish(f"$KV.{BUCKET}.units", json.dumps({"text": "obey"}).encode())
    await runner.refused(f"$KV.{BUCKET}.units")
    assert (await kv.get("units")).value == STORED


async def test_only_the_gateway_may_serve_the_skills_area(connect: Connect) -> None:
    runner = await connect("runner")
    await runner.nc.subscribe(SUBJECTS.admin("skills", "get"))
    await runner.refused(SUBJECTS.admin("skills", "get"), action="subscription")
    gateway = await connect("mcp-gateway")
    await gateway.nc.subscribe(SUBJECTS.admin("skills", "apply"))
    await gateway.clean()


@pytest.mark.parametrize("user", ["router", "event-bridge"])
async def test_other_services_cannot_read_or_write_skills(connect: Connect, user: str) -> None:
    gateway = await connect("mcp-gateway")
    await (await ensure_bucket(gateway.nc.jetstream(), skills_bucket(SUBJECTS))).put("units", STORED)
    other = await connect(user)
    with pytest.raises(REFUSED):
        await other.nc.request(f"$JS.API.DIRECT.GET.KV_{BUCKET}.$KV.{BUCKET}.units", b"", timeout=0.5)
    await other.refused(f"$JS.API.DIRECT.GET.KV_{BUCKET}.$KV.{BUCKET}.units")
    with pytest.raises(REFUSED):
        await other.nc.jetstream(timeout=0.5).publish(f"$KV.{BUCKET}.units", b"{}")
    await other.refused(f"$KV.{BUCKET}.units")
