"""The kustomize bases in deploy/ are valid and apply cleanly with kubectl."""

import json

from conftest import ROOT


def test_mirror_base_applies_and_serves_syncconfigs(kubectl):
    out = kubectl("apply", "-k", str(ROOT / "deploy")).stdout
    assert "namespace/mirra-system created" in out
    assert "customresourcedefinition.apiextensions.k8s.io/syncconfigs.sync.appuio.ch created" in out
    assert "deployment.apps/mirra-mirror created" in out
    deployment = json.loads(
        kubectl("get", "deployment", "mirra-mirror", "-n", "mirra-system", "-o", "json").stdout
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][0] == "run"
    # The CRD is served at once: SyncConfigs can be listed.
    kubectl("get", "syncconfigs", "-A")
    # Applying again changes nothing.
    again = kubectl("apply", "-k", str(ROOT / "deploy")).stdout
    assert "created" not in again and "configured" not in again, again


def test_catalog_base_applies(kubectl):
    out = kubectl("apply", "-k", str(ROOT / "deploy" / "catalog")).stdout
    assert "clusterrole.rbac.authorization.k8s.io/mirra-catalog created" in out
    assert "deployment.apps/mirra-catalog created" in out
