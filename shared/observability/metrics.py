"""OpenTelemetry metrics: one set of instruments every service records into, exported by OTLP
and on a Prometheus scrape endpoint, each only when asked for.

- `AURORA_METRICS_PORT=9464` serves `/metrics` for Prometheus on that port (0: any free port,
  logged as `metrics serving`); `AURORA_METRICS_HOST` binds elsewhere than all interfaces.
- The standard `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`, or
  `OTEL_METRICS_EXPORTER=otlp`, export by OTLP over HTTP every `OTEL_METRIC_EXPORT_INTERVAL` ms;
  `OTEL_METRICS_EXPORTER=none` turns it off.
With neither, no meter provider is installed and every instrument is the API's no-op.

The instruments (Prometheus names in brackets):
- `aurora.stage.messages` [`aurora_stage_messages_total`]: messages a stage's consumer loop
  settled, by `stage` and `outcome` (acked, terminated, retried, handed_back, dead_lettered);
- `aurora.consumer.lag` [`aurora_consumer_lag`]: what a stage's durable still has to deliver,
  as the last fetched message said, by `stage` and `consumer`;
- `aurora.tool_call.duration` [`aurora_tool_call_duration_seconds`]: each call the gateway
  answered, by `tool` and `status`;
- `aurora.run.duration` [`aurora_run_duration_seconds`]: from a task's creation to its final
  state, by `agent` (or target) and `state`;
- `aurora.approvals.pending` [`aurora_approvals_pending`]: approvals waiting for a decision;
- `aurora.app.restarts` [`aurora_app_restarts_total`]: app processes the supervisor restarted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from shared.config.settings import read_int
from shared.errors import SettingsError
from shared.observability.logs import get_logger

log = get_logger("aurora.metrics")


@dataclass(frozen=True)
class MetricsSettings:
    port: int | None = None
    host: str = "0.0.0.0"
    otlp: bool = False


def metrics_settings(env: Mapping[str, str]) -> MetricsSettings:
    port = read_int(env, "AURORA_METRICS_PORT", 0, minimum=0, maximum=65535) if env.get("AURORA_METRICS_PORT") else None
    names = {n.strip().lower() for n in env.get("OTEL_METRICS_EXPORTER", "").split(",") if n.strip()}
    unknown = names - {"otlp", "prometheus", "none"}
    if unknown:
        raise SettingsError("OTEL_METRICS_EXPORTER", env.get("OTEL_METRICS_EXPORTER", ""),
                            "otlp, none, or prometheus (with AURORA_METRICS_PORT)")
    endpoint = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
    otlp = "none" not in names and env.get("OTEL_SDK_DISABLED", "").lower() != "true" and (
        "otlp" in names or bool(endpoint))
    return MetricsSettings(port=port, host=env.get("AURORA_METRICS_HOST") or "0.0.0.0", otlp=otlp)


def _installed() -> bool:
    """Whether `setup_metrics` installed a meter provider (OpenTelemetry holds it, set once):
    the API's own no-op and proxy providers have no `shutdown`."""
    return callable(getattr(metrics.get_meter_provider(), "shutdown", None))


def setup_metrics(service: str, env: Mapping[str, str]) -> None:
    """Install the meter provider the variables of `env` (the settings', `Settings.telemetry`)
    ask for, once; a bad value raises SettingsError."""
    if _installed():
        return
    settings = metrics_settings(env)
    if settings.port is None and not settings.otlp:
        return
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource

    readers: list[MetricReader] = []
    if settings.port is not None:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import start_http_server

        readers.append(PrometheusMetricReader())
        server, _ = start_http_server(settings.port, addr=settings.host)
        log.info("metrics serving", port=server.server_address[1], host=settings.host)
    if settings.otlp:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    metrics.set_meter_provider(MeterProvider(
        resource=Resource.create({"service.name": f"aurora-{service}"}), metric_readers=readers))


def shutdown_metrics() -> None:
    if _installed():
        metrics.get_meter_provider().shutdown()  # type: ignore[attr-defined]


_meter = metrics.get_meter("aurora")
stage_messages = _meter.create_counter(
    "aurora.stage.messages", unit="{message}", description="Messages a stage's consumer loop settled")
tool_call_duration = _meter.create_histogram(
    "aurora.tool_call.duration", unit="s", description="Tool calls the gateway answered")
run_duration = _meter.create_histogram(
    "aurora.run.duration", unit="s", description="From a task's creation to its final state")
app_restarts = _meter.create_counter(
    "aurora.app.restarts", unit="{restart}", description="App processes the supervisor restarted")


@dataclass
class Gauges:
    """Values a service keeps current and the meter reads when it collects."""

    values: dict[tuple[tuple[str, str], ...], float] = field(default_factory=dict)

    def set(self, value: float, **attributes: str) -> None:
        self.values[tuple(sorted(attributes.items()))] = value

    def observe(self, _: CallbackOptions) -> Iterable[Observation]:
        return [Observation(value, dict(key)) for key, value in list(self.values.items())]


consumer_lag = Gauges()
_meter.create_observable_gauge("aurora.consumer.lag", callbacks=[consumer_lag.observe], unit="{message}",
                               description="Messages a stage's durable still has to deliver")


def observe_pending_approvals(count: Callable[[], int | None]) -> None:
    """`count()` is the gateway's last count of pending approvals (None: not counted yet)."""
    def observe(_: CallbackOptions) -> Iterable[Observation]:
        value = count()
        return [] if value is None else [Observation(value)]

    _meter.create_observable_gauge("aurora.approvals.pending", callbacks=[observe], unit="{approval}",
                                   description="Approvals waiting for a decision")
