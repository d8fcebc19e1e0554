"""The runner's parts, built by `build_runner`: stores, the agent catalog, the model client, the
sampling server, the executor, the runs worker, the resumer and the admin endpoints. The runner
publishes no task events: the event-bridge makes them from the tasks bucket.

`__main__` runs one per process; any number of processes share the runs queue. Tests build it
in-process against a real nats-server. The start order is `RunnerParts`' order (the `order`
tuple below); the stop order is its reverse (`shared.wiring.Assembly`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import httpx

from services.runner.admin import task_endpoints
from services.runner.catalog import AgentCatalog
from services.runner.config import RunnerConfig
from services.runner.drivers.base import AgentDriver
from services.runner.drivers.llm import LlmDriver
from services.runner.drivers.playbook import PlaybookDriver
from services.runner.event_source import EventSource
from services.runner.executor import TaskExecutor
from services.runner.model.client import HttpChatModel
from services.runner.steps.secrets import sealed_step_secrets
from services.runner.steps.tool_steps import ToolSteps
from services.runner.stores import RunnerStores, ensure_runs_consumer, open_stores
from services.runner.tasks.call_audit import JetStreamAudit
from services.runner.tasks.interactions import Announcer
from services.runner.tasks.resumer import Resumer
from services.runner.tasks.store import TaskStore
from services.runner.tools.client import NatsToolClient
from services.runner.tools.history import StreamHistory
from services.runner.tools.offered import GatewayTools
from services.runner.tools.sampling import SamplingServer
from services.runner.traced import TracedChatModel, TracedToolClient
from services.runner.worker import Worker
from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import tasks_bucket
from shared.nats import write_through
from shared.nats.admin_service import start_admin_service
from shared.observability.logs import get_logger
from shared.people import open_registry
from shared.redaction import Redactor
from shared.wiring import Assembly, Connections, Part, StartedBy

VERSION = "0.1.0"
log = get_logger("aurora.runner")


@dataclass(frozen=True)
class RunnerSetup:
    """What the runner read before connecting: its settings (with the seal key's material and the
    environment agents' API keys are looked up in), the redactor every log line and step log
    passes through (its composition root's, which has learnt the model key), the streams' plan."""

    subjects: Subjects
    config: RunnerConfig
    redactor: Redactor = field(default_factory=Redactor)
    plan: StreamPlan = DEFAULT_PLAN


@dataclass(frozen=True)
class RunnerParts:
    stores: RunnerStores
    catalog: AgentCatalog
    model: HttpChatModel
    sampling: SamplingServer
    executor: TaskExecutor  # runs and resumes tasks; `resume_task` is where a granted approval continues one
    worker: Worker
    resumer: Resumer
    admin: StartedBy
    legacy_worker: Worker | None = None  # drains an AMP_RUNS an older deployment left (None: there is none)


RunnerService = Assembly[RunnerParts]


async def build_runner(setup: RunnerSetup, connections: Connections) -> RunnerService:
    nc, js, subjects, config = connections.nc, connections.js, setup.subjects, setup.config
    stores = await open_stores(js, subjects, setup.plan)
    await ensure_runs_consumer(js, stores, config, subjects)
    catalog = AgentCatalog(stores)
    store = TaskStore(stores.tasks, js=js, bucket=tasks_bucket(subjects).name)
    steps = ToolSteps(TracedToolClient(NatsToolClient(nc, subjects.tool_call, instance=config.instance)),
                      JetStreamAudit(js, subjects), catalog.side_effect,
                      default_timeout=config.tool_timeout, result_limit=config.step_result_limit,
                      secrets=sealed_step_secrets(setup.redactor, catalog.input_schema, config.seal_key))
    http = HttpChatModel(httpx.AsyncClient(limits=httpx.Limits(max_connections=max(config.concurrency * 2, 10))))
    model = TracedChatModel(http)
    history = StreamHistory(js, subjects, window=config.history_window, scan_limit=config.history_scan_limit)
    announcer = Announcer(js, subjects, instance=config.instance)
    drivers: dict[str, AgentDriver] = {
        "playbook": PlaybookDriver(steps, announcer),
        "llm": LlmDriver(model, GatewayTools(nc, subjects), steps, history, config.models,
                         env=config.models.api_keys.get, announcer=announcer, skills=catalog),
    }
    sampling = SamplingServer(nc, subjects, catalog, model, config.models, env=config.models.api_keys.get)
    executor = TaskExecutor(store, catalog, drivers, steps, EventSource(js, setup.plan), config)
    worker = Worker(js, subjects, executor, config, stores.runs_stream)
    # An AMP_RUNS an older deployment left: its runs are run too, until the operator removes it.
    legacy = None if stores.legacy_runs is None else Worker(js, subjects, executor, config, stores.legacy_runs,
                                                             legacy=True)
    resumer = Resumer(js, subjects, store, executor, config, stores.events_stream)
    authorize = (await open_registry(js, subjects, setup.plan)).refusal  # a person's roles, checked again
    admin = StartedBy("the runner's admin endpoints", lambda: start_admin_service(
        nc, subjects, name="aurora-runner", version=VERSION, areas={"tasks": task_endpoints(store)},
        description="runner tasks: list, get, cancel", authorize=authorize))

    async def ready() -> None:
        await write_through.flush(nc)  # "ready" means the admin endpoints' subscriptions reached the server
        log.info("ready", instance=config.instance, concurrency=config.concurrency, ack_wait=config.ack_wait)

    async def run(stop: asyncio.Event) -> None:
        """Runs from the queue, and waiting tasks resumed when their approval or answer comes."""
        await asyncio.gather(worker.run(stop), resumer.run(stop), *([legacy.run(stop)] if legacy else []))

    parts = RunnerParts(stores, catalog, http, sampling, executor, worker, resumer, admin, legacy)
    # The catalog before anything reads it; the model client before, and closed after, what asks
    # the model; the admin endpoints last.
    order: tuple[Part, ...] = (catalog, http, sampling, worker, *([legacy] if legacy else []), resumer, admin)
    return Assembly("the runner service", parts, order, run=run, ready=ready)
