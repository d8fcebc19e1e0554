"""A local NATS cluster: N nats-servers on loopback with routes and replicated JetStream.

For `aurora dev --cluster N` and the cluster tests. Each node is a `LocalNats` (or a subclass,
e.g. the dev stack's own-session one) running a generated config, `<store_root>/node-<i>.conf`:
it includes the single-node config (deploy/nats-auth.conf's users, TLS), then names the server
(`<cluster>-<i>`, stable across restarts: JetStream's Raft groups know their peers by it) and
adds the cluster block. Routes listen on loopback only and carry their own user and a random
password (in the 0600 node configs only), so no client identity can open a route: a route
connection bypasses every subject permission.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from aurora_cli.localnats import LocalNats, NatsServerError, free_ports

ROUTE_USER = "aurora-route"


class NodeFactory(Protocol):
    def __call__(self, store_dir: Path, *, port: int | None = ..., host: str = ...,
                 log_file: Path | None = ..., config_file: Path | None = ...,
                 env: Mapping[str, str] | None = ...) -> LocalNats: ...


class _StreamInfoSource(Protocol):
    """What `stream_leader` needs of a JetStream context (nats-py's `JetStreamContext`)."""

    async def stream_info(self, name: str) -> Any: ...


def node_config_text(*, name: str, cluster: str, host: str, cluster_port: int, route_ports: list[int],
                     route_password: str, include: str | None, advertise_port: int | None = None) -> str:
    """One node's config: the shared config included, then its name and cluster block.

    `no_advertise`: clients keep to the URLs they were given (NATS_URL lists every node) instead
    of learning the nodes' own addresses, which a proxy or a port mapping would not reach.
    """
    routes = ", ".join(f'"nats://{ROUTE_USER}:{route_password}@{host}:{port}"' for port in route_ports)
    lines = ["# Written by aurora_cli/localcluster.py at each start; edits are lost."]
    if include is not None:
        lines.append(f'include "{include}"')
    lines += [
        f'server_name: "{name}"',
        "cluster {",
        f'  name: "{cluster}"',
        f'  listen: "{host}:{cluster_port}"  # loopback only',
        f'  authorization {{ user: "{ROUTE_USER}", password: "{route_password}" }}',
        f"  routes: [{routes}]",
        "  no_advertise: true",
        *([f'  advertise: "{host}:{advertise_port}"'] if advertise_port is not None else []),
        "}",
    ]
    return "\n".join(lines) + "\n"


class LocalCluster:
    """`size` nats-servers forming one cluster (`name`), JetStream on each, file stores under
    `store_root/node-<i>/`; `.urls` lists their client URLs (what NATS_URL joins with commas).

    `config_file` is what a single node would run (the dev stack's nats.conf, deploy/nats-auth.conf);
    `env` the servers' environment (the password hashes that config reads). Ports stay fixed
    for the cluster's life, so a restarted node comes back where its peers and clients expect it.
    """

    def __init__(self, store_root: Path, size: int = 3, *, name: str = "aurora", host: str = "127.0.0.1",
                 ports: list[int] | None = None, config_file: Path | None = None,
                 env: Mapping[str, str] | None = None, log_dir: Path | None = None,
                 node_factory: NodeFactory | Callable[..., LocalNats] = LocalNats) -> None:
        if size < 1:
            raise NatsServerError(f"a cluster needs at least one node, not {size}")
        if ports is not None and len(ports) != size:
            raise NatsServerError(f"{len(ports)} client ports given for a cluster of {size}")
        self.store_root = store_root
        self.size = size
        self.name = name
        self.host = host
        self.config_file = config_file
        self._route_password = secrets.token_urlsafe(24)
        chosen = free_ports(size if ports is not None else 2 * size, host)  # all different
        self.cluster_ports = chosen[:size]
        self._route_ports: dict[tuple[int, int], int] = {}
        self._advertise: dict[int, int] = {}
        client_ports = ports if ports is not None else chosen[size:]
        self.nodes: list[LocalNats] = [
            node_factory(store_root / f"node-{i}", port=client_ports[i], host=host,
                         log_file=(log_dir / f"nats-{i}.log") if log_dir is not None else None,
                         config_file=store_root / f"node-{i}.conf", env=env)
            for i in range(size)
        ]

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    @property
    def url(self) -> str:
        """The client URLs joined with commas: a NATS_URL that reaches every node."""
        return ",".join(self.urls)

    def server_name(self, index: int) -> str:
        return f"{self.name}-{index}"

    def index_of(self, server_name: str) -> int:
        for index in range(self.size):
            if self.server_name(index) == server_name:
                return index
        raise NatsServerError(f"{server_name!r} is not a node of the cluster {self.name!r}")

    def set_env(self, env: Mapping[str, str]) -> None:
        """The servers' environment from now on (the dev stack learns the hashes late)."""
        for node in self.nodes:
            node.env = dict(env)

    def route_through(self, from_index: int, to_index: int, port: int) -> None:
        """Node `from_index` reaches node `to_index`'s routes on `port` (a proxy in between);
        takes effect when `from_index` next starts."""
        self._route_ports[(from_index, to_index)] = port

    def advertise_route(self, index: int, port: int) -> None:
        """Node `index` tells its peers to reach its routes on `port` (its proxy)."""
        self._advertise[index] = port

    def _write_config(self, index: int) -> None:
        self.store_root.mkdir(parents=True, exist_ok=True)
        target = self.store_root / f"node-{index}.conf"
        # nats-server resolves `include` relative to the including file, and only relative paths.
        include = (os.path.relpath(self.config_file.resolve(), self.store_root.resolve())
                   if self.config_file is not None else None)
        text = node_config_text(
            name=self.server_name(index), cluster=self.name, host=self.host,
            cluster_port=self.cluster_ports[index],
            route_ports=[self._route_ports.get((index, i), port) for i, port in enumerate(self.cluster_ports)
                         if i != index],
            route_password=self._route_password, include=include, advertise_port=self._advertise.get(index))
        target.touch(mode=0o600, exist_ok=True)
        target.chmod(0o600)  # it holds the route password
        target.write_text(text, encoding="utf-8")

    def start(self, timeout: float = 15.0) -> None:
        """Start every node (each listening); JetStream's meta leader is elected shortly after."""
        try:
            for index in range(self.size):
                self.start_node(index, timeout)
        except NatsServerError:
            self.stop()
            raise

    def start_node(self, index: int, timeout: float = 15.0) -> None:
        self._write_config(index)
        self.nodes[index].start(timeout)

    def stop_node(self, index: int, timeout: float = 10.0) -> None:
        """SIGTERM one node (a clean shutdown: it hands its leaderships over first)."""
        self.nodes[index].stop(timeout)

    def kill(self, index: int | None = None) -> None:
        """SIGKILL one node (every node when `index` is None): a crash, nothing flushed."""
        for node in self.nodes if index is None else [self.nodes[index]]:
            node.kill()

    def restart_node(self, index: int, timeout: float = 15.0) -> None:
        self.stop_node(index)
        self.start_node(index, timeout)

    def stop(self, timeout: float = 10.0) -> None:
        for node in self.nodes:
            node.stop(timeout)

    def running(self) -> list[int]:
        return [i for i, node in enumerate(self.nodes) if node.running]


async def stream_leader(js: _StreamInfoSource, cluster: LocalCluster, stream: str) -> int | None:
    """The index of the node leading `stream` now; None while it has no leader (an election)."""
    info = await js.stream_info(stream)
    leader = getattr(getattr(info, "cluster", None), "leader", None)
    return cluster.index_of(leader) if leader else None


class _Requester(Protocol):
    async def request(self, subject: str, payload: bytes = b"", timeout: float = 0.5) -> Any: ...


async def wait_jetstream(nc: _Requester, timeout: float = 20.0) -> None:
    """Return once JetStream answers through `nc` (a cluster has elected its meta leader);
    a fresh cluster refuses stream creation until then."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last = "no answer"
    while loop.time() < deadline:
        try:
            reply = await nc.request("$JS.API.INFO", b"", timeout=1.0)
            body = json.loads(reply.data or b"{}")
            if "error" not in body:
                return
            last = str(body["error"].get("description", body["error"]))
        except Exception as exc:  # no responders, a timeout: not ready yet
            last = str(exc) or type(exc).__name__
        await asyncio.sleep(0.1)
    raise NatsServerError(f"JetStream did not become ready within {timeout}s: {last}")
