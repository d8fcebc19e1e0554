"""`uuid5_text` is the standard library's uuid5 in text form, for any namespace and name."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from shared.ids import uuid5_text


@given(namespace=st.uuids(), name=st.text())
def test_it_is_the_standard_librarys_uuid5(namespace: uuid.UUID, name: str) -> None:
    assert uuid5_text(namespace, name) == str(uuid.uuid5(namespace, name))


def test_names_that_differ_give_ids_that_differ() -> None:
    namespace = uuid.UUID("5d1c9f0e-7b2a-4e61-9c3d-8a4f2e6b1d07")
    assert len({uuid5_text(namespace, f"task\nstep\n{attempt}") for attempt in range(100)}) == 100
