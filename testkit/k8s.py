"""The Kubernetes manifests (deploy/k8s) as tests read them: a kustomization rendered as
`kubectl apply -k` reads it (scripts/kustomize), and where a pod's certificate files come from."""

from __future__ import annotations

import subprocess
from functools import cache
from typing import Any

import yaml

from testkit.processes import REPO

# The files of a certificate Secret, as cert-manager and the documented commands name them.
CERTIFICATE_FILES = ("ca.crt", "tls.crt", "tls.key")


@cache
def rendered(kustomization: str) -> tuple[dict[str, Any], ...]:
    """The documents of ``kustomization`` (a directory relative to the repository)."""
    out = subprocess.run(
        [str(REPO / "scripts" / "kustomize"), str(REPO / kustomization)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return tuple(doc for doc in yaml.safe_load_all(out) if doc)


def certificate_files(pod: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A pod spec's one volume of Secrets, and the files it holds, each with the Secret it comes
    from: a Secret volume holds its Secret's keys, a projected one the items it takes."""
    (volume,) = [
        v
        for v in pod["volumes"]
        if "secret" in v or any("secret" in s for s in v.get("projected", {}).get("sources", []))
    ]
    if "secret" in volume:
        return volume, dict.fromkeys(CERTIFICATE_FILES, volume["secret"]["secretName"])
    files = {}
    for source in volume["projected"]["sources"]:
        for item in source["secret"]["items"]:
            assert item["path"] == item["key"], item
            files[item["path"]] = source["secret"]["name"]
    return volume, files
