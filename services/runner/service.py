"""The runner's parts wired together: stores, catalog, drivers, executor, worker, admin.

`__main__` runs one `RunnerService` per process; any number of processes share the runs queue.
Its lifecycle is `shared.lifecycle`'s: the stop order is the start order reversed.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

import httpx
from nats.aio.client import Client as NATS

from services.runner.admin import task_endpoints
from services.runner.audit import JetStreamAudit
from services.runner.catalog import AgentCatalog
from services.runner.config import RunnerConfig
from services.runner.drivers.base import AgentDriver
from services.runner.drivers.llm import LlmDriver
from services.runner.drivers.playbook import PlaybookDriver
from services.runner.event_source import EventSource
from services.runner.executor import TaskExecutor
from services.runner.history import StreamHistory
from services.runner.interactions import Announcer
from services.runner.llm_client import HttpChatModel
from services.runner.resumer import Resumer
from services.runner.sampling import SamplingServer
from services.runner.secrets import StepSecrets
from services.runner.steps import ToolSteps
from services.runner.stores import ensure_runs_consumer, open_stores
from services.runner.task_events import TaskEvents
from services.runner.tasks import TaskStore
from services.runner.toolclient import NatsToolClient
from services.runner.tooling import GatewayTools
from services.runner.traced import TracedChatModel, TracedToolClient
from services.runner.worker import Worker
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import DEFAULT_PLAN, StreamPlan, tasks_bucket
from shared.lifecycle import Lifecycle
from shared.nats import write_through
from shared.nats.acked_publish import AckedPublisher
from shared.nats.admin_service import start_admin_service
from shared.observability.logs import get_logger
from shared.people import open_registry
from shared.redaction import Redactor

VERSION = "0.1.0"
log = get_logger("aurora.runner")


@dataclass(frozen=True)
class _Running:
    executor: TaskExecutor
    worker: Worker
    resumer: Resumer


class RunnerService(Lifecycle[_Running]):
    def __init__(self, nc: NATS, subjects: Subjects, config: RunnerConfig, redactor: Redactor | None = None, *,
                 plan: StreamPlan = DEFAULT_PLAN) -> None:
        """`redactor`: the one the runner's log lines pass through (its composition root's)."""
        super().__init__("the runner service")
        self._plan = plan
        self._redactor = redactor or Redactor()
        self._nc = nc
        self._subjects = subjects
        self._config = config

    @property
    def executor(self) -> TaskExecutor:
        """Runs and resumes tasks; `resume_task` is where a granted approval continues one."""
        return self.require_started().executor

    @property
    def worker(self) -> Worker:
        return self.require_started().worker

    async def _start(self, parts: contextlib.AsyncExitStack) -> _Running:
        nc, subjects, config = self._nc, self._subjects, self._config
        js = nc.jetstream()
        stores = await open_stores(js, subjects, self._plan)
        await ensure_runs_consumer(js, stores, config, subjects)
        catalog = AgentCatalog(stores)
        parts.push_async_callback(catalog.stop)
        await catalog.start()
        acks = AckedPublisher(nc)
        parts.push_async_callback(acks.close)  # after every part that publishes task events stopped
        events = TaskEvents(acks, subjects, instance=config.instance)
        store = TaskStore(stores.tasks, events.publish, js=js, bucket=tasks_bucket(subjects).name)
        steps = ToolSteps(TracedToolClient(NatsToolClient(nc, subjects.tool_call, instance=config.instance)),
                          JetStreamAudit(js, subjects), catalog.side_effect,
                          default_timeout=config.tool_timeout, result_limit=config.step_result_limit,
                          secrets=self._secrets(catalog))
        http = httpx.AsyncClient(limits=httpx.Limits(max_connections=max(config.concurrency * 2, 10)))
        parts.push_async_callback(http.aclose)
        history = StreamHistory(js, subjects, window=config.history_window, scan_limit=config.history_scan_limit)
        announcer = Announcer(js, subjects, instance=config.instance)
        drivers: dict[str, AgentDriver] = {"playbook": PlaybookDriver(steps, announcer)}
        model = TracedChatModel(HttpChatModel(http))
        drivers["llm"] = LlmDriver(model, GatewayTools(nc, subjects), steps, history, config.models,
                                   env=config.models.api_keys.get, announcer=announcer, skills=catalog)
        sampling = SamplingServer(nc, subjects, catalog, model, config.models, env=config.models.api_keys.get)
        parts.push_async_callback(sampling.stop)
        await sampling.start()
        executor = TaskExecutor(store, catalog, drivers, steps, EventSource(js, self._plan), config)
        worker = Worker(js, subjects, executor, config, stores.runs_stream)
        parts.push_async_callback(worker.stop)
        await worker.start()
        resumer = Resumer(js, subjects, store, executor, config, stores.events_stream)
        parts.push_async_callback(resumer.stop)
        await resumer.start()
        admin = await start_admin_service(
            nc, subjects, name="aurora-runner", version=VERSION, areas={"tasks": task_endpoints(store)},
            description="runner tasks: list, get, cancel",
            authorize=(await open_registry(js, subjects, self._plan)).refusal,  # a person's roles, checked again
        )
        parts.push_async_callback(admin.stop)
        await write_through.flush(self._nc)  # "ready" means the admin endpoints' subscriptions reached the server
        log.info("ready", instance=config.instance, concurrency=config.concurrency, ack_wait=config.ack_wait)
        return _Running(executor=executor, worker=worker, resumer=resumer)

    def _secrets(self, catalog: AgentCatalog) -> StepSecrets:
        material, where = self._config.seal_key
        if where == "the development key":
            log.warning("secret tool arguments in the step log are sealed with the DEVELOPMENT key: set "
                        "AURORA_RUNNER_SEAL_KEY or run with NATS credentials")
        models = self._config.models
        redactor = self._redactor
        redactor.learn(models.api_keys.get(models.api_key_env or ""))

        def schema_of(tool: str) -> dict[str, Any] | None:
            found = catalog.tools.items.get(tool)
            return found.input_schema if found is not None else None

        return StepSecrets(redactor, schema_of, material)

    async def run(self, stop: asyncio.Event) -> None:
        """Runs from the queue, and waiting tasks resumed when their approval or answer comes."""
        running = self.require_started()
        await asyncio.gather(running.worker.run(stop), running.resumer.run(stop))
