"""`mirra run` end to end: the mirror controller as a separate process
against the kube-sandbox, driven and checked with kubectl only."""

import json
import re
import socket
import subprocess
import textwrap
import urllib.error
import urllib.request

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


def fetch(url):
    """The body at `url`, or None while nothing answers there yet."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return None


def test_dry_run_previews_on_the_health_port_and_writes_nothing(kubectl, kube_sandbox):
    crds = subprocess.run([mirra_bin(), "crds"], capture_output=True, text=True, check=True)
    kubectl("apply", "-f", "-", input=crds.stdout)
    kubectl("apply", "-f", "-", input=SETUP)
    # A copy as espejo leaves it: no mirra marks, out of date.
    kubectl("create", "configmap", "team-info", "-n", "team-a", "--from-literal=project=old")
    kubectl("apply", "-f", "-", input=SYNCCONFIG)
    before = json.loads(kubectl("get", "configmap", "team-info", "-n", "team-a", "-o", "json").stdout)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [mirra_bin(), "run", "--dry-run", "--watch-namespace", "mirra-system",
         "--metrics-addr", f"127.0.0.1:{port}", "--health-addr", f"127.0.0.1:{port}"],
        env=dict(kubectl.env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        def planned():
            body = fetch(url + "/preview")
            if body is None:
                return None
            doc = json.loads(body)
            writes = doc["controllers"][0]["writes"]
            return doc if any(w["kind"] == "SyncConfig" for w in writes) else None

        doc = wait_for("the preview", planned)
        assert doc["dryRun"] is True and doc["quiet"] is False
        writes = {(w["kind"], w["namespace"], w["name"], w["operation"], w["reason"])
                  for w in doc["controllers"][0]["writes"]}
        assert writes == {
            ("ConfigMap", "team-a", "team-info", "apply", "create-or-adopt"),
            ("SyncConfig", "mirra-system", "team-defaults", "patch-status", "status"),
        }

        table = fetch(url + "/preview?format=text")
        assert table.startswith("mirror: 2 planned write(s)\n"), table
        assert "create-or-adopt" in table and "team-info" in table

        metrics = fetch(url + "/metrics")
        assert re.search(
            r'mirra_dry_run_planned_writes\{controller="mirror",kind="ConfigMap",'
            r'operation="apply",reason="create-or-adopt"\} 1', metrics), metrics

        # Nothing was written: the copy is as it was, the SyncConfig has
        # no status, and no namespace got a copy or an Event.
        after = json.loads(kubectl("get", "configmap", "team-info", "-n", "team-a", "-o", "json").stdout)
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        sc = json.loads(kubectl("get", "syncconfig", "team-defaults", "-n", "mirra-system", "-o", "json").stdout)
        assert "status" not in sc
        events = json.loads(kubectl("get", "events", "-A", "-o", "json").stdout)
        assert events["items"] == []
        assert proc.poll() is None, proc.stderr.read()
    finally:
        stop_process(proc)
