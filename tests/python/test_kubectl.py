"""kube-sandbox checked with kubectl, the way people use it."""

import json
import math
import os
import subprocess
import textwrap
import time
import urllib.request

import pytest

MANIFEST = textwrap.dedent(
    """
    apiVersion: v1
    kind: Namespace
    metadata:
      name: demo
      labels:
        team: blue
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: settings
      namespace: demo
      labels:
        app: web
        tier: front
    data:
      color: blue
    ---
    apiVersion: v1
    kind: Secret
    metadata:
      name: creds
      namespace: demo
      labels:
        app: db
    stringData:
      password: hunter2
    ---
    apiVersion: v1
    kind: Service
    metadata:
      name: web
      namespace: demo
    spec:
      selector:
        app: web
      ports:
      - port: 80
        targetPort: 8080
    ---
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: widgets.example.com
    spec:
      group: example.com
      scope: Namespaced
      names:
        plural: widgets
        singular: widget
        kind: Widget
        shortNames: [wd]
      versions:
      - name: v1
        served: true
        storage: true
        schema:
          openAPIV3Schema:
            type: object
            x-kubernetes-preserve-unknown-fields: true
    """
)

WIDGET = textwrap.dedent(
    """
    apiVersion: example.com/v1
    kind: Widget
    metadata:
      name: gear
      namespace: demo
    spec:
      size: 3
    """
)


def namespace(kubectl, name):
    # `apply` sends JSON (`kubectl create namespace` protobuf, covered below).
    kubectl("apply", "-f", "-", input=f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n")


def configmap(kubectl, ns, name):
    kubectl(
        "apply", "-f", "-",
        input=f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\n",
    )


def apply_manifest(kubectl):
    out = kubectl("apply", "-f", "-", input=MANIFEST).stdout
    assert "namespace/demo created" in out
    assert "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created" in out
    out = kubectl("apply", "-f", "-", input=WIDGET).stdout
    assert "widget.example.com/gear created" in out


def test_apply_multi_document_and_get(kubectl):
    apply_manifest(kubectl)
    cm = json.loads(kubectl("get", "configmap", "settings", "-n", "demo", "-o", "json").stdout)
    assert cm["data"] == {"color": "blue"}
    svc = json.loads(kubectl("get", "svc", "web", "-n", "demo", "-o", "json").stdout)
    assert svc["spec"]["clusterIP"].startswith("10.96.")
    assert svc["spec"]["type"] == "ClusterIP"
    w = json.loads(kubectl("get", "widgets", "gear", "-n", "demo", "-o", "json").stdout)
    assert w["spec"]["size"] == 3
    # Re-applying the same manifest changes nothing.
    out = kubectl("apply", "-f", "-", input=MANIFEST).stdout
    assert "configmap/settings unchanged" in out
    table = kubectl("get", "configmaps", "-n", "demo").stdout
    assert "settings" in table and "NAME" in table


def test_api_resources_lists_the_crd(kubectl):
    apply_manifest(kubectl)
    out = kubectl("api-resources").stdout
    assert any(line.split()[:1] == ["widgets"] for line in out.splitlines()), out
    assert "configmaps" in out


def sandbox_stats(server):
    with urllib.request.urlopen(server.url + "/sandbox/stats") as r:
        return json.load(r)


def test_chunked_get(kubectl, kube_sandbox):
    namespace(kubectl, "many")
    for i in range(7):
        configmap(kubectl, "many", f"c{i}")
    lists = lambda: sandbox_stats(kube_sandbox)["namespaces"]["many"].get("list configmaps", 0)
    before = lists()
    out = kubectl("get", "configmaps", "-n", "many", "--chunk-size=2", "-o", "name").stdout.split()
    assert sorted(out) == [f"configmap/c{i}" for i in range(7)]
    # Paging happened: 7 objects in pages of 2 take one list request each.
    assert lists() - before == math.ceil(7 / 2)


def test_set_based_label_selectors_and_label(kubectl):
    apply_manifest(kubectl)
    get = lambda sel: kubectl("get", "cm,secret", "-n", "demo", "-l", sel, "-o", "name").stdout.split()
    assert get("app in (web,db)") == ["configmap/settings", "secret/creds"]
    assert get("app notin (web),app") == ["secret/creds"]
    assert get("tier") == ["configmap/settings"]
    kubectl("label", "configmap", "settings", "-n", "demo", "tier=back", "--overwrite")
    assert get("tier=back") == ["configmap/settings"]
    kubectl("label", "configmap", "settings", "-n", "demo", "tier-")
    assert get("tier") == []


def test_patch_merge_and_json(kubectl):
    apply_manifest(kubectl)
    kubectl("patch", "configmap", "settings", "-n", "demo", "--type", "merge", "-p", '{"data":{"size":"L"}}')
    kubectl("patch", "configmap", "settings", "-n", "demo", "--type", "json", "-p", '[{"op":"remove","path":"/data/color"}]')
    cm = json.loads(kubectl("get", "configmap", "settings", "-n", "demo", "-o", "json").stdout)
    assert cm["data"] == {"size": "L"}
    bad = kubectl("patch", "configmap", "settings", "-n", "demo", "--type", "json", "-p", '[{"op":"remove","path":"/data/nope"}]', check=False)
    assert bad.returncode != 0


def test_server_side_apply_two_managers(kubectl):
    namespace(kubectl, "ssa")
    doc = lambda value: textwrap.dedent(
        f"""
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: shared
          namespace: ssa
        data:
          owner: {value}
        """
    )
    kubectl("apply", "--server-side", "--field-manager=alice", "-f", "-", input=doc("alice"))
    conflict = kubectl("apply", "--server-side", "--field-manager=bob", "-f", "-", input=doc("bob"), check=False)
    assert conflict.returncode != 0
    assert "conflict" in conflict.stderr.lower()
    kubectl("apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", "-", input=doc("bob"))
    cm = json.loads(kubectl("get", "configmap", "shared", "-n", "ssa", "-o", "json", "--show-managed-fields").stdout)
    assert cm["data"]["owner"] == "bob"
    managers = {m["manager"] for m in cm["metadata"]["managedFields"]}
    assert "bob" in managers


def test_delete_with_finalizer_waits(kubectl):
    namespace(kubectl, "fin")
    configmap(kubectl, "fin", "held")
    kubectl("patch", "configmap", "held", "-n", "fin", "--type", "merge", "-p", '{"metadata":{"finalizers":["example.com/hold"]}}')
    kubectl("delete", "configmap", "held", "-n", "fin", "--wait=false")
    cm = json.loads(kubectl("get", "configmap", "held", "-n", "fin", "-o", "json").stdout)
    assert "deletionTimestamp" in cm["metadata"]
    kubectl("patch", "configmap", "held", "-n", "fin", "--type", "merge", "-p", '{"metadata":{"finalizers":null}}')
    gone = kubectl("get", "configmap", "held", "-n", "fin", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr


def test_delete_namespace_takes_its_contents(kubectl):
    apply_manifest(kubectl)
    kubectl("delete", "namespace", "demo", "--timeout=30s")
    gone = kubectl("get", "namespace", "demo", check=False)
    assert gone.returncode != 0
    left = kubectl("get", "configmaps", "-A", "-o", "name").stdout
    assert "settings" not in left


def test_get_watch_sees_another_commands_change(kubectl):
    namespace(kubectl, "w")
    proc = subprocess.Popen(
        ["kubectl", "get", "configmaps", "-n", "w", "-w", "-o", "name"],
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1)
        configmap(kubectl, "w", "fresh")
        line = proc.stdout.readline().strip()
        assert line == "configmap/fresh"
    finally:
        proc.kill()
        proc.wait()


def test_protobuf_creates_work(kubectl):
    # `kubectl create` sends protobuf bodies and reads protobuf answers.
    out = kubectl("create", "namespace", "pb").stdout
    assert out.strip() == "namespace/pb created"
    out = kubectl("create", "configmap", "c", "-n", "pb", "--from-literal=k=v").stdout
    assert out.strip() == "configmap/c created"
    got = json.loads(kubectl("get", "configmap", "c", "-n", "pb", "-o", "json").stdout)
    assert got["data"] == {"k": "v"}


def test_patch_without_type_is_strategic(kubectl, kube_sandbox):
    namespace(kubectl, "smp")
    kubectl(
        "apply", "-f", "-",
        input=textwrap.dedent(
            """
            apiVersion: v1
            kind: Service
            metadata:
              name: multi
              namespace: smp
            spec:
              selector:
                app: web
              ports:
              - name: http
                port: 80
                targetPort: 8080
              - name: https
                port: 443
                targetPort: 8443
            """
        ),
    )
    ip = json.loads(kubectl("get", "svc", "multi", "-n", "smp", "-o", "json").stdout)["spec"]["clusterIP"]
    # No --type: kubectl sends a strategic merge patch, so the port named by
    # `port` is merged into and the other stays (a merge patch would leave
    # one unnamed port).
    kubectl("patch", "svc", "multi", "-n", "smp", "-p", '{"spec":{"ports":[{"port":443,"targetPort":9443}]}}')
    svc = json.loads(kubectl("get", "svc", "multi", "-n", "smp", "-o", "json").stdout)
    ports = [(p["name"], p["port"], p["targetPort"], p["protocol"]) for p in svc["spec"]["ports"]]
    assert ports == [("http", 80, 8080, "TCP"), ("https", 443, 9443, "TCP")]
    assert svc["spec"]["clusterIP"] == ip
    assert svc["spec"]["selector"] == {"app": "web"}
    assert sandbox_stats(kube_sandbox)["namespaces"]["smp"]["patch services"] == 1


TYPO = textwrap.dedent(
    """
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: typo
      namespace: fv
    data:
      k: v
    spec:
      replicas: 1
    """
)


def test_unknown_fields_are_refused_strictly_and_dropped_otherwise(kubectl):
    namespace(kubectl, "fv")
    # kubectl validates strictly by default: the server refuses the field.
    out = kubectl("apply", "-f", "-", input=TYPO, check=False)
    assert out.returncode != 0
    assert 'strict decoding error: unknown field "spec"' in out.stderr, out.stderr
    assert kubectl("get", "configmap", "typo", "-n", "fv", check=False).returncode != 0
    # --validate=warn: created without it, and kubectl shows the warning.
    out = kubectl("apply", "--validate=warn", "-f", "-", input=TYPO, check=False)
    assert out.returncode == 0, out.stderr
    assert 'unknown field "spec"' in out.stderr, out.stderr
    stored = json.loads(kubectl("get", "configmap", "typo", "-n", "fv", "-o", "json").stdout)
    assert "spec" not in stored
    assert stored["data"] == {"k": "v"}
    # Server-side apply fails on it whatever the validation.
    out = kubectl(
        "apply", "--server-side", "--validate=false", "-f", "-", input=TYPO, check=False
    )
    assert out.returncode != 0
    assert ".spec: field not declared in schema" in out.stderr, out.stderr



def test_rbac_over_https_with_kubectl(start_kube_sandbox):
    """`mirra sandbox kube --https --rbac`: kubectl trusts the written
    kubeconfig's CA, acts as its admin, and as a static token's user reads
    the server's 403 and 401 as it prints them."""
    server = start_kube_sandbox("--https", "--rbac", "--token", "dev-token=dev,developers")
    assert server.url.startswith("https://")
    env = dict(os.environ, KUBECONFIG=server.kubeconfig)
    env["KUBECACHEDIR"] = server.kubeconfig + ".cache"

    def kubectl(*args, token=None):
        extra = ["--token", token] if token else []
        return subprocess.run(["kubectl", *extra, *args], env=env,
                              capture_output=True, text=True, timeout=60)

    admin = kubectl("create", "configmap", "settings", "--from-literal=a=1")
    assert admin.returncode == 0, admin.stderr
    assert "clusterrolebinding.rbac.authorization.k8s.io/cluster-admin" in kubectl(
        "get", "clusterrolebindings", "-o", "name").stdout

    whoami = kubectl("auth", "whoami", token="dev-token")
    assert whoami.returncode == 0, whoami.stderr
    assert "dev" in whoami.stdout and "developers" in whoami.stdout, whoami.stdout
    assert kubectl("auth", "can-i", "list", "configmaps", token="dev-token").stdout.strip() == "no"
    assert kubectl("auth", "can-i", "list", "configmaps").stdout.strip() == "yes"

    denied = kubectl("get", "configmaps", token="dev-token")
    assert denied.returncode != 0
    assert ('Error from server (Forbidden): configmaps is forbidden: User "dev" cannot list '
            'resource "configmaps" in API group "" in the namespace "default"') in denied.stderr

    assert kubectl("create", "role", "cm-reader", "--verb=get,list",
                   "--resource=configmaps").returncode == 0
    assert kubectl("create", "rolebinding", "developers", "--role=cm-reader",
                   "--group=developers").returncode == 0
    assert kubectl("auth", "can-i", "list", "configmaps", token="dev-token").stdout.strip() == "yes"
    assert kubectl("auth", "can-i", "list", "configmaps", "-n", "kube-system",
                   token="dev-token").stdout.strip() == "no"
    allowed = kubectl("get", "configmaps", "-o", "name", token="dev-token")
    assert allowed.returncode == 0, allowed.stderr
    assert "configmap/settings" in allowed.stdout
    other = kubectl("get", "configmaps", "-n", "kube-system", token="dev-token")
    assert 'in the namespace "kube-system"' in other.stderr

    # Impersonation: the admin may act as anyone, dev may not.
    as_sa = kubectl("auth", "whoami", "--as", "system:serviceaccount:default:bot")
    assert as_sa.returncode == 0, as_sa.stderr
    assert "system:serviceaccount:default:bot" in as_sa.stdout
    assert "system:serviceaccounts:default" in as_sa.stdout
    refused = kubectl("get", "configmaps", "--as", "alice", token="dev-token")
    assert ('users "alice" is forbidden: User "dev" cannot impersonate resource "users" '
            'in API group "" at the cluster scope') in refused.stderr

    forged = kubectl("get", "configmaps", token="nobody-issued-this")
    assert forged.returncode != 0
    assert "Unauthorized" in forged.stderr
