"""The benchmarks' stacks: a nats-server of their own (its CPU and memory are measured too, so
its pid is kept, and its HTTP monitoring port is open: `monitor_url` + `/connz` gives each named connection's
message counts) and Aurora's services on it, declared with the tests' one `StackBuilder`
(tests/harness/stack.py): started in dependency order, each waited for until it serves (its
ready file, not a log line), stopped in reverse, then the server.

    with bench_stack(folder, lambda b: b.apps(apps).supervisor().gateway()) as stack:
        nc = await nats.connect(stack.url)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from aurora_cli.localnats import LocalNats, free_port
from tests.harness.processes import ServiceProcess
from tests.harness.stack import Stack, StackBuilder


@dataclass
class BenchStack:
    server: LocalNats
    running: Stack
    monitor_url: str

    @property
    def url(self) -> str:
        return self.server.url

    def __getitem__(self, tag: str) -> ServiceProcess:
        return self.running[tag]

    def pids(self) -> dict[str, int]:
        """Each service's pid by its tag, and the nats-server's."""
        found = {tag: process.pid for tag, process in self.running.processes.items()}
        if self.server.pid is not None:
            found["nats-server"] = self.server.pid
        return found


@contextmanager
def bench_stack(folder: Path, services: Callable[[StackBuilder], StackBuilder]) -> Iterator[BenchStack]:
    """`services(builder)` declares what runs on the benchmark's own nats-server (in `folder`)."""
    monitor = f"127.0.0.1:{free_port()}"
    config = folder / "nats-monitor.conf"
    config.write_text(f'http: "{monitor}"\n')
    server = LocalNats(folder / "jetstream", log_file=folder / "nats-server.log", config_file=config)
    server.start()
    try:
        with services(StackBuilder(folder).broker(server.url)).running() as running:
            yield BenchStack(server, running, f"http://{monitor}")
    finally:
        server.stop()
