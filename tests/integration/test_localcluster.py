"""LocalCluster: three real nats-servers with routes, deploy/nats-auth.conf's users on each, an
R3 stream that survives its leader's SIGKILL and catches the node up when it returns; a route
that does not know the route password is refused."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from nats.js.api import StreamConfig

from aurora_cli.devstack import AUTH_CONFIG, Credentials
from aurora_cli.localcluster import LocalCluster, stream_leader, wait_jetstream
from aurora_cli.localnats import LocalNats, free_port
from tests.harness.processes import REPO
from tests.harness.waiting import poll, poll_sync


@pytest.fixture
def credentials() -> Credentials:
    return Credentials.generate()


@pytest.fixture
def cluster(tmp_path: Path, credentials: Credentials) -> Iterator[LocalCluster]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AURORA_NATS_")}
    env.update(credentials.server_env())
    nodes = LocalCluster(tmp_path / "cluster", 3, config_file=REPO / AUTH_CONFIG, env=env, log_dir=tmp_path)
    nodes.start()
    try:
        yield nodes
    finally:
        nodes.stop()


async def test_r3_stream_survives_its_leader_killed_and_the_node_catches_up(
        cluster: LocalCluster, credentials: Credentials) -> None:
    nc = await nats.connect(servers=cluster.urls, user="operator", password=credentials.passwords["operator"],
                            max_reconnect_attempts=-1, reconnect_time_wait=0.2)
    try:
        await wait_jetstream(nc)
        js = nc.jetstream(timeout=5)
        async def created() -> bool:
            try:
                await js.add_stream(StreamConfig(name="CL", subjects=["amp.sig.cltest.native_event"], num_replicas=3))
            except nats.js.errors.BadRequestError as exc:  # 10005: a node not yet a JetStream peer
                if exc.err_code != 10005:
                    raise
                return False
            return True

        await poll(created, timeout=30, what="all three nodes to be JetStream peers")

        async def first_stored() -> bool:
            # The stream is answered once its replicas elected a leader, a moment after it was
            # created: until then nobody answers a publish. The id keeps a retried publish one message.
            try:
                await js.publish("amp.sig.cltest.native_event", b"0", headers={"Nats-Msg-Id": "cl-0"})
            except (nats.js.errors.NoStreamResponseError, nats.errors.TimeoutError):
                return False
            return True

        await poll(first_stored, timeout=20, what="the stream to take its first message")
        for n in range(1, 20):
            await js.publish("amp.sig.cltest.native_event", str(n).encode())
        leader = await stream_leader(js, cluster, "CL")  # a created stream has its leader
        assert leader is not None
        cluster.kill(leader)

        async def new_leader() -> list[int]:  # a list: node 0 is falsy
            try:
                found = await stream_leader(js, cluster, "CL")
            except (nats.errors.TimeoutError, nats.js.errors.ServiceUnavailableError):
                return []
            return [found] if found not in (None, leader) else []

        await poll(new_leader, timeout=20, what="a new leader")
        for n in range(20, 40):
            await js.publish("amp.sig.cltest.native_event", str(n).encode())  # acknowledged by the two nodes left
        cluster.start_node(leader)

        async def caught_up() -> bool:
            info = await js.stream_info("CL")
            replicas = info.cluster.replicas if info.cluster is not None else []
            back = [r for r in replicas or [] if r.name == cluster.server_name(leader)]
            return bool(back) and bool(back[0].current) and info.state.messages == 40

        await poll(caught_up, timeout=20, what=f"{cluster.server_name(leader)} to catch up")
    finally:
        await nc.close()


def test_a_server_without_the_route_password_cannot_join(cluster: LocalCluster, tmp_path: Path) -> None:
    node_conf = (cluster.store_root / "node-0.conf").read_text()
    cluster_port = int(node_conf.split('listen: "127.0.0.1:')[1].split('"')[0])
    rogue_conf = tmp_path / "rogue.conf"
    rogue_conf.write_text(
        'server_name: "rogue"\n'
        f'cluster {{ name: "{cluster.name}", listen: "127.0.0.1:{free_port()}", '
        f'routes: ["nats://aurora-route:guessed@127.0.0.1:{cluster_port}"] }}\n')
    rogue = LocalNats(tmp_path / "rogue", log_file=tmp_path / "rogue.log", config_file=rogue_conf)
    rogue.start()
    try:
        log = tmp_path / "rogue.log"
        poll_sync(lambda: "Route Error 'Authorization Violation'" in log.read_text(errors="replace"), timeout=15,
                  what="the cluster to refuse the rogue route")
    finally:
        rogue.stop()
    assert (cluster.store_root / "node-0.conf").stat().st_mode & 0o077 == 0  # the route password's file


def test_a_cluster_of_zero_nodes_is_refused(tmp_path: Path) -> None:
    from aurora_cli.localnats import NatsServerError

    with pytest.raises(NatsServerError, match="at least one node"):
        LocalCluster(tmp_path, 0)


def test_every_node_is_given_ports_no_other_node_has(tmp_path: Path) -> None:
    """Route and client ports are all different: ports taken one by one, each socket closed
    before the next was bound, once gave two nodes the same route port (the kernel hands a port
    just freed out again). 200 nodes: 400 ports, where that way repeated one in most clusters."""
    nodes = LocalCluster(tmp_path / "cluster", 200)  # not started: only its ports are looked at
    ports = nodes.cluster_ports + [node.port for node in nodes.nodes]

    assert len(set(ports)) == len(ports) == 400
