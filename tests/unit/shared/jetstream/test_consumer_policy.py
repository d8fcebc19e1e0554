"""The one retry policy and the consumer names every service uses."""

from __future__ import annotations

import pytest
from nats.js.api import ConsumerConfig

from shared.jetstream.consume_loop import backoff, exhausted
from shared.jetstream.consumers import ephemeral_name, scoped


def test_the_backoff_grows_with_each_delivery_and_stops_at_thirty_seconds() -> None:
    assert [backoff(n) for n in (1, 2, 5, 15, 16, 100)] == [2.0, 4.0, 10.0, 30.0, 30.0, 30.0]


@pytest.mark.parametrize(("delivered", "max_deliver", "last"), [
    (1, 5, False), (4, 5, False), (5, 5, True), (6, 5, True), (1, 1, True), (1000, -1, False), (3, 0, False),
])
def test_a_delivery_is_the_last_only_when_max_deliver_is_reached(delivered: int, max_deliver: int,
                                                                  last: bool) -> None:
    assert exhausted(delivered, max_deliver) is last


def test_a_durable_is_created_under_its_own_name() -> None:
    config = scoped(ConsumerConfig(durable_name="router", filter_subject="amp.evt.>"))
    assert (config.name, config.durable_name) == ("router", "router")
    with pytest.raises(ValueError, match="differs from its durable name"):
        scoped(ConsumerConfig(durable_name="router", name="other"))
    with pytest.raises(ValueError, match="needs a name"):
        scoped(ConsumerConfig(filter_subject="amp.evt.>"))


def test_a_short_lived_consumer_is_named_by_its_owner_and_unpredictable() -> None:
    first, second = ephemeral_name("runner"), ephemeral_name("runner")
    assert first.startswith("runner_eph_") and second.startswith("runner_eph_") and first != second
    assert len(first) == len("runner_eph_") + 32
    for bad in ("", "a.b", "a b", "a*", "a>"):
        with pytest.raises(ValueError, match="one token"):
            ephemeral_name(bad)
