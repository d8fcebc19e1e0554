"""A Docker engine for the compose test (`make test-compose`): installed when missing, started
when not running, and the stand-in base images made (tests/harness/engine/).

The engine started here listens on a socket of its own (`ENGINE_SOCKET`), with its own data and
run folders, and not on Docker's default socket: the other tests run nats in a container
whenever `docker info` answers on the default one (tests/harness/broker.py), and they would then
ask a registry this machine cannot reach for its image. Everything the compose test runs talks to
the engine through `DOCKER_HOST`. An engine that a caller points at with DOCKER_HOST is used as it
is. The engine is left running after the test: the next run finds it, its build cache and the
stand-in images.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from tests.harness.processes import REPO

ENGINE_SCRIPTS = REPO / "tests" / "harness" / "engine"
ENGINE_RUN = Path("/run/aurora-engine")
ENGINE_SOCKET = ENGINE_RUN / "docker.sock"
ENGINE_DATA = Path("/var/lib/aurora-engine")
ENGINE_LOG = Path("/var/log/aurora-engine-dockerd.log")
START_TIMEOUT = 60.0


class EngineUnavailable(AssertionError):
    """The compose test cannot have a Docker engine here; the message says what to do."""


def engine_env() -> dict[str, str]:
    """This process's environment with DOCKER_HOST naming the engine (the caller's, or ours)."""
    env = dict(os.environ)
    env.setdefault("DOCKER_HOST", f"unix://{ENGINE_SOCKET}")
    return env


def _answers(env: dict[str, str]) -> bool:
    try:
        return subprocess.run(["docker", "info"], env=env, capture_output=True, timeout=15).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _script(name: str, env: dict[str, str], timeout: float) -> None:
    done = subprocess.run(["bash", str(ENGINE_SCRIPTS / name)], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    if done.returncode != 0:
        raise EngineUnavailable(f"{name} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")


def _start_dockerd(env: dict[str, str]) -> None:
    for folder in (ENGINE_RUN, ENGINE_DATA):
        folder.mkdir(parents=True, exist_ok=True)
    command = ["dockerd", "--host", f"unix://{ENGINE_SOCKET}", "--data-root", str(ENGINE_DATA),
               "--exec-root", str(ENGINE_RUN / "exec"), "--pidfile", str(ENGINE_RUN / "dockerd.pid")]
    with ENGINE_LOG.open("ab") as log:
        # Forked off into a session of its own (setsid --fork): it outlives the test run, for the
        # next one, and this process keeps no handle on it.
        subprocess.run(["setsid", "--fork", *command], stdin=subprocess.DEVNULL, stdout=log,
                       stderr=subprocess.STDOUT, check=True)
    deadline = time.monotonic() + START_TIMEOUT
    while not _answers(env):
        if time.monotonic() > deadline:
            tail = ENGINE_LOG.read_text(errors="replace")[-3000:]
            raise EngineUnavailable(f"dockerd did not answer on {ENGINE_SOCKET} within {START_TIMEOUT:g}s:\n{tail}")
        time.sleep(0.5)


def ensure_engine() -> dict[str, str]:
    """An engine with Compose 2.26+ that answers, and the stand-in base images under their tags;
    the environment to run `docker` with."""
    env = engine_env()
    own_engine = env["DOCKER_HOST"] == f"unix://{ENGINE_SOCKET}"
    if own_engine:
        if os.geteuid() != 0:
            raise EngineUnavailable("the compose test installs and starts a Docker engine, which needs root: run "
                                    "`sudo make test-compose`, or set DOCKER_HOST to a running Docker Engine 26+")
        _script("install-engine.sh", env, timeout=600)
        if not _answers(env):
            if shutil.which("dockerd") is None:
                raise EngineUnavailable("dockerd is not on PATH after install-engine.sh")
            _start_dockerd(env)
    elif not _answers(env):
        raise EngineUnavailable(f"no Docker engine answers at DOCKER_HOST={env['DOCKER_HOST']}")
    _script("stand-in-bases.sh", env, timeout=900)
    return env
