"""docs/deploy.md's install commands, run against the example overlay as kustomize renders it
(scripts/kustomize): each `kubectl apply -k $O -l ...` step selects what it says, no step
carries a Secret the docs make out of band (an apply would replace the real one with
placeholders), the overlay leaves no placeholder endpoint of the base, and the documented
`kubectl create secret` commands, like the overlay's certificates, give every key the pods read.
(tests/e2e/test_kube_demo.py runs the same order with podman.)"""

from __future__ import annotations

import shlex
from typing import Any

import yaml

from testkit.docs import shell_commands
from testkit.k8s import CERTIFICATE_FILES, certificate_files, rendered

# What the base and the docs use for values an operator must replace.
PLACEHOLDERS = ("example.internal", "CHANGE-ME")
# A key of `kubectl create secret generic`: --from-literal=KEY=VALUE, --from-file=KEY=PATH.
FROM = ("--from-literal=", "--from-file=")
# The keys of `kubectl create secret tls`.
TLS_KEYS = {"tls.crt", "tls.key"}


def install_steps() -> tuple[str, list[str]]:
    """The overlay the install commands apply ($O) and each apply's label selector ('' for
    everything), in the documented order, through the first apply of everything (later
    blocks are particular upgrades)."""
    (overlay,) = [c.removeprefix("O=") for c in shell_commands("deploy.md") if c.startswith("O=")]
    steps: list[str] = []
    for command in shell_commands("deploy.md"):
        words = shlex.split(command)
        if words[:4] == ["kubectl", "apply", "-k", "$O"] and "" not in steps:
            steps.append(words[words.index("-l") + 1] if "-l" in words else "")
    return overlay, steps


def created_secrets() -> dict[str, set[str]]:
    """The Secrets the docs create out of band (kubectl create secret generic or tls), with
    their keys."""
    made: dict[str, set[str]] = {}
    for command in shell_commands("deploy.md"):
        words = shlex.split(command)
        if "create" not in words:
            continue
        at = words.index("create")
        if words[at + 1 : at + 3] == ["secret", "generic"]:
            sources = [w.split("=", 2)[1] for w in words if w.startswith(FROM)]
            made[words[at + 3]] = set(sources)
        elif words[at + 1 : at + 3] == ["secret", "tls"]:
            made[words[at + 3]] = set(TLS_KEYS)
    return made


def selected(docs: tuple[dict[str, Any], ...], selector: str) -> list[tuple[str, str]]:
    """(kind, name) of the documents `kubectl apply -l SELECTOR` applies (equality terms)."""
    terms = [term.split("=", 1) for term in selector.split(",") if term]
    return [
        (doc["kind"], doc["metadata"]["name"])
        for doc in docs
        if all(doc["metadata"].get("labels", {}).get(key) == value for key, value in terms)
    ]


def test_the_install_order_applies_what_it_says_and_never_a_secret_made_out_of_band() -> None:
    overlay, steps = install_steps()
    assert steps == [
        "app.kubernetes.io/component=config",
        "app.kubernetes.io/component=migrate",
        "",
    ]
    docs = rendered(overlay)
    # The settings and what makes the certificates, which the migration needs; no Secret.
    config = selected(docs, steps[0])
    assert ("ConfigMap", "duetime-config") in config
    assert {kind for kind, _ in config} <= {"ConfigMap", "Issuer", "Certificate"}, config
    assert selected(docs, steps[1]) == [("Job", "duetime-migrate")]
    made = created_secrets()
    assert {
        "duetime-secrets",
        "duetime-tls",
        "duetime-worker-tls",
        "duetime-gateway-tls",
        "duetime-console-tls",
    } <= made.keys()
    for step in steps:
        clobbered = [
            name for kind, name in selected(docs, step) if kind == "Secret" and name in made
        ]
        assert clobbered == [], f"`kubectl apply -k {overlay} -l {step}` replaces {clobbered}"


def test_the_example_overlay_leaves_no_placeholder_of_the_base() -> None:
    overlay, _ = install_steps()
    text = yaml.safe_dump_all(rendered(overlay))
    assert [p for p in PLACEHOLDERS if p in text] == []
    base = rendered("deploy/k8s/base")
    (config,) = [d["data"] for d in rendered(overlay) if d["kind"] == "ConfigMap"]
    (base_config,) = [d["data"] for d in base if d["kind"] == "ConfigMap"]
    endpoints = ("DUETIME_ETCD_ENDPOINT", "DUETIME_KAFKA_BOOTSTRAP", "DUETIME_SCHEDULER_TARGET")
    assert set(endpoints) <= config.keys() == base_config.keys()


def test_the_documented_secret_holds_every_key_the_pods_read() -> None:
    overlay, _ = install_steps()
    read: dict[str, set[str]] = {}
    for doc in rendered(overlay):
        template = doc.get("spec", {}).get("template", {}).get("spec", {})
        for container in template.get("containers", []):
            for variable in container.get("env", []):
                ref = variable.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    read.setdefault(ref["name"], set()).add(ref["key"])
    assert read.keys() == {"duetime-secrets"}
    made = created_secrets()
    assert read["duetime-secrets"] <= made["duetime-secrets"], "docs/deploy.md leaves keys out"


def test_the_certificates_made_by_hand_or_by_the_overlay_hold_every_file_the_pods_mount() -> None:
    overlay, _ = install_steps()
    mounted: dict[str, set[str]] = {}
    for doc in rendered(overlay):
        if doc["kind"] in ("Deployment", "Job"):
            for file, secret in certificate_files(doc["spec"]["template"]["spec"])[1].items():
                mounted.setdefault(secret, set()).add(file)
    assert mounted.keys() == {
        "duetime-tls",
        "duetime-worker-tls",
        "duetime-gateway-tls",
        "duetime-console-tls",
    }
    made = created_secrets()
    issued = {d["spec"]["secretName"] for d in rendered(overlay) if d["kind"] == "Certificate"}
    for secret, files in mounted.items():
        lacks = files - made.get(secret, set())
        assert not lacks, f"docs/deploy.md's {secret} lacks {lacks}"
        # cert-manager writes ca.crt, tls.crt and tls.key into each Certificate's Secret.
        assert secret in issued, f"the overlay issues no {secret}"
        assert files <= set(CERTIFICATE_FILES), secret
