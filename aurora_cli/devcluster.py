"""`aurora dev --cluster N`: the dev stack's nats-server as N clustered nodes.

Node `i` listens for clients on `--port + i` (4222, 4223, 4224 by default) with its store in
`<data-dir>/cluster/node-<i>/` and its log in `<data-dir>/logs/nats-<i>.log`; every service is
given all N URLs and creates what it needs with `min(N, 3)` replicas unless
AURORA_STREAM_REPLICAS says otherwise.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

from aurora_cli.localcluster import LocalCluster, wait_jetstream
from aurora_cli.localnats import LocalNats
from shared.config.settings import load_settings
from shared.nats.bus import connect

MAX_NODES = 7  # a dev cluster on one machine; JetStream replicates to at most 5 of them anyway


def dev_cluster(data_dir: Path, size: int, *, port: int, host: str, config_file: Path | None,
                env: Mapping[str, str], node_factory: type[LocalNats]) -> LocalCluster:
    return LocalCluster(data_dir / "cluster", size, name="aurora-dev", host=host,
                        ports=[port + i for i in range(size)], config_file=config_file, env=env,
                        log_dir=data_dir / "logs", node_factory=node_factory)


def default_replicas(size: int) -> str:
    return str(min(size, 3))


def wait_until_ready(client_env: Mapping[str, str], timeout: float = 30.0) -> None:
    """Block until the cluster's JetStream answers (its meta leader is elected): a service that
    creates its streams before then would fail its start-up."""

    async def ready() -> None:
        settings = load_settings(client_env)
        nc = await asyncio.wait_for(connect(settings.nats, name="aurora-dev"), timeout)
        try:
            await wait_jetstream(nc, timeout)
        finally:
            await nc.close()

    asyncio.run(ready())
