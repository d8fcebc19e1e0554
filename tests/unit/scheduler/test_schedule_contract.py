"""`kind: Schedule` documents: what is accepted, and the errors that name the field to fix."""

from __future__ import annotations

from typing import Any

import pytest

from shared.contracts.resource import ResourceError, parse_resource
from shared.contracts.schedule import Schedule
from shared.contracts.validation import is_reserved_type
from shared.resources import kind_named, kind_of


def doc(**fields: Any) -> dict[str, Any]:
    return {"kind": "Schedule", "id": "nightly", **fields}


def problems(document: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ResourceError) as caught:
        parse_resource(Schedule, document)
    return dict(caught.value.problems)


def test_a_cron_schedule_with_a_zone_and_defaults() -> None:
    schedule = parse_resource(Schedule, doc(cron="30 2 * * *", timezone="Europe/Berlin", data={"report": "daily"}))
    assert schedule.enabled is True and schedule.catch_up is False
    assert schedule.cadence().cron == "0 30 2 * * *" and schedule.cadence().zone == "Europe/Berlin"


def test_an_interval_schedule() -> None:
    schedule = parse_resource(Schedule, doc(every="90s", catch_up=True))
    assert schedule.cadence().every_seconds == 90 and schedule.catch_up


@pytest.mark.parametrize(("document", "field", "reason"), [
    (doc(cron="61 * * * *"), "cron", "not a valid cron"),
    (doc(cron="0 3 * * *", timezone="Mars/Olympus"), "timezone", "not an IANA time zone"),
    (doc(every="five minutes"), "every", "30s, 5m"),
    (doc(), "(root)", "either cron"),
    (doc(cron="0 3 * * *", every="5m"), "(root)", "exactly one"),
    (doc(every="5m", timezone="UTC"), "(root)", "cron only"),
    (doc(every="5m", catch_up="yes"), "catch_up", "boolean"),
    (doc(every="5m", data=[1]), "data", "object"),
    (doc(every="5m", cadence="daily"), "cadence", "Extra inputs"),
    ({"kind": "Schedule", "id": "has.dot", "every": "5m"}, "id", "pattern"),
])
def test_bad_documents_name_the_field(document: dict[str, Any], field: str, reason: str) -> None:
    found = problems(document)
    assert field in found, found
    assert reason in found[field], found


def test_schedules_are_a_resource_kind_served_by_the_scheduler() -> None:
    assert kind_of("Schedule").area == "schedules" and kind_named("schedules").model is Schedule


def test_apps_may_not_emit_schedule_events() -> None:
    assert is_reserved_type("schedule.triggered")
