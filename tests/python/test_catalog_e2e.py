"""`mirra sync-catalog` end to end, spelled as consul-k8s users spell it
(one-dash flags): a separate process between the kube-sandbox (driven with
kubectl) and the consul-sandbox (checked with the Python Consul client)."""

import json
import os
import socket
import subprocess
import textwrap
import time
import urllib.error
import urllib.request

import consul
import pytest

from conftest import mirra_bin, stop_process, wait_for

SERVICE = textwrap.dedent(
    """
    apiVersion: v1
    kind: Namespace
    metadata:
      name: shop
    ---
    apiVersion: v1
    kind: Service
    metadata:
      name: cart
      namespace: shop
      annotations:
        consul.hashicorp.com/service-tags: "blue,v2"
    spec:
      selector: {app: cart}
      ports:
      - name: http
        port: 80
        targetPort: 8080
    ---
    apiVersion: discovery.k8s.io/v1
    kind: EndpointSlice
    metadata:
      name: cart-1
      namespace: shop
      labels:
        kubernetes.io/service-name: cart
    addressType: IPv4
    ports:
    - name: http
      port: 8080
      protocol: TCP
    endpoints:
    - addresses: ["10.2.0.1"]
      conditions: {ready: true}
    - addresses: ["10.2.0.2"]
      conditions: {ready: false}
    """
)




@pytest.fixture
def sync_catalog(kube_sandbox, consul_sandbox, kubectl):
    proc = subprocess.Popen(
        [
            mirra_bin(), "sync-catalog",
            "-k8s-default-sync=true",
            "-allow-k8s-namespace=*",
            "-consul-node-name", "cluster-a",
            "-consul-k8s-tag=k8s",
            f"-http-addr={consul_sandbox.url}",
            "-listen=127.0.0.1:0",
            "-metrics-port=0",
            "-log-json",
        ],
        env=dict(kubectl.env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        stop_process(proc)


def test_services_reach_consul_and_leave_it(kubectl, consul_sandbox, sync_catalog):
    kubectl("apply", "-f", "-", input=SERVICE)
    host, port = consul_sandbox.addr.split(":")
    c = consul.Consul(host=host, port=int(port))

    def instances():
        _, nodes = c.catalog.service("cart")
        return nodes if len(nodes) == 2 else None

    nodes = wait_for("two cart instances", instances)
    assert {n["Node"] for n in nodes} == {"cluster-a"}
    assert all(n["ServiceTags"][:3] == ["k8s", "blue", "v2"] for n in nodes), nodes
    assert all(n["ServiceMeta"]["external-source"] == "kubernetes" for n in nodes)
    assert all(n["ServiceMeta"]["external-k8s-ns"] == "shop" for n in nodes)
    assert sorted(n["ServicePort"] for n in nodes) == [8080, 8080]

    # Readiness reaches Consul as the instances' check status.
    def checks():
        _, entries = c.health.service("cart")
        states = {
            e["Service"]["Address"]: [ch["Status"] for ch in e["Checks"] if ch.get("ServiceID")]
            for e in entries
        }
        return states if len(states) == 2 else None

    states = wait_for("health of both instances", checks)
    assert states["10.2.0.1"] == ["passing"], states
    assert states["10.2.0.2"] == ["critical"], states

    # Idle: no Raft apply while nothing changes (two verification-free seconds).
    def stats():
        with urllib.request.urlopen(consul_sandbox.url + "/v1/sandbox/stats", timeout=10) as r:
            return json.loads(r.read())

    before = stats()["raft_applies"]
    time.sleep(2)
    assert stats()["raft_applies"] == before

    # Deleting the Service removes its instances.
    kubectl("delete", "service", "cart", "-n", "shop")
    wait_for("cart to leave Consul", lambda: c.catalog.service("cart")[1] == [])
    assert sync_catalog.poll() is None, sync_catalog.stderr.read()


def _kubectl_for(server):
    env = dict(os.environ, KUBECONFIG=server.kubeconfig)
    env["KUBECACHEDIR"] = server.kubeconfig + ".cache"

    def run(*args, input=None):
        p = subprocess.run(
            ["kubectl", *args], env=env, input=input, capture_output=True, text=True, timeout=60
        )
        assert p.returncode == 0, f"kubectl {' '.join(args)} failed: {p.stderr}"
        return p

    run.env = env
    return run


def test_two_clusters_sharing_a_service_name_never_touch_each_other(
    start_kube_sandbox, consul_sandbox
):
    """Two clusters (two kube-sandboxes, two `mirra sync-catalog` processes
    with their own node names) sync the same Service name into one Consul;
    deleting it in one cluster removes only that cluster's instances."""
    clusters = {}
    procs = []
    try:
        for node, addr in (("cluster-a", "10.2.0.1"), ("cluster-b", "10.3.0.1")):
            kubectl = _kubectl_for(start_kube_sandbox())
            not_ready = '- addresses: ["10.2.0.2"]\n  conditions: {ready: false}\n'
            assert not_ready in SERVICE
            manifest = SERVICE.replace(not_ready, "").replace("10.2.0.1", addr)
            kubectl("apply", "-f", "-", input=manifest)
            procs.append(
                subprocess.Popen(
                    [
                        mirra_bin(), "sync-catalog",
                        "-allow-k8s-namespace=*",
                        "-to-k8s=false",
                        "-consul-node-name", node,
                        f"-http-addr={consul_sandbox.url}",
                        "-listen=127.0.0.1:0",
                        "-metrics-port=0",
                    ],
                    env=dict(kubectl.env),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            clusters[node] = (kubectl, addr)

        host, port = consul_sandbox.addr.split(":")
        c = consul.Consul(host=host, port=int(port))

        def by_node():
            _, nodes = c.catalog.service("cart")
            return {n["Node"]: n["ServiceAddress"] for n in nodes}

        wait_for(
            "both clusters' instances",
            lambda: by_node() == {"cluster-a": "10.2.0.1", "cluster-b": "10.3.0.1"},
        )
        def b_modify_index():
            _, nodes = c.catalog.service("cart")
            return [n["ModifyIndex"] for n in nodes if n["Node"] == "cluster-b"]

        before = b_modify_index()
        kubectl_a, _ = clusters["cluster-a"]
        kubectl_a("delete", "service", "cart", "-n", "shop")
        wait_for("cluster-a's instance to go", lambda: "cluster-a" not in by_node())
        # The other cluster's instance is still there and was not written,
        # after cluster-a's controller acted on the deletion.
        assert by_node() == {"cluster-b": "10.3.0.1"}
        assert b_modify_index() == before
        assert all(p.poll() is None for p in procs)
    finally:
        for p in procs:
            stop_process(p)


def _listening_addresses(port):
    """Local addresses of the IPv4 sockets listening on `port`, from
    /proc/net/tcp (state 0A is LISTEN)."""
    out = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            local, state = fields[1], fields[3]
            ip_hex, port_hex = local.split(":")
            if state == "0A" and int(port_hex, 16) == port:
                raw = bytes.fromhex(ip_hex)[::-1]
                out.add(".".join(str(b) for b in raw))
    return out


def test_metrics_bind_where_told(kube_sandbox, consul_sandbox, kubectl):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            mirra_bin(), "sync-catalog",
            "-consul-node-name", "cluster-m",
            f"-http-addr={consul_sandbox.url}",
            "-listen=127.0.0.1:0",
            f"-metrics-port={port}",
            "-metrics-address=127.0.0.1",
        ],
        env=dict(kubectl.env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        def scraped():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    return r.status == 200
            except OSError:
                return False

        wait_for("metrics on the loopback", scraped)
        # Bound to the loopback only, not to every interface.
        assert _listening_addresses(port) == {"127.0.0.1"}
    finally:
        stop_process(proc)

    # A bad address is refused at start with a clear message.
    bad = subprocess.run(
        [mirra_bin(), "sync-catalog", "-metrics-address=localhost"],
        env=dict(kubectl.env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0
    assert "invalid metrics address \"localhost\"" in bad.stderr, bad.stderr


def test_a_dry_run_lists_the_registrations_on_the_health_port_and_writes_nothing(
        kubectl, consul_sandbox):
    kubectl("apply", "-f", "-", input=SERVICE)

    def stats():
        with urllib.request.urlopen(consul_sandbox.url + "/v1/sandbox/stats", timeout=10) as r:
            return json.loads(r.read())

    before = stats()["raft_applies"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            mirra_bin(), "sync-catalog", "-dry-run",
            "-k8s-default-sync=true",
            "-allow-k8s-namespace=*",
            "-consul-node-name", "cluster-a",
            f"-http-addr={consul_sandbox.url}",
            f"-listen=127.0.0.1:{port}",
            "-metrics-port=0",
        ],
        env=dict(kubectl.env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        def planned():
            try:
                with urllib.request.urlopen(url + "/preview", timeout=10) as r:
                    doc = json.loads(r.read())
            except (urllib.error.URLError, ConnectionError):
                return None
            writes = doc["controllers"][0]["writes"]
            services = [w for w in writes if w["kind"] == "ConsulService"]
            return doc if len(services) == 2 else None

        doc = wait_for("two planned registrations", planned)
        assert doc["quiet"] is False
        writes = doc["controllers"][0]["writes"]
        kinds = sorted((w["kind"], w["operation"], w["reason"]) for w in writes)
        assert ("ConsulNode", "register", "missing") in kinds, kinds
        assert kinds.count(("ConsulService", "register", "new-instance")) == 2, kinds
        # Consul's own service would come back as an ExternalName Service.
        assert ("Service", "apply", "missing") in kinds, kinds
        with urllib.request.urlopen(url + "/preview?format=text", timeout=10) as r:
            table = r.read().decode()
        assert table.startswith("catalog: "), table
        assert "new-instance" in table

        host, cport = consul_sandbox.addr.split(":")
        c = consul.Consul(host=host, port=int(cport))
        _, nodes = c.catalog.service("cart")
        assert nodes == []
        assert stats()["raft_applies"] == before, "a preview never writes"
        services = json.loads(kubectl("get", "services", "-n", "default", "-o", "json").stdout)
        assert [s["metadata"]["name"] for s in services["items"]] == ["kubernetes"]
        assert proc.poll() is None, proc.stderr.read()
    finally:
        stop_process(proc)
