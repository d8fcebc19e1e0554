"""`make bench-kv-reads`: a KV read by message get against one by direct get, on one server.

    .venv/bin/python -m tests.bench.bench_kv_reads     (BENCH_N reads per round, default 3,000;
                                                        BENCH_ROUNDS, default 3)

Two buckets on one nats-server, each with 100 keys written create-only (headers, as a task, a
run record or a ledger claim carries): one as Aurora created buckets before (no direct gets,
read with `STREAM.MSG.GET` through `shared/jetstream/kv_reads.py`), one as `ensure_bucket`
creates them on one server now (`allow_direct`, read with `DIRECT.GET`). Sequential reads, in
turns, through `Bucket.get`; per read: wall time, the client's CPU and nats-server's CPU. The
ratio is direct against message get in the same round.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import nats
from nats.js import JetStreamContext

from aurora_cli.localnats import LocalNats
from shared.jetstream.bucket import Bucket
from shared.jetstream.streams import BucketSpec, ensure_bucket
from tests.bench.common import env_int, record, run_on_service_loop
from tests.bench.resources import cpu_seconds

KEYS = 100


async def _filled(js: JetStreamContext, name: str, *, direct: bool) -> Bucket:
    bucket = await ensure_bucket(js, BucketSpec(name=name))
    if not direct:  # as a bucket created before direct gets: the same stream without them
        info = await js.stream_info(f"KV_{name}")
        await js.update_stream(info.config.evolve(allow_direct=False))
        bucket = await ensure_bucket(js, BucketSpec(name=name))
    for i in range(KEYS):
        await bucket.create(f"k{i}", b'{"id": "%d", "state": "succeeded", "pad": "%s"}' % (i, b"x" * 300))
    return bucket


async def _per_read(bucket: Bucket, n: int, server_pid: int) -> tuple[float, float, float]:
    """(wall µs, client CPU µs, server CPU µs) per read."""
    server, client, wall = cpu_seconds(server_pid), time.process_time(), time.perf_counter()
    for i in range(n):
        await bucket.get(f"k{i % KEYS}")
    return ((time.perf_counter() - wall) * 1e6 / n, (time.process_time() - client) * 1e6 / n,
            (cpu_seconds(server_pid) - server) * 1e6 / n)


async def main() -> None:
    n, rounds = env_int("BENCH_N", 3000), env_int("BENCH_ROUNDS", 3)
    results: dict[str, list[tuple[float, float, float]]] = {"message get": [], "direct get": []}
    with tempfile.TemporaryDirectory(prefix="aurora-bench-kv-") as tmp:
        server = LocalNats(Path(tmp) / "jetstream", log_file=Path(tmp) / "nats-server.log")
        server.start()
        try:
            assert server.pid is not None
            nc = await nats.connect(server.url)
            js = nc.jetstream()
            buckets = {"message get": await _filled(js, "BENCH_MSG_GET", direct=False),
                       "direct get": await _filled(js, "BENCH_DIRECT_GET", direct=True)}
            for r in range(rounds):  # in turns, so drift on a shared machine hits both
                for way, bucket in buckets.items():
                    results[way].append(await _per_read(bucket, n, server.pid))
                print(f"round {r + 1}/{rounds}: " + ", ".join(
                    f"{way} {results[way][-1][0]:.0f} µs" for way in buckets), flush=True)
            await nc.close()
        finally:
            server.stop()
    median = {way: tuple(sorted(values)[len(values) // 2] for values in zip(*rounds_, strict=True))
              for way, rounds_ in results.items()}
    print(f"KV reads on one nats-server: {n:,} sequential reads of {KEYS} keys per round, "
          f"{rounds} rounds, median of the rounds")
    print("                 wall µs  client CPU µs  nats-server CPU µs")
    for way, (wall, client, server_cpu) in median.items():
        print(f"{way:<15} {wall:8.0f} {client:14.0f} {server_cpu:19.1f}")
    msg, direct = median["message get"], median["direct get"]
    print(f"direct / message get: wall {direct[0] / msg[0]:.2f}, client CPU {direct[1] / msg[1]:.2f}, "
          f"nats-server CPU {direct[2] / msg[2]:.2f}")
    record("kv_reads", {"message_get_us": msg[0], "direct_get_us": direct[0],
                        "message_get_server_cpu_us": msg[2], "direct_get_server_cpu_us": direct[2]})


if __name__ == "__main__":
    run_on_service_loop(main())
