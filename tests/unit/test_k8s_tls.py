"""The Kubernetes base wires TLS into every pod (deploy/k8s/base, docs/deploy.md
"Certificates"): each workload mounts its certificate Secrets where the ConfigMap's
DUETIME_TLS_* paths point, readable by the image's user; the schedulers require the client
certificates the workers mount; the ports that serve TLS are probed by the image's
duetime-health, since the kubelet's gRPC probe speaks no TLS, and the gateway's HTTPS port by
the kubelet's HTTPS probe; and the example overlay's certificates carry every name their clients
check. (tests/e2e/test_kube_demo.py runs the manifests.)"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from testkit.k8s import CERTIFICATE_FILES, certificate_files, rendered

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / "deploy" / "k8s" / "base"
CONTAINERFILE = REPO / "deploy" / "image" / "Containerfile"
TLS_FILES = ("DUETIME_TLS_CA_FILE", "DUETIME_TLS_CERT_FILE", "DUETIME_TLS_KEY_FILE")
# The variable naming the address each TLS-serving container listens on.
SERVES_TLS = {"api": "DUETIME_API_ADDRESS", "scheduler": "DUETIME_SCHEDULER_ADDRESS"}
# The Secret each certificate file of a workload comes from (others: all from duetime-tls). The
# workers present a client certificate of their own; the gateway and the console serve one of
# their own and verify the api with the services' CA.
CERTIFICATES = {
    "duetime-worker": dict.fromkeys(CERTIFICATE_FILES, "duetime-worker-tls"),
    "duetime-gateway": {
        "ca.crt": "duetime-tls",
        "tls.crt": "duetime-gateway-tls",
        "tls.key": "duetime-gateway-tls",
    },
    "duetime-console": {
        "ca.crt": "duetime-tls",
        "tls.crt": "duetime-console-tls",
        "tls.key": "duetime-console-tls",
    },
}
EXAMPLE = "deploy/k8s/overlays/example"


def documents() -> list[dict[str, Any]]:
    resources = yaml.safe_load((BASE / "kustomization.yaml").read_text())["resources"]
    return [doc for name in resources for doc in yaml.safe_load_all((BASE / name).read_text())]


def config() -> dict[str, str]:
    (found,) = [d for d in documents() if d["kind"] == "ConfigMap"]
    data: dict[str, str] = found["data"]
    return data


def pods() -> dict[str, dict[str, Any]]:
    """Each Deployment's and Job's pod spec, by workload name."""
    return {
        doc["metadata"]["name"]: doc["spec"]["template"]["spec"]
        for doc in documents()
        if doc["kind"] in ("Deployment", "Job")
    }


def env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def test_every_pod_mounts_its_certificates_where_the_settings_point() -> None:
    paths = [PurePosixPath(config()[name]) for name in TLS_FILES]
    (directory,) = {path.parent for path in paths}
    # The Secrets' keys, as cert-manager and `kubectl create secret tls` name them.
    assert tuple(p.name for p in paths) == CERTIFICATE_FILES
    assert len(pods()) == 7
    for name, pod in pods().items():
        volume, files = certificate_files(pod)
        assert files == CERTIFICATES.get(name, dict.fromkeys(CERTIFICATE_FILES, "duetime-tls")), (
            name
        )
        # Root-owned files of mode 0440: readable through the pod's group only.
        assert (volume.get("secret") or volume["projected"])["defaultMode"] == 0o440, name
        context = pod["securityContext"]
        assert context["fsGroup"] == context["runAsGroup"] == context["runAsUser"], name
        for container in pod["containers"]:
            refs = [ref["configMapRef"]["name"] for ref in container.get("envFrom", [])]
            assert refs == ["duetime-config"], (name, "no TLS settings")
            mounts = {m["name"]: m for m in container["volumeMounts"]}
            mount = mounts[volume["name"]]
            assert PurePosixPath(mount["mountPath"]) == directory, name
            assert mount["readOnly"], name
            assert "subPath" not in mount, (name, "a renewed Secret would not reach the pod")


def test_schedulers_require_the_workers_client_certificates() -> None:
    (scheduler,) = pods()["duetime-scheduler"]["containers"]
    assert env(scheduler)["DUETIME_WORKER_CLIENT_CA_FILE"] == config()["DUETIME_TLS_CA_FILE"]
    (worker,) = pods()["duetime-worker"]["containers"]
    names = {e["name"] for e in worker.get("env", [])}
    assert "DUETIME_WORKER_TOKEN" not in names
    assert "grpc" not in config().get("DUETIME_PLAINTEXT", "")


@pytest.mark.parametrize("service", sorted(SERVES_TLS))
def test_tls_ports_are_probed_over_tls(service: str) -> None:
    (container,) = pods()[f"duetime-{service}"]["containers"]
    port = int(env(container)[SERVES_TLS[service]].rpartition(":")[2])
    probe_copy = r"^COPY .*deploy/image/health\.py (\S+)$"
    installed = re.search(probe_copy, CONTAINERFILE.read_text(), re.M)
    assert installed is not None
    probes = [container[kind] for kind in ("startupProbe", "readinessProbe", "livenessProbe")]
    assert all("grpc" not in probe for probe in probes)
    assert probes[0]["tcpSocket"]["port"] == port
    for probe in probes[1:]:
        assert probe["exec"]["command"] == [installed[1], str(port)]


def test_the_gateway_is_probed_over_https_and_verifies_the_api_by_its_name() -> None:
    (container,) = pods()["duetime-gateway"]["containers"]
    port = int(env(container)["DUETIME_GATEWAY_ADDRESS"].rpartition(":")[2])
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[kind]["httpGet"] == {"path": "/healthz", "port": port, "scheme": "HTTPS"}
    # It reaches the api pods through a headless Service, and checks their certificate for the
    # name the api's Service has (the one the certificate carries).
    target = env(container)["DUETIME_API_TARGET"].rpartition(":")[0]
    services = {d["metadata"]["name"]: d for d in documents() if d["kind"] == "Service"}
    assert services[target]["spec"]["clusterIP"] == "None"
    assert services[target]["spec"]["selector"] == services["duetime-api"]["spec"]["selector"]
    assert env(container)["DUETIME_API_SERVER_NAME"] == "duetime-api"
    # The OpenAPI document it serves is where the image puts it.
    copied = re.search(r"^COPY openapi (\S+)$", CONTAINERFILE.read_text(), re.M)
    assert copied is not None
    served = PurePosixPath(env(container)["DUETIME_GATEWAY_OPENAPI_FILE"])
    assert served.parent == PurePosixPath(copied[1])
    assert (REPO / "openapi" / served.name).is_file()


def test_each_certificate_carries_the_names_its_clients_check() -> None:
    """The example overlay's certificates: each Service's names are in the certificate its pods
    serve, and so is each name a Duetime client verifies (the workers the schedulers' target,
    the gateway the api's server name, the probes localhost)."""
    docs = rendered(EXAMPLE)
    certificates = {d["spec"]["secretName"]: d["spec"] for d in docs if d["kind"] == "Certificate"}
    templates = [d["spec"]["template"] for d in docs if d["kind"] == "Deployment"]
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}

    def served(service: str) -> set[str]:
        """The names in the certificate the pods behind ``service`` serve."""
        selector = services[service]["spec"]["selector"].items()
        (pod,) = [t["spec"] for t in templates if selector <= t["metadata"]["labels"].items()]
        certificate = certificates[certificate_files(pod)[1]["tls.crt"]]
        assert "server auth" in certificate["usages"], service
        return set(certificate["dnsNames"])

    for name, service in services.items():
        if service["spec"].get("clusterIP") == "None":
            continue  # headless: its clients check another name (below)
        namespace = service["metadata"]["namespace"]
        names = {name, f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local"}
        assert names <= served(name), name
    (settings,) = [d["data"] for d in docs if d["kind"] == "ConfigMap"]
    scheduler = settings["DUETIME_SCHEDULER_TARGET"].rpartition(":")[0]
    assert scheduler in served(scheduler)
    (gateway,) = [
        t["spec"]["containers"][0]
        for t in templates
        if t["metadata"]["labels"]["app.kubernetes.io/name"] == "duetime-gateway"
    ]
    api_pods = env(gateway)["DUETIME_API_TARGET"].rpartition(":")[0]
    assert env(gateway)["DUETIME_API_SERVER_NAME"] in served(api_pods)
    for workload in SERVES_TLS:
        assert "localhost" in served(f"duetime-{workload}"), workload


@pytest.mark.parametrize("workload", ["duetime-gateway", "duetime-console"])
def test_what_faces_clients_serves_a_server_certificate_of_its_own(workload: str) -> None:
    """What the gateway and the console serve names them as clients outside reach them too,
    and is for server auth only: the pod that faces the clients holds no certificate that the
    schedulers (which take any client certificate the CA verifies as a worker's), PostgreSQL,
    etcd or Kafka would accept."""
    (certificate,) = [
        d["spec"]
        for d in rendered(EXAMPLE)
        if d["kind"] == "Certificate" and d["spec"]["secretName"] == f"{workload}-tls"
    ]
    assert certificate["usages"] == ["server auth"]
    outside = [n for n in certificate["dnsNames"] if not n.startswith(workload)]
    assert outside, "no name for clients outside the cluster"
