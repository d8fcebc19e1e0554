"""`make profile-gateway`: where the gateway and the supervisor spend their CPU on a tool call.

    .venv/bin/python -m tests.bench.profile        (BENCH_PROFILE_SECONDS, default 20)

Starts the processes of `make bench-gateway` (nats-server, app-supervisor, mcp-gateway, the
echo app), keeps BENCH_CALLERS (default 32) callers calling `echo` through `amp.admin.tools.call` and profiles the
gateway and the supervisor meanwhile, printing CPU ms per call measured over the same window
and each process's top entries. BENCH_PROFILE picks the profiler:

- `cpu` (default): cProfile on the process's CPU clock (tests/bench/cpu_profiled.py), only
  over the loaded window; exact call counts, though its own cost inflates small functions;
- `py-spy`: sampled stacks (py-spy counts a runnable thread waiting for a CPU as busy, so on a
  loaded machine the system call before each wait collects most samples);
- `syscalls`: strace counts each process's system calls per tool call;
- `none`: no profiler, only the CPU ms per call (for before/after comparisons).
Profiles stay in $BENCH_PROFILE_DIR when it is set.
"""

from __future__ import annotations

import asyncio
import collections
import os
import pstats
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nats

from tests.bench.bench_gateway import concurrent, gateway_call, readiness_calls
from tests.bench.common import env_int
from tests.bench.gateway_platform import PROFILED, Platform, cpu_per_call, cpu_seconds
from tests.bench.round_trips import RawRequester

PY_SPY = Path(sys.executable).parent / "py-spy"
OURS = ("services/", "shared/")


def spy_summary(collapsed: str, top: int = 12) -> list[str]:
    """py-spy's collapsed stacks: the top functions by own samples, and this project's frames by
    samples passing through them."""
    own: collections.Counter[str] = collections.Counter()
    through: collections.Counter[str] = collections.Counter()
    total = 0
    for line in collapsed.splitlines():
        stack_text, _, count_text = line.rpartition(" ")
        if not stack_text:
            continue
        stack, count = stack_text.split(";"), int(count_text)
        total += count
        own[stack[-1]] += count
        for frame in set(stack):
            if any(part in frame for part in OURS):
                through[frame] += count
    if total == 0:
        return ["  (no samples)"]
    lines = [f"  {total:,} samples; own time:"]
    lines += [f"    {n / total:6.1%}  {frame}" for frame, n in own.most_common(top)]
    lines.append("  this project's frames, samples passing through:")
    lines += [f"    {n / total:6.1%}  {frame}" for frame, n in through.most_common(top)]
    return lines


def cpu_summary(path: Path, calls: int, top: int = 25) -> list[str]:
    """cProfile's stats as µs of CPU per tool call: by own time, then this project's functions
    by cumulative time."""
    stats = pstats.Stats(str(path))
    entries = stats.stats  # type: ignore[attr-defined]
    total = sum(tt for (_, _, tt, _, _) in entries.values())

    def name(key: tuple[str, int, str]) -> str:
        file, line, function = key
        short = file.split("site-packages/")[-1].split("/python3.11/")[-1].replace(str(Path.cwd()) + "/", "")
        return f"{function} ({short}:{line})"

    functions = sum(nc for (_, nc, _, _, _) in entries.values())
    # Function calls per tool call do not depend on how busy the machine is: the measure to
    # compare before and after on a shared machine, beside the CPU time.
    lines = [f"  {functions / calls:,.0f} Python function calls per tool call; "
             f"{total / calls * 1e6:,.0f} µs CPU per call under the profiler",
             "  own time, µs per call, calls per call:"]
    for key, (_, nc, tt, _, _) in sorted(entries.items(), key=lambda kv: -kv[1][2])[:top]:
        lines.append(f"    {tt / calls * 1e6:7.1f}  {nc / calls:6.2f}  {name(key)}")
    lines.append("  this project's functions by cumulative time, µs per call:")
    ours = [(key, v) for key, v in entries.items() if any(part in key[0] for part in OURS)]
    for key, (_, nc, _, ct, _) in sorted(ours, key=lambda kv: -kv[1][3])[:top]:
        lines.append(f"    {ct / calls * 1e6:7.1f}  {nc / calls:6.2f}  {name(key)}")
    return lines


def syscall_summary(text: str, calls: int) -> list[str]:
    """strace's summary with a column of system calls per tool call."""
    lines = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[3].isdigit():
            lines.append(f"  {fields[-1]:<16} {int(fields[3]) / calls:6.2f} per call")
    return lines[:12]


def watcher(mode: str, pid: int, seconds: int, output: Path) -> subprocess.Popen[bytes] | None:
    if mode == "py-spy":
        command = [str(PY_SPY), "record", "--nonblocking", "--format", "raw", "--rate", "250",
                   "--duration", str(seconds), "--pid", str(pid), "--output", str(output)]
    elif mode == "syscalls":
        command = ["strace", "-c", "-f", "-p", str(pid), "-o", str(output)]
    elif mode == "cpu":
        os.kill(pid, signal.SIGUSR1)
        return None
    else:
        return None  # `none`: CPU ms per call only
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def unwatch(mode: str, pid: int, spy: subprocess.Popen[bytes] | None, output: Path, seconds: int) -> None:
    if spy is not None:
        if mode == "syscalls":  # strace writes its table when interrupted
            spy.send_signal(signal.SIGINT)
        spy.wait(timeout=seconds + 60)
        return
    if mode != "cpu":
        return
    output.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR2)
    deadline = time.monotonic() + 30
    while not output.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # let the dump finish writing


async def main() -> None:
    seconds = env_int("BENCH_PROFILE_SECONDS", 20)
    callers = env_int("BENCH_CALLERS", 32)  # 1: the sequential path bench-gateway's own cost is measured on
    mode = os.environ.get("BENCH_PROFILE", "cpu")
    keep = os.environ.get("BENCH_PROFILE_DIR")
    with tempfile.TemporaryDirectory(prefix="aurora-profile-") as tmp:
        folder = Path(tmp)
        platform = Platform(folder, profiled=mode == "cpu")
        platform.start()
        outputs = {role: platform.profile_path(role) if mode == "cpu" else folder / f"{role}.txt"
                   for role in PROFILED}
        try:
            nc = await nats.connect(platform.url, pending_size=64 * 1024 * 1024)
            raw = await RawRequester.connect(platform.url)
            subject = "amp.admin.tools.call"
            await platform.ready(readiness_calls(nc, raw, subject))
            call = gateway_call(nc, subject)
            await concurrent("warm-up", call, 500, callers)
            pids = {role: platform.stack[role].pid for role in PROFILED}
            spies = {role: watcher(mode, pids[role], seconds, outputs[role]) for role in PROFILED}
            before = cpu_seconds()
            calls = 0
            loop = asyncio.get_running_loop()
            deadline = loop.time() + seconds
            while loop.time() < deadline:
                calls += len((await concurrent("load", call, 500, callers)).latencies)
            usage = cpu_per_call(before, cpu_seconds(), calls)
            for role, spy in spies.items():
                unwatch(mode, pids[role], spy, outputs[role], seconds)
            raw.close()
            await nc.close()
        finally:
            platform.stop()
        print(f"profile ({mode}): {calls:,} calls of echo through the gateway, {callers} caller(s), {seconds} s")
        print("CPU ms per call: " + ", ".join(f"{name} {ms:.3f}" for name, ms in sorted(usage.items())))
        report(mode, outputs, calls, keep)


def report(mode: str, outputs: dict[str, Path], calls: int, keep: str | None) -> None:
    for role, path in outputs.items():
        print(f"{role}:")
        if not path.exists():
            print("  (no profile written)")
            continue
        if mode == "cpu":
            print("\n".join(cpu_summary(path, calls)))
        else:
            text = path.read_text()
            print("\n".join(syscall_summary(text, calls) if mode == "syscalls" else spy_summary(text)))
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(keep) / path.name)


if __name__ == "__main__":
    asyncio.run(main())
