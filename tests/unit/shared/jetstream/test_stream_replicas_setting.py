"""AURORA_STREAM_REPLICAS is read and validated with the other settings."""

from __future__ import annotations

import pytest

from shared.config.settings import load_settings
from shared.errors import SettingsError


def test_the_default_is_one() -> None:
    assert load_settings({}).stream_replicas == 1


def test_a_cluster_value_is_read() -> None:
    assert load_settings({"AURORA_STREAM_REPLICAS": "3"}).stream_replicas == 3


@pytest.mark.parametrize("raw", ["0", "6", "three"])
def test_a_bad_value_names_the_variable_and_the_range(raw: str) -> None:
    with pytest.raises(SettingsError, match=r"AURORA_STREAM_REPLICAS=.* an integer from 1 to 5"):
        load_settings({"AURORA_STREAM_REPLICAS": raw})
