"""`mirra run` end to end: the mirror controller as a separate process
against the kube-sandbox, driven and checked with kubectl only."""

import json
import subprocess
import textwrap

import pytest

from conftest import mirra_bin, stop_process, wait_for

SETUP = textwrap.dedent(
    """
    apiVersion: v1
    kind: Namespace
    metadata:
      name: mirra-system
    ---
    apiVersion: v1
    kind: Namespace
    metadata:
      name: team-a
      labels: {team: "true"}
    ---
    apiVersion: v1
    kind: Namespace
    metadata:
      name: other
    """
)

SYNCCONFIG = textwrap.dedent(
    """
    apiVersion: sync.appuio.ch/v1alpha1
    kind: SyncConfig
    metadata:
      name: team-defaults
      namespace: mirra-system
    spec:
      namespaceSelector:
        labelSelector:
          matchLabels: {team: "true"}
      syncItems:
      - apiVersion: v1
        kind: ConfigMap
        metadata:
          name: team-info
        data:
          project: ${PROJECT_NAME}
    """
)




@pytest.fixture
def controller(kube_sandbox, kubectl):
    crds = subprocess.run([mirra_bin(), "crds"], capture_output=True, text=True, check=True)
    kubectl("apply", "-f", "-", input=crds.stdout)
    kubectl("apply", "-f", "-", input=SETUP)
    env = dict(kubectl.env)
    proc = subprocess.Popen(
        [
            mirra_bin(), "run", "--watch-namespace", "mirra-system",
            "--metrics-addr", "127.0.0.1:0", "--health-addr", "127.0.0.1:0",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        stop_process(proc)


def copy_in(kubectl, ns):
    p = kubectl("get", "configmap", "team-info", "-n", ns, "-o", "json", check=False)
    return json.loads(p.stdout) if p.returncode == 0 else None


def test_copies_follow_namespaces_and_status_is_reported(kubectl, controller):
    kubectl("apply", "-f", "-", input=SYNCCONFIG)

    cm = wait_for("the copy in team-a", lambda: copy_in(kubectl, "team-a"))
    assert cm["data"] == {"project": "team-a"}
    assert cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "mirra"
    assert cm["metadata"]["annotations"]["sync.appuio.ch/syncconfig"] == "mirra-system/team-defaults"
    assert copy_in(kubectl, "other") is None

    # A new matching namespace gets its copy.
    kubectl("label", "namespace", "other", "team=true")
    cm = wait_for("the copy in other", lambda: copy_in(kubectl, "other"))
    assert cm["data"] == {"project": "other"}

    # A copy edited by someone else is restored; a label they add survives.
    kubectl("patch", "configmap", "team-info", "-n", "team-a", "--type", "merge",
            "-p", '{"data": {"project": "edited"}, "metadata": {"labels": {"extra": "kept"}}}')
    cm = wait_for("the edit to be undone",
                  lambda: (c := copy_in(kubectl, "team-a")) and c["data"]["project"] == "team-a" and c)
    assert cm["metadata"]["labels"]["extra"] == "kept"

    # Relabelled out: mirra deletes the copy it owns there.
    kubectl("label", "namespace", "team-a", "team-")
    wait_for("the copy in team-a to be pruned", lambda: copy_in(kubectl, "team-a") is None)

    def ready():
        sc = json.loads(kubectl("get", "syncconfig", "team-defaults", "-n", "mirra-system",
                                "-o", "json").stdout)
        conds = {c["type"]: c["status"] for c in sc.get("status", {}).get("conditions", [])}
        return sc if conds.get("Ready") == "True" and sc["status"].get("synchronizedItemCount") == 1 else None

    sc = wait_for("status Ready with one synchronized item", ready)
    assert sc["status"]["observedGeneration"] == sc["metadata"]["generation"]
    # The printer columns kubectl shows come from the CRD.
    table = kubectl("get", "syncconfigs", "-n", "mirra-system").stdout
    assert "SYNCED" in table.upper() and "team-defaults" in table

    assert controller.poll() is None, controller.stderr.read()
