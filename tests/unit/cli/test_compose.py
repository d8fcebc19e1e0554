"""compose.yaml is a valid Compose file that runs every service that exists, and nothing else."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from aurora_cli.creds import SERVER_USERS_FILE, SERVICE_USERS, init_credentials, read_server_env
from aurora_cli.devstack import START_ORDER, discover_services
from aurora_cli.localnats import nats_server_binary

REPO = Path(__file__).resolve().parents[3]
COMPOSE: dict[str, Any] = yaml.safe_load((REPO / "compose.yaml").read_text(encoding="utf-8"))
SERVICES: dict[str, Any] = COMPOSE["services"]


def _runs_a_service(service: dict[str, Any]) -> bool:
    command = service.get("command") or []
    return len(command) == 3 and str(command[2]).startswith("services.")


AURORA = {name: svc for name, svc in SERVICES.items() if _runs_a_service(svc)}
NOT_APPS = ("nats", "creds-init", "demo-init", "demo-init-llm", "ollama", "ollama-pull", "jaeger")
EXAMPLE_APPS = {name: svc for name, svc in SERVICES.items() if name not in NOT_APPS and name not in AURORA}


def _module(service: dict[str, Any]) -> str:
    command = service["command"]
    assert command[:2] == ["python", "-m"] and len(command) == 3, command
    return str(command[2])


@pytest.mark.parametrize("name", sorted(EXAMPLE_APPS))
def test_each_example_app_runs_a_module_of_apps_that_exists(name: str) -> None:
    command = EXAMPLE_APPS[name]["command"]
    assert command[:2] == ["python", "-m"] and command[2].startswith("apps."), command
    assert importlib.util.find_spec(command[2]) is not None
    assert name == command[2].removeprefix("apps.").replace("_", "-")


def test_compose_yaml_follows_the_compose_specification() -> None:
    schema = json.loads((REPO / "tests" / "fixtures" / "compose-spec.json").read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(COMPOSE), key=str)
    assert errors == [], "\n".join(e.message for e in errors)


def test_the_schema_would_catch_a_mistake() -> None:
    schema = json.loads((REPO / "tests" / "fixtures" / "compose-spec.json").read_text(encoding="utf-8"))
    broken = json.loads(json.dumps(COMPOSE))
    broken["services"]["event-bridge"]["restrat"] = "always"
    assert not jsonschema.Draft7Validator(schema).is_valid(broken)


@pytest.mark.parametrize("name", sorted(AURORA))
def test_each_service_command_is_a_module_that_exists(name: str) -> None:
    module = _module(AURORA[name])
    assert module.startswith("services.")
    assert importlib.util.find_spec(module) is not None, module
    assert (REPO / module.replace(".", "/") / "__main__.py").is_file()
    assert name == module.removeprefix("services.").replace("_", "-")


def test_every_service_with_a_main_is_in_compose_and_in_the_dev_stack() -> None:
    on_disk = {p.parent.name for p in (REPO / "services").glob("*/__main__.py")}
    assert on_disk, "no services found"
    assert {_module(s).removeprefix("services.") for s in AURORA.values()} == on_disk
    assert set(discover_services()) == on_disk


@pytest.mark.parametrize("name", sorted(AURORA))
def test_each_service_waits_for_a_healthy_nats_and_talks_to_it(name: str) -> None:
    service = AURORA[name]
    assert service["depends_on"]["nats"] == {"condition": "service_healthy"}
    assert service["environment"]["NATS_URL"] == "nats://nats:4222"
    assert service["image"] == "aurora:local" and "build" not in service  # creds-init builds it
    assert service["restart"] in ("unless-stopped", "always", "on-failure")
    assert "container_name" not in service  # `--scale` needs generated names


def test_compose_starts_the_ingress_once_the_demo_is_applied_and_stops_in_the_reverse_order() -> None:
    """Each depends on the one before it: the app-supervisor (whose apps emit events, the chat page's
    among them) starts once demo-init has applied the bindings, and compose stops in the reverse
    order: external calls and runs first, then the apps, the router, the gateway, the bridge."""
    order = ["event-bridge", "mcp-gateway", "router", "demo-init", "app-supervisor", "runner", "mcp-edge"]
    assert {name.replace("_", "-") for name in START_ORDER} <= set(order)
    for before, after in itertools.pairwise(order):
        assert before in SERVICES[after]["depends_on"], (before, after)
    assert SERVICES["app-supervisor"]["depends_on"]["demo-init"] == {"condition": "service_completed_successfully"}
    for name in ("mcp-gateway", "router"):  # demo-init applies to services that serve
        assert SERVICES["demo-init"]["depends_on"][name] == {"condition": "service_healthy"}


def test_one_service_builds_the_image_every_aurora_container_runs() -> None:
    """Each service that declared the build made an image of its own (`up --build` built eleven,
    left ten untagged, and a later `up` recreated the containers of those)."""
    builders = {name: svc["build"] for name, svc in SERVICES.items() if "build" in svc}
    assert builders == {"creds-init": {"context": ".", "dockerfile": "deploy/Dockerfile"}}
    assert SERVICES["creds-init"]["image"] == "aurora:local"
    ours = [name for name, svc in SERVICES.items() if svc.get("image") == "aurora:local"]
    assert set(AURORA) | set(EXAMPLE_APPS) | {"demo-init", "demo-init-llm"} <= set(ours)
    # No registry has it: a plain `up` builds it, and asks none for it (each service asked one,
    # and printed its error, before the build).
    assert {SERVICES[name].get("pull_policy") for name in ours} == {"never"}


@pytest.mark.parametrize("name", sorted(n for n, s in SERVICES.items() if s.get("restart") != "no"))
def test_every_long_running_service_has_a_health_check(name: str) -> None:
    """`docker compose up --wait` returns once each is healthy: for an Aurora service, once it
    serves (it writes AURORA_READY_FILE then, shared/readiness.py), not once its process runs."""
    check = SERVICES[name]["healthcheck"]
    assert check["test"][0] == "CMD"
    if name == "app-supervisor":  # and its chat page takes messages (the platform connected to it)
        ready = SERVICES[name]["environment"]["AURORA_READY_FILE"]
        assert f"'{ready}'" in check["test"][-1] and "8780/healthz" in check["test"][-1], check
    elif name in AURORA:
        assert check["test"] == ["CMD", "test", "-f", SERVICES[name]["environment"]["AURORA_READY_FILE"]]


def test_nats_runs_jetstream_on_a_named_volume_with_a_health_check() -> None:
    nats = SERVICES["nats"]
    assert nats["image"].startswith("nats:") and "alpine" in nats["image"]  # alpine has wget
    command = nats["command"]
    assert "-js" in command and command[command.index("-sd") + 1] == "/data"
    volume = next(v for v in nats["volumes"] if v.endswith(":/data"))
    assert volume.split(":")[0] in COMPOSE["volumes"]
    test = nats["healthcheck"]["test"]
    assert test[0] == "CMD" and "wget" in test and any("8222/healthz" in part for part in test)


def test_nats_says_which_docker_to_upgrade_when_the_hashes_file_is_not_a_file(tmp_path: Path) -> None:
    """Docker Engine < 26 ignores the volume's subpath and mounts the whole volume (a folder) where
    the hashes file should be: the nats command says what to upgrade instead of failing later on
    an unset variable. Its own command, with the path moved here (test_compose_engine.py runs it
    in the image)."""
    folder = tmp_path / "server-users.env"
    folder.mkdir()
    command = [part.replace("$$", "$").replace("/etc/nats/server-users.env", str(folder))
               for part in SERVICES["nats"]["command"]]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, env={"PATH": os.environ["PATH"]})
    assert done.returncode == 78, done.stdout + done.stderr
    assert "Docker Engine 26+ and Docker Compose 2.26+" in done.stderr and "upgrade Docker" in done.stderr


def test_the_nats_config_is_valid_with_the_hashes_creds_init_makes(tmp_path: Path) -> None:
    """deploy/nats.conf (with deploy/nats-auth.conf included) reads each password's bcrypt hash from
    the environment the nats service sources from server-users.env; without them it refuses to start."""
    init_credentials(tmp_path, cost=4)
    hashes = read_server_env(tmp_path / SERVER_USERS_FILE)
    env = {"PATH": os.environ.get("PATH", ""), **hashes}
    command = [str(nats_server_binary()), "-c", str(REPO / "deploy" / "nats.conf"), "-t"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=30, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    missing = subprocess.run(command, capture_output=True, text=True, timeout=30, env={"PATH": env["PATH"]})
    assert missing.returncode != 0 and "AURORA_NATS_" in missing.stdout + missing.stderr


def test_credentials_come_from_the_init_volume_each_service_mounting_only_its_own() -> None:
    init = SERVICES["creds-init"]
    assert init["command"] == ["aurora", "creds", "init", "--dir", "/creds"]
    assert "aurora-creds:/creds" in init["volumes"] and "aurora-creds" in COMPOSE["volumes"]
    nats = SERVICES["nats"]
    assert nats["depends_on"]["creds-init"] == {"condition": "service_completed_successfully"}
    assert [v["volume"]["subpath"] for v in nats["volumes"] if isinstance(v, dict)] == [SERVER_USERS_FILE]
    for folder, user in SERVICE_USERS.items():
        service = AURORA[folder.replace("_", "-")]
        mounts = [v for v in service.get("volumes", []) if isinstance(v, dict) and v["source"] == "aurora-creds"]
        assert [(m["volume"]["subpath"], m["target"], m["read_only"]) for m in mounts] == [
            (f"{user}.env", service["environment"]["NATS_CREDS_ENV_FILE"], True)]
        assert not [k for k in service["environment"] if k in ("NATS_USER", "NATS_PASSWORD")
                    or k.startswith("AURORA_NATS_")]
    assert "volumes" not in SERVICES["aurora-app-notes"] and "environment" not in SERVICES["aurora-app-notes"]
    assert not (REPO / ".env.example").exists()  # nothing to fill in by hand


def test_the_monitoring_port_is_not_published_and_nats_listens_on_this_host_only() -> None:
    assert SERVICES["nats"]["ports"] == ["127.0.0.1:4222:4222"]
    assert all("8222" not in str(port) for svc in SERVICES.values() for port in svc.get("ports", []))
    conf = (REPO / "deploy" / "nats.conf").read_text(encoding="utf-8")
    assert "http: 127.0.0.1:8222" in conf


def test_the_image_installs_every_package_of_the_project() -> None:
    dockerfile = (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    assert dockerfile.splitlines()[next(i for i, line in enumerate(dockerfile.splitlines())
                                        if line.startswith("FROM"))] == "FROM python:3.11-slim"
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    for package in ("shared", "services", "aurora_cli", "apps"):
        assert f'"{package}*"' in pyproject
        assert f"COPY {package} ./{package}" in dockerfile


@pytest.mark.parametrize("name", sorted(EXAMPLE_APPS))
def test_each_http_demo_system_has_a_health_check_on_its_own_port(name: str) -> None:
    service = SERVICES[name]
    port = service["command"][service["command"].index("--port") + 1]
    test = service["healthcheck"]["test"]
    assert test[0] == "CMD" and any(f"127.0.0.1:{port}/healthz" in part for part in test), test


def test_demo_init_applies_deploy_demo_once_as_the_operator_after_the_stack_answers() -> None:
    init = SERVICES["demo-init"]
    assert init["command"][:4] == ["aurora", "apply", "-f", "deploy/demo/"] and "--wait" in init["command"]
    assert init["restart"] == "no"
    assert [v["volume"]["subpath"] for v in init["volumes"]] == ["operator.env"]
    assert init["environment"]["NATS_CREDS_ENV_FILE"] == init["volumes"][0]["target"]
    assert init["depends_on"]["aurora-app-assets"] == {"condition": "service_healthy"}
    assert {"mcp-gateway", "router"} <= set(init["depends_on"])
    assert (REPO / "deploy" / "demo").is_dir()
    assert "COPY deploy/demo ./deploy/demo" in (REPO / "deploy" / "Dockerfile").read_text(encoding="utf-8")


def test_runners_scale_and_the_llm_profile_adds_a_model_server_they_point_at() -> None:
    runner = SERVICES["runner"]
    assert "container_name" not in runner and "ports" not in runner  # `--scale runner=3`
    assert SERVICES["ollama"]["profiles"] == ["llm"] and SERVICES["ollama-pull"]["profiles"] == ["llm"]
    assert "ollama-models" in COMPOSE["volumes"]
    assert "http://ollama:11434/v1" in runner["environment"]["AURORA_MODEL_BASE_URL"]
    unprofiled = [name for name, svc in SERVICES.items() if "profiles" not in svc]
    assert "ollama" not in unprofiled  # `docker compose up` alone needs no model
    # the profile hands the scenarios to the llm agents, after the playbooks' demo-init
    llm_init = SERVICES["demo-init-llm"]
    assert llm_init["profiles"] == ["llm"] and llm_init["command"][:4] == ["aurora", "apply", "-f", "deploy/demo/llm/"]
    assert llm_init["depends_on"] == {"demo-init": {"condition": "service_completed_successfully"}}
    assert [v["volume"]["subpath"] for v in llm_init["volumes"]] == ["operator.env"]


def test_jaeger_is_the_observability_profile_and_the_services_export_only_when_told_where() -> None:
    """A plain `up` needs no Jaeger image (nothing here pulls one it does not run); its UI is on
    this host only; a service exports spans only when OTEL_EXPORTER_OTLP_ENDPOINT is set."""
    jaeger = SERVICES["jaeger"]
    assert jaeger["profiles"] == ["observability"] and jaeger["ports"] == ["127.0.0.1:16686:16686"]
    for name in AURORA:
        assert SERVICES[name]["environment"]["OTEL_EXPORTER_OTLP_ENDPOINT"] == "${OTEL_EXPORTER_OTLP_ENDPOINT:-}"
    assert "OTEL_EXPORTER_OTLP_ENDPOINT=http://jaeger:4318" in (REPO / "compose.yaml").read_text(encoding="utf-8")
