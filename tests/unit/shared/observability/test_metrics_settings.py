"""Which metrics exporters the environment asks for, and the errors a bad value gets."""

from __future__ import annotations

import pytest

from shared.errors import SettingsError
from shared.observability.metrics import MetricsSettings, metrics_settings


def test_nothing_set_means_no_metrics_at_all() -> None:
    assert metrics_settings({}) == MetricsSettings(port=None, otlp=False)


def test_a_scrape_port_and_otlp_are_each_asked_for_separately() -> None:
    assert metrics_settings({"AURORA_METRICS_PORT": "9464"}).port == 9464
    assert metrics_settings({"AURORA_METRICS_PORT": "0"}).port == 0  # any free port
    assert metrics_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}).otlp
    assert metrics_settings({"OTEL_METRICS_EXPORTER": "otlp"}).otlp
    assert not metrics_settings({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_METRICS_EXPORTER": "none"}).otlp
    assert metrics_settings({"AURORA_METRICS_HOST": "127.0.0.1"}).host == "127.0.0.1"


@pytest.mark.parametrize(("env", "variable"), [
    ({"AURORA_METRICS_PORT": "http"}, "AURORA_METRICS_PORT"),
    ({"AURORA_METRICS_PORT": "70000"}, "AURORA_METRICS_PORT"),
    ({"OTEL_METRICS_EXPORTER": "statsd"}, "OTEL_METRICS_EXPORTER"),
])
def test_a_bad_value_names_its_variable(env: dict[str, str], variable: str) -> None:
    with pytest.raises(SettingsError) as caught:
        metrics_settings(env)
    assert caught.value.variable == variable
