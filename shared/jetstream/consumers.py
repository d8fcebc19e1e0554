"""Every JetStream consumer Aurora creates is created here, by a name the permissions can scope.

nats-py picks the API subject from the config: with `name` set it sends the name-scoped
`$JS.API.CONSUMER.CREATE.<stream>.<name>[.<filter>]`, without it the legacy
`$JS.API.CONSUMER.DURABLE.CREATE.<stream>.<durable>` or bare `$JS.API.CONSUMER.CREATE.<stream>`,
whose body may name any consumer (deploy/nats-auth.conf refuses both). So a durable always
carries its name twice, and a short-lived (ephemeral) pull consumer is named by its owner:
`<owner>_eph_<random>` — random so that no other identity can guess it, prefixed so that an
operator listing consumers sees whose it is.
"""

from __future__ import annotations

import uuid

from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, ConsumerInfo

from shared.jetstream.api_requests import patiently

EPHEMERAL_MARK = "_eph_"


def ephemeral_name(owner: str) -> str:
    """A consumer name no one else can predict, saying whose it is (`runner_eph_3f2a…`)."""
    if not owner or any(c in owner for c in ". *>\t\r\n"):
        raise ValueError(f"consumer owner {owner!r} must be one token (no dots, spaces or wildcards)")
    return f"{owner}{EPHEMERAL_MARK}{uuid.uuid4().hex}"


def scoped(config: ConsumerConfig) -> ConsumerConfig:
    """The config with `name` = `durable_name`, so nats-py sends the name-scoped create."""
    if config.durable_name and config.name and config.name != config.durable_name:
        raise ValueError(f"consumer name {config.name!r} differs from its durable name {config.durable_name!r}")
    if config.durable_name:
        return config.evolve(name=config.durable_name)
    if not config.name:
        raise ValueError("a consumer needs a name (use ephemeral_name(owner) for a short-lived one)")
    return config


async def ensure_durable(js: JetStreamContext, stream: str, config: ConsumerConfig) -> ConsumerInfo:
    """Create a durable consumer, or bring the existing one (its owner's) to this configuration:
    the server treats a create as create-or-update and refuses only fields it cannot change."""
    if not config.durable_name:
        raise ValueError("ensure_durable needs a durable_name")
    wanted = scoped(config)
    return await patiently(lambda: js.add_consumer(stream, config=wanted))  # create-or-update: safe to repeat


async def pull_ephemeral(js: JetStreamContext, stream: str, subject: str, config: ConsumerConfig,
                         *, owner: str) -> JetStreamContext.PullSubscription:
    """A short-lived pull consumer on `stream` filtered to `subject`, named `<owner>_eph_…`
    (give it `inactive_threshold` so the server removes it if its owner goes away)."""
    if config.durable_name:
        raise ValueError("pull_ephemeral is for consumers without a durable name")
    name = ephemeral_name(owner)
    wanted = config.evolve(name=name, filter_subject=subject)
    await patiently(lambda: js.add_consumer(stream, config=wanted))  # the same name and config: safe to repeat
    return await js.pull_subscribe_bind(name, stream=stream)
