"""deploy/kubernetes/: every manifest is valid against the Kubernetes JSON schemas (strict: no
unknown field), with no cluster; every Aurora service has one, with the scaling the README
promises; the NATS chart values cover every user of deploy/nats-auth.conf."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from aurora_cli.creds import SERVICE_USERS
from aurora_cli.devstack import discover_services
from tests.harness.processes import REPO

K8S = REPO / "deploy" / "kubernetes"
VERSION = "1.30.0"  # the oldest Kubernetes these manifests are written for (autoscaling/v2, policy/v1)
VALUES = K8S / "nats-values.yaml"


def documents() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted((K8S / "aurora").glob("*.yaml")):
        found += [(f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc)
                  for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]
    return found


DOCS = documents()


def workloads() -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for _, doc in DOCS if doc["kind"] in ("Deployment", "StatefulSet")}


@pytest.mark.parametrize(("where", "doc"), DOCS, ids=[where for where, _ in DOCS])
def test_each_manifest_is_valid_kubernetes(where: str, doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, VERSION, strict=True)


def test_a_broken_manifest_is_caught() -> None:
    _, deployment = next((w, d) for w, d in DOCS if d["kind"] == "Deployment")
    broken = {**deployment, "spec": {**deployment["spec"], "replicas": "many"}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSION, strict=True)


def test_every_service_has_a_workload_with_its_own_identity() -> None:
    found = workloads()
    for service in discover_services():
        name = service.replace("_", "-")
        assert name in found, f"services/{service} has no manifest in deploy/kubernetes/"
        pod = found[name]["spec"]["template"]["spec"]
        [container] = pod["containers"]
        assert container["command"] == ["python", "-m", f"services.{service}"]
        secrets = [v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v]
        own = [f"aurora-creds-{SERVICE_USERS[service]}"]  # its own credentials, nobody else's
        assert secrets == ([*own, "aurora-gateway-secrets"] if service == "mcp_gateway" else own), name
        assert {"configMapRef": {"name": "aurora-env"}} in container["envFrom"]


def test_what_scales_and_what_does_not() -> None:
    found = workloads()
    assert found["runner"]["kind"] == "Deployment"
    [autoscaler] = [d for _, d in DOCS if d["kind"] == "HorizontalPodAutoscaler"]
    assert autoscaler["spec"]["scaleTargetRef"]["name"] == "runner"
    assert found["app-supervisor"]["kind"] == "StatefulSet" and found["app-supervisor"]["spec"]["replicas"] == 1
    gateway = found["mcp-gateway"]["spec"]
    assert gateway["replicas"] == 1 and gateway["strategy"]["type"] == "Recreate"  # never two on one stdio app


def test_the_systems_secrets_are_mounted_into_the_gateway_alone() -> None:
    gateway = workloads()["mcp-gateway"]["spec"]["template"]["spec"]
    [container] = gateway["containers"]
    [volume] = [v for v in gateway["volumes"] if v["name"] == "gateway-secrets"]
    assert volume["secret"]["secretName"] == "aurora-gateway-secrets" and volume["secret"]["optional"] is True
    [mount] = [m for m in container["volumeMounts"] if m["name"] == "gateway-secrets"]
    assert mount == {"name": "gateway-secrets", "mountPath": "/run/secrets/gateway", "readOnly": True}
    assert {"name": "AURORA_SECRETS_DIR", "value": "/run/secrets/gateway"} in container["env"]
    others = [where for where, doc in DOCS if doc["metadata"]["name"] != "mcp-gateway"
              and "aurora-gateway-secrets" in yaml.safe_dump(doc)]
    assert others == []


def test_services_replicate_their_streams_three_times() -> None:
    [env] = [d for _, d in DOCS if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "aurora-env"]
    assert env["data"]["AURORA_STREAM_REPLICAS"] == "3"
    assert env["data"]["NATS_CREDS_ENV_FILE"] == "/run/aurora/nats.env"


def test_the_chart_values_make_a_secured_three_node_jetstream_cluster() -> None:
    values = yaml.safe_load(VALUES.read_text(encoding="utf-8"))
    config = values["config"]
    assert config["cluster"]["enabled"] and config["cluster"]["replicas"] == 3
    assert config["cluster"]["routeURLs"]["user"] == "aurora-route"
    assert config["jetstream"]["enabled"] and config["jetstream"]["fileStore"]["enabled"]
    assert config["merge"]["00$include"] == "nats-auth.conf"
    auth = (REPO / "deploy" / "nats-auth.conf").read_text(encoding="utf-8")
    wanted = set(re.findall(r"\$(AURORA_NATS_[A-Z_]+_PASSWORD)", auth))
    env = values["container"]["env"]
    assert wanted and set(env) == wanted
    for name, source in env.items():
        assert source["valueFrom"]["secretKeyRef"] == {"name": "aurora-nats-hashes", "key": name}
    assert values["service"]["ports"]["monitor"]["enabled"] is False


def test_the_readme_names_every_file() -> None:
    readme = (K8S / "README.md").read_text(encoding="utf-8")
    for path in K8S.rglob("*.yaml"):
        assert str(path.relative_to(K8S)) in readme, f"deploy/kubernetes/README.md does not mention {path.name}"


def test_manifests_exist() -> None:
    assert len(DOCS) >= 8 and Path(VALUES).is_file()
    assert "apiVersion" not in VALUES.read_text(encoding="utf-8")  # values, not a manifest to apply
