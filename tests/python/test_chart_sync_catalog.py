"""mirra run exactly as consul-k8s's Helm chart runs its sync-catalog.

The command line and environment below are transcribed from the chart's
`templates/sync-catalog-deployment.yaml` and the helper it includes
(`consul.consulK8sConsulServerEnvVars` in `_helpers.tpl`), as stored at
hashicorp/consul-k8s commit 06c4ef850a6d8eef168f83d7196fb92556590159 (a
consul chart 1.x release; the flags and variables it passes are the same
from chart 1.0 on, ingress and admin partitions included), rendered for
the values named in each fixture. The container's `/bin/sh -ec` runs it,
with `consul-k8s-control-plane` a link to the mirra binary, against a
kube-sandbox and a consul-sandbox in Enterprise mode with ACLs on (default
deny) and the chart's component auth method.

Differences from a pod, each needed outside a cluster: `CONSUL_ADDRESSES`
and `CONSUL_HTTP_PORT` point at the sandbox instead of the
`consul-server` Service; `KUBECONFIG` replaces the in-cluster account;
`CONSUL_LOGIN_BEARER_TOKEN_FILE` names the file the kubelet would mount at
the ServiceAccount token path. With `global.tls.enabled=true` the
sandbox serves HTTPS beside plain HTTP (its `--https-listen`, Consul's
`ports.https`) with a server certificate from a CA the test makes, and
`CONSUL_CACERT_FILE` names that CA's file where the chart mounts the
`consul-ca-cert` Secret at `/consul/tls/ca/tls.crt`; the test's own
set-up calls use the plain port, mirra is given only the HTTPS one.

Counts come from the sandboxes' statistics, never time."""

import json
import os
import signal
import subprocess
import tempfile
import textwrap
import urllib.error
import urllib.request

import pytest

from conftest import HttpsServer, Server, mirra_bin, stop_process, wait_for, write_test_pki

ROOT_TOKEN = "chart-e2e-root"
RELEASE = "consul"  # helm install consul hashicorp/consul -n consul
AUTH_METHOD = "consul-k8s-component-auth-method"  # consul.fullname + suffix

# Any PEM certificate: Consul requires one for a kubernetes auth method; the
# sandbox reaches its Kubernetes host over plain HTTP and never uses it.
TEST_CA = """-----BEGIN CERTIFICATE-----
MIIBfzCCASWgAwIBAgIUaKdHuwQ8Hh7562B+0QbP7uVGXXYwCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKa3ViZXJuZXRlczAeFw0yNjEyMDIxMTM2NDBaFw0zNjExMjkx
MTM2NDBaMBUxEzARBgNVBAMMCmt1YmVybmV0ZXMwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAARKH67+tQImsWrgQFfCDWiJrctOk5ucIBX6T7X/yYa9yPIaVH7DdHZw
Xd2kwclVssEhRRmhZMakgsyT6fzGxwsfo1MwUTAdBgNVHQ4EFgQUHEEOnVm3DT/C
vYZVd5C1kkElAvQwHwYDVR0jBBgwFoAUHEEOnVm3DT/CvYZVd5C1kkElAvQwDwYD
VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiEA6JXW/kPZjP1jZxIy23bn
vSlOn+sZwrulPn/0DIwCosYCIEM+6beeaTslIiP7yIbKvwHz5so5C4DKa3rPUAla
ztm1
-----END CERTIFICATE-----
"""

# values.yaml (besides the chart defaults):
#   global: {logLevel: info, logJSON: false, datacenter: dc1, domain: consul,
#            consulAPITimeout: 5s, enableConsulNamespaces: true,
#            adminPartitions: {enabled: true, name: default},
#            acls: {manageSystemACLs: true}}
#   syncCatalog: {enabled: true, default: true, toConsul: true, toK8S: true,
#                 k8sAllowNamespaces: ["*"], k8sDenyNamespaces: [kube-system, kube-public],
#                 consulNodeName: k8s-sync, addK8SNamespaceSuffix: false,
#                 nodePortSyncType: ExternalOnly,
#                 consulNamespaces: {consulDestinationNamespace: default, mirroringK8S: false},
#                 ingress: {enabled: true, loadBalancerIPs: false}}
RENDERED_ALLOW_DENY = textwrap.dedent(
    """\
    consul-k8s-control-plane sync-catalog \\
      -log-level=info \\
      -log-json=false \\
      -k8s-default-sync=true \\
      -consul-domain=consul \\
      -allow-k8s-namespace="*" \\
      -deny-k8s-namespace="kube-system" \\
      -deny-k8s-namespace="kube-public" \\
      -k8s-write-namespace=${NAMESPACE} \\
      -node-port-sync-type=ExternalOnly \\
      -consul-node-name=k8s-sync \\
      -partition=default \\
      -enable-namespaces=true \\
      -consul-destination-namespace=default \\
      -consul-cross-namespace-acl-policy=cross-namespace-policy \\
      -enable-ingress=true \\
    """
)

# The same values with syncCatalog.k8sSourceNamespace: shop, k8sPrefix:
# "consul-", consulPrefix: "k8s-", toK8S: false, syncClusterIPServices: true.
RENDERED_SOURCE_NAMESPACE = textwrap.dedent(
    """\
    consul-k8s-control-plane sync-catalog \\
      -log-level=info \\
      -log-json=false \\
      -k8s-default-sync=true \\
      -to-k8s=false \\
      -consul-domain=consul \\
      -k8s-service-prefix="consul-" \\
      -k8s-source-namespace="shop" \\
      -allow-k8s-namespace="*" \\
      -deny-k8s-namespace="kube-system" \\
      -deny-k8s-namespace="kube-public" \\
      -k8s-write-namespace=${NAMESPACE} \\
      -node-port-sync-type=ExternalOnly \\
      -consul-node-name=k8s-sync \\
      -partition=default \\
      -consul-service-prefix="k8s-" \\
      -enable-namespaces=true \\
      -consul-destination-namespace=default \\
      -consul-cross-namespace-acl-policy=cross-namespace-policy \\
      -enable-ingress=true \\
    """
)

OBJECTS = textwrap.dedent(
    """
    apiVersion: v1
    kind: Namespace
    metadata: {name: consul}
    ---
    apiVersion: v1
    kind: Namespace
    metadata: {name: shop}
    ---
    apiVersion: v1
    kind: Namespace
    metadata: {name: other}
    ---
    apiVersion: v1
    kind: Service
    metadata: {name: cart, namespace: shop}
    spec:
      selector: {app: cart}
      ports: [{name: http, port: 80, targetPort: 8080}]
    ---
    apiVersion: discovery.k8s.io/v1
    kind: EndpointSlice
    metadata:
      name: cart-1
      namespace: shop
      labels: {kubernetes.io/service-name: cart}
    addressType: IPv4
    ports: [{name: http, port: 8080, protocol: TCP}]
    endpoints:
    - addresses: ["10.2.0.1"]
      conditions: {ready: true}
    ---
    apiVersion: v1
    kind: Service
    metadata: {name: search, namespace: other}
    spec:
      selector: {app: search}
      ports: [{name: http, port: 80, targetPort: 9200}]
    ---
    apiVersion: discovery.k8s.io/v1
    kind: EndpointSlice
    metadata:
      name: search-1
      namespace: other
      labels: {kubernetes.io/service-name: search}
    addressType: IPv4
    ports: [{name: http, port: 9200, protocol: TCP}]
    endpoints:
    - addresses: ["10.3.0.1"]
      conditions: {ready: true}
    ---
    apiVersion: v1
    kind: Service
    metadata: {name: dns, namespace: kube-system}
    spec:
      selector: {app: dns}
      ports: [{name: dns, port: 53, targetPort: 53, protocol: UDP}]
    ---
    apiVersion: discovery.k8s.io/v1
    kind: EndpointSlice
    metadata:
      name: dns-1
      namespace: kube-system
      labels: {kubernetes.io/service-name: dns}
    addressType: IPv4
    ports: [{name: dns, port: 53, protocol: UDP}]
    endpoints:
    - addresses: ["10.0.0.10"]
      conditions: {ready: true}
    """
)


def call(url, method="GET", body=None, token=ROOT_TOKEN):
    req = urllib.request.Request(
        url,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "X-Consul-Token": token},
        method=method,
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"null")


def kube_post(kube, path, body):
    req = urllib.request.Request(
        kube.url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def stats(consul):
    return call(consul.url + "/v1/sandbox/stats")


def requests(consul, key):
    return stats(consul)["requests"].get(key, 0)


def node_services(consul):
    """(name, address) of every instance on k8s-sync, in partition default."""
    out = call(consul.url + "/v1/catalog/node-services/k8s-sync?partition=default")
    if not out:
        return []
    return sorted((s["Service"], s["Address"]) for s in out.get("Services") or [])


def health_ready(port=8080):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/ready", timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


@pytest.fixture
def consul_enterprise_acl():
    server = Server([
        "sandbox", "consul", "--listen", "127.0.0.1:0", "--enterprise",
        "--acl-default-policy", "deny",
        "--acl-initial-management-token", ROOT_TOKEN,
    ])
    try:
        yield server
    finally:
        server.stop()


def set_up_acls(kube, consul):
    """What the chart's server-acl-init job creates for sync-catalog: the
    component auth method, a policy, and a binding rule for the
    `consul-sync-catalog` ServiceAccount (in the release namespace)."""
    for sa in ["consul-auth-method", f"{RELEASE}-sync-catalog"]:
        kube_post(kube, f"/api/v1/namespaces/{RELEASE}/serviceaccounts", {"metadata": {"name": sa}})
    reviewer = kube_post(
        kube, f"/api/v1/namespaces/{RELEASE}/serviceaccounts/consul-auth-method/token", {"spec": {}}
    )["status"]["token"]
    call(consul.url + "/v1/acl/auth-method", "PUT", {
        "Name": AUTH_METHOD, "Type": "kubernetes",
        "Config": {"Host": kube.url, "CACert": TEST_CA, "ServiceAccountJWT": reviewer},
    })
    call(consul.url + "/v1/acl/policy", "PUT", {
        "Name": "sync-catalog-policy",
        "Rules": 'node_prefix "" { policy = "write" }\nservice_prefix "" { policy = "write" }',
    })
    call(consul.url + "/v1/acl/binding-rule", "PUT", {
        "AuthMethod": AUTH_METHOD, "BindType": "policy", "BindName": "sync-catalog-policy",
        "Selector": f"serviceaccount.name=={RELEASE}-sync-catalog",
    })
    return kube_post(
        kube, f"/api/v1/namespaces/{RELEASE}/serviceaccounts/{RELEASE}-sync-catalog/token", {"spec": {}}
    )["status"]["token"]


def chart_env(consul, kubeconfig, bearer_file):
    """The container's environment as the chart renders it for the values
    above (order kept), plus the three out-of-cluster replacements."""
    host, port = consul.addr.rsplit(":", 1)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        # consul.consulK8sConsulServerEnvVars
        "CONSUL_ADDRESSES": host,  # chart: consul-server.consul.svc
        "CONSUL_GRPC_PORT": "8502",
        "CONSUL_HTTP_PORT": port,  # chart: "8500"
        "CONSUL_DATACENTER": "dc1",
        "CONSUL_API_TIMEOUT": "5s",
        "CONSUL_PARTITION": "default",
        "CONSUL_LOGIN_PARTITION": "default",
        # global.acls.manageSystemACLs
        "CONSUL_LOGIN_AUTH_METHOD": AUTH_METHOD,
        "CONSUL_LOGIN_DATACENTER": "dc1",
        # Defined before NAMESPACE in the pod spec, so Kubernetes leaves the
        # references as they are.
        "CONSUL_LOGIN_META": "component=sync-catalog,pod=$(NAMESPACE)/$(POD_NAME)",
        "NAMESPACE": RELEASE,
        # Out of cluster:
        "KUBECONFIG": kubeconfig,
        "CONSUL_LOGIN_BEARER_TOKEN_FILE": bearer_file,
    }
    return env


def run_chart_command(rendered, env, tmp):
    """Runs the container command (`/bin/sh -ec "<rendered>"`) with
    `consul-k8s-control-plane` on PATH as a link to mirra. The rendered
    text ends with a line continuation, as the template leaves it."""
    bindir = os.path.join(tmp, "bin")
    os.makedirs(bindir, exist_ok=True)
    link = os.path.join(bindir, "consul-k8s-control-plane")
    if not os.path.exists(link):
        os.symlink(os.path.abspath(mirra_bin()), link)
    env = dict(env, PATH=bindir + os.pathsep + env["PATH"])
    return subprocess.Popen(
        ["/bin/sh", "-ec", rendered],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # Its own process group: the shell does not pass SIGTERM on (in a
        # pod the kubelet's SIGTERM reaches the shell too), so the test
        # signals the group, as stopping the container's cgroup would.
        start_new_session=True,
    )


def metric(name, port=20300):
    """The value of an unlabelled sample on the chart's metrics port."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0


def port_free(port):
    import socket

    s = socket.socket()
    # As mirra's listener does: connections of an earlier run in TIME_WAIT
    # do not make the port taken.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("0.0.0.0", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def stop(proc):
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        _, stderr = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        stop_process(proc)
        raise
    return stderr


@pytest.mark.parametrize("rendered,want", [
    (RENDERED_ALLOW_DENY, [("cart", "10.2.0.1"), ("search", "10.3.0.1")]),
    (RENDERED_SOURCE_NAMESPACE, [("k8s-cart", "10.2.0.1")]),
], ids=["allow-deny", "k8s-source-namespace"])
def test_the_chart_command_syncs_logs_in_and_restarts_without_writes(
    kube_sandbox, consul_enterprise_acl, kubectl, rendered, want
):
    # The chart's probes and metrics use fixed ports (8080, 20300).
    if not (port_free(8080) and port_free(20300)):
        pytest.skip("port 8080 or 20300 is taken on this machine")
    consul = consul_enterprise_acl
    kubectl("apply", "-f", "-", input=OBJECTS)
    jwt = set_up_acls(kube_sandbox, consul)
    with tempfile.TemporaryDirectory() as tmp:
        bearer = os.path.join(tmp, "token")
        with open(bearer, "w") as f:
            f.write(jwt)
        env = chart_env(consul, kube_sandbox.kubeconfig, bearer)
        proc = run_chart_command(rendered, env, tmp)
        try:
            wait_for("the Services in Consul", lambda: node_services(consul) == want)
            wait_for("/health/ready 204", lambda: health_ready() == 204)
            assert requests(consul, "POST /v1/acl/login") == 1
            assert proc.poll() is None
        finally:
            stderr = stop(proc)
        # The shell dies of the signal; mirra's own graceful stop shows in
        # its logout.
        assert proc.returncode in (0, -signal.SIGTERM), stderr
        assert "logged out of Consul" in stderr
        assert requests(consul, "POST /v1/acl/logout") == 1
        assert jwt not in stderr

        # The same command again: everything is in step, so no catalog
        # write is sent at all (only the login and the logout).
        writes = ["PUT /v1/txn", "PUT /v1/catalog/register", "PUT /v1/catalog/deregister"]
        before = {w: requests(consul, w) for w in writes}
        proc = run_chart_command(rendered, env, tmp)
        try:
            wait_for("/health/ready 204 after the restart", lambda: health_ready() == 204)
            # The first pass planned every instance and found it in step.
            wait_for("the first pass", lambda: metric("mirra_catalog_writes_avoided_total") >= len(want))
            assert node_services(consul) == want
        finally:
            stderr = stop(proc)
        assert proc.returncode in (0, -signal.SIGTERM), stderr
        assert {w: requests(consul, w) for w in writes} == before
        assert requests(consul, "POST /v1/acl/login") == 2
        assert requests(consul, "POST /v1/acl/logout") == 2


def test_health_ready_fails_while_the_login_fails(kube_sandbox, consul_enterprise_acl, kubectl):
    if not (port_free(8080) and port_free(20300)):
        pytest.skip("port 8080 or 20300 is taken on this machine")
    consul = consul_enterprise_acl
    kubectl("apply", "-f", "-", input=OBJECTS)
    set_up_acls(kube_sandbox, consul)
    with tempfile.TemporaryDirectory() as tmp:
        bearer = os.path.join(tmp, "token")
        with open(bearer, "w") as f:
            f.write("not-a-service-account-token")
        env = chart_env(consul, kube_sandbox.kubeconfig, bearer)
        proc = run_chart_command(RENDERED_ALLOW_DENY, env, tmp)
        try:
            wait_for("a refused login", lambda: requests(consul, "POST /v1/acl/login") >= 2)
            assert health_ready() == 500
            assert node_services(consul) == []
            assert proc.poll() is None
        finally:
            stderr = stop(proc)
        assert AUTH_METHOD in stderr
        assert "not-a-service-account-token" not in stderr


# The allow/deny values with syncCatalog.consulNamespaces: {mirroringK8S:
# true, mirroringK8SPrefix: "k8s-"} (consulDestinationNamespace keeps its
# chart default, "default", and is rendered too).
RENDERED_MIRRORING = textwrap.dedent(
    """\
    consul-k8s-control-plane sync-catalog \\
      -log-level=info \\
      -log-json=false \\
      -k8s-default-sync=true \\
      -consul-domain=consul \\
      -allow-k8s-namespace="*" \\
      -deny-k8s-namespace="kube-system" \\
      -deny-k8s-namespace="kube-public" \\
      -k8s-write-namespace=${NAMESPACE} \\
      -node-port-sync-type=ExternalOnly \\
      -consul-node-name=k8s-sync \\
      -partition=default \\
      -enable-namespaces=true \\
      -consul-destination-namespace=default \\
      -enable-k8s-namespace-mirroring=true \\
      -k8s-namespace-mirroring-prefix=k8s- \\
      -consul-cross-namespace-acl-policy=cross-namespace-policy \\
      -enable-ingress=true \\
    """
)

# What server-acl-init makes for these values (its sync and cross-namespace
# rule templates, control-plane/subcommand/server-acl-init/rules.go at the
# commit above, rendered with partitions on, partition "default",
# mirroring with prefix "k8s-", node k8s-sync).
SYNC_RULES_MIRRORING = textwrap.dedent(
    """\
    node "k8s-sync" {
      policy = "write"
    }
    partition "default" {
      mesh = "write"
      acl = "write"
      namespace_prefix "k8s-" {
        policy = "write"
        node_prefix "" {
          policy = "read"
        }
        service_prefix "" {
          policy = "write"
        }
      }
    }
    """
)
CROSS_NAMESPACE_RULES = textwrap.dedent(
    """\
    partition "default" {
      namespace_prefix "" {
        service_prefix "" {
          policy = "read"
        }
        node_prefix "" {
          policy = "read"
        }
      }
    }
    """
)


def node_services_all_namespaces(consul):
    """(name, address, namespace) of every instance on k8s-sync."""
    out = call(consul.url + "/v1/catalog/node-services/k8s-sync?partition=default&ns=*")
    if not out:
        return []
    return sorted((s["Service"], s["Address"], s.get("Namespace")) for s in out.get("Services") or [])


def test_the_chart_command_mirrors_namespaces_with_the_charts_acl_rules(
    kube_sandbox, consul_enterprise_acl, kubectl
):
    """Namespaces mirrored with a prefix, ACLs on with the exact policy the
    chart's server-acl-init job grants, login through the auth method: the
    namespaces are created on demand with the cross-namespace policy as
    their default, and a restart writes nothing."""
    if not (port_free(8080) and port_free(20300)):
        pytest.skip("port 8080 or 20300 is taken on this machine")
    consul = consul_enterprise_acl
    kubectl("apply", "-f", "-", input=OBJECTS)
    jwt = set_up_acls(kube_sandbox, consul)
    # Replace the broad test policy with the chart's own rules.
    policy = call(consul.url + "/v1/acl/policy/name/sync-catalog-policy")
    call(consul.url + f"/v1/acl/policy/{policy['ID']}", "PUT",
         {"Name": "sync-catalog-policy", "Rules": SYNC_RULES_MIRRORING})
    call(consul.url + "/v1/acl/policy", "PUT",
         {"Name": "cross-namespace-policy", "Rules": CROSS_NAMESPACE_RULES})
    want = [("cart", "10.2.0.1", "k8s-shop"), ("search", "10.3.0.1", "k8s-other")]
    with tempfile.TemporaryDirectory() as tmp:
        bearer = os.path.join(tmp, "token")
        with open(bearer, "w") as f:
            f.write(jwt)
        env = chart_env(consul, kube_sandbox.kubeconfig, bearer)
        proc = run_chart_command(RENDERED_MIRRORING, env, tmp)
        try:
            wait_for("the Services in their mirrored namespaces",
                     lambda: node_services_all_namespaces(consul) == want)
            wait_for("/health/ready 204", lambda: health_ready() == 204)
            assert proc.poll() is None
        except AssertionError as e:
            raise AssertionError(f"{e}\nmirra's log:\n{stop(proc)[-4000:]}") from e
        else:
            stderr = stop(proc)
        assert proc.returncode in (0, -signal.SIGTERM), stderr
        for ns in ["k8s-shop", "k8s-other"]:
            got = call(consul.url + f"/v1/namespace/{ns}?partition=default")
            defaults = [p["Name"] for p in (got.get("ACLs") or {}).get("PolicyDefaults") or []]
            assert defaults == ["cross-namespace-policy"], got
        # Denied namespace: nothing of kube-system, in any namespace.
        assert all(name != "dns" for name, _, _ in node_services_all_namespaces(consul))
        assert requests(consul, "PUT /v1/namespace") == 2

        writes = ["PUT /v1/txn", "PUT /v1/catalog/register", "PUT /v1/catalog/deregister",
                  "PUT /v1/namespace"]
        before = {w: requests(consul, w) for w in writes}
        proc = run_chart_command(RENDERED_MIRRORING, env, tmp)
        try:
            wait_for("/health/ready 204 after the restart", lambda: health_ready() == 204)
            wait_for("the first pass", lambda: metric("mirra_catalog_writes_avoided_total") >= len(want))
            assert node_services_all_namespaces(consul) == want
        finally:
            stderr = stop(proc)
        assert proc.returncode in (0, -signal.SIGTERM), stderr
        assert {w: requests(consul, w) for w in writes} == before
        assert jwt not in stderr


# --- global.tls.enabled=true ---------------------------------------------
#
# The allow/deny values plus `global: {tls: {enabled: true}}` (no
# externalServers, no Vault, no HCP): the command is the allow/deny one
# unchanged (sync-catalog-deployment.yaml passes no TLS flag), the pod
# mounts the CA Secret at /consul/tls/ca, and consul.consulK8sConsulServerEnvVars
# renders CONSUL_HTTP_PORT "8501" and, after the partition variables,
# CONSUL_USE_TLS "true" and CONSUL_CACERT_FILE "/consul/tls/ca/tls.crt".
# CONSUL_TLS_SERVER_NAME is rendered only with
# externalServers.tlsServerName or global.cloud.enabled, so not here: the
# server certificate is checked against the address itself.


@pytest.fixture
def consul_enterprise_acl_https(tmp_path):
    # The names the chart's tls-init puts in a server certificate, and the
    # loopback address the test connects to.
    pki = write_test_pki(
        str(tmp_path),
        server_names=("server.dc1.consul", f"{RELEASE}-server.{RELEASE}.svc", "localhost"),
    )
    server = HttpsServer([
        "sandbox", "consul", "--listen", "127.0.0.1:0", "--enterprise",
        "--acl-default-policy", "deny",
        "--acl-initial-management-token", ROOT_TOKEN,
        "--https-listen", "127.0.0.1:0",
        "--tls-cert-file", pki["cert"], "--tls-key-file", pki["key"],
    ])
    server.pki = pki
    try:
        yield server
    finally:
        server.stop()


def chart_env_tls(consul, kubeconfig, bearer_file):
    """chart_env with global.tls.enabled=true: the HTTPS port, and the TLS
    variables where the helper renders them (right after the partition
    ones)."""
    _, https_port = consul.https_addr.rsplit(":", 1)
    env = {}
    for key, value in chart_env(consul, kubeconfig, bearer_file).items():
        if key == "CONSUL_HTTP_PORT":
            value = https_port  # chart: "8501"
        env[key] = value
        if key == "CONSUL_LOGIN_PARTITION":
            env["CONSUL_USE_TLS"] = "true"
            env["CONSUL_CACERT_FILE"] = consul.pki["ca"]  # chart: /consul/tls/ca/tls.crt
    return env


def test_the_chart_command_with_tls_syncs_logs_in_and_restarts_without_writes(
    kube_sandbox, consul_enterprise_acl_https, kubectl
):
    if not (port_free(8080) and port_free(20300)):
        pytest.skip("port 8080 or 20300 is taken on this machine")
    consul = consul_enterprise_acl_https
    want = [("cart", "10.2.0.1"), ("search", "10.3.0.1")]
    kubectl("apply", "-f", "-", input=OBJECTS)
    jwt = set_up_acls(kube_sandbox, consul)
    with tempfile.TemporaryDirectory() as tmp:
        bearer = os.path.join(tmp, "token")
        with open(bearer, "w") as f:
            f.write(jwt)
        env = chart_env_tls(consul, kube_sandbox.kubeconfig, bearer)
        # mirra is told of the HTTPS port only: whatever reaches the
        # sandbox from it came through a TLS handshake.
        _, plain_port = consul.addr.rsplit(":", 1)
        assert plain_port not in env.values()
        before_tls = stats(consul)
        proc = run_chart_command(RENDERED_ALLOW_DENY, env, tmp)
        try:
            wait_for("the Services in Consul", lambda: node_services(consul) == want)
            wait_for("/health/ready 204", lambda: health_ready() == 204)
            assert requests(consul, "POST /v1/acl/login") == 1
            assert proc.poll() is None
        except AssertionError as e:
            raise AssertionError(f"{e}\nmirra's log:\n{stop(proc)[-4000:]}") from e
        else:
            stderr = stop(proc)
        assert proc.returncode in (0, -signal.SIGTERM), stderr
        assert "logged out of Consul" in stderr
        assert requests(consul, "POST /v1/acl/logout") == 1
        assert jwt not in stderr
        after = stats(consul)
        assert after["tls_handshakes"] > before_tls["tls_handshakes"]
        assert after["tls_handshakes_failed"] == 0

        # Restart: the same command, in step, so no catalog write at all.
        writes = ["PUT /v1/txn", "PUT /v1/catalog/register", "PUT /v1/catalog/deregister"]
        before = {w: requests(consul, w) for w in writes}
        applies = stats(consul)["raft_applies"]
        proc = run_chart_command(RENDERED_ALLOW_DENY, env, tmp)
        try:
            wait_for("/health/ready 204 after the restart", lambda: health_ready() == 204)
            wait_for("the first pass", lambda: metric("mirra_catalog_writes_avoided_total") >= len(want))
            assert node_services(consul) == want
        finally:
            stderr = stop(proc)
        assert proc.returncode in (0, -signal.SIGTERM), stderr
        assert {w: requests(consul, w) for w in writes} == before
        # Only the login and the logout were applied.
        assert stats(consul)["raft_applies"] == applies + 2
        assert requests(consul, "POST /v1/acl/login") == 2
        assert requests(consul, "POST /v1/acl/logout") == 2
        assert stats(consul)["tls_handshakes_failed"] == 0


# --- global.adminPartitions.name=team --------------------------------------
#
# A cluster joined to Consul as admin partition `team`: the allow/deny
# values with `global.adminPartitions: {enabled: true, name: team}`, and,
# as the chart wants for a partition whose servers run elsewhere,
# `externalServers: {enabled: true, hosts: [<servers>], httpsPort: 8500}`
# (TLS off here, so the "https" port is the plain one). The helper then
# renders CONSUL_ADDRESSES from the first host, CONSUL_HTTP_PORT from
# httpsPort, CONSUL_PARTITION and CONSUL_LOGIN_PARTITION "team"; the
# command passes -partition=team.
RENDERED_PARTITION = textwrap.dedent(
    """\
    consul-k8s-control-plane sync-catalog \\
      -log-level=info \\
      -log-json=false \\
      -k8s-default-sync=true \\
      -consul-domain=consul \\
      -allow-k8s-namespace="*" \\
      -deny-k8s-namespace="kube-system" \\
      -deny-k8s-namespace="kube-public" \\
      -k8s-write-namespace=${NAMESPACE} \\
      -node-port-sync-type=ExternalOnly \\
      -consul-node-name=k8s-sync \\
      -partition=team \\
      -enable-namespaces=true \\
      -consul-destination-namespace=default \\
      -consul-cross-namespace-acl-policy=cross-namespace-policy \\
      -enable-ingress=true \\
    """
)

# server-acl-init run with -partition=team: its client addresses partition
# `team`, so the component auth method, the policies and the binding rule
# are made there (rules.go's sync and cross-namespace templates, rendered
# with partitions on, partition "team", destination namespace "default").
SYNC_RULES_TEAM = textwrap.dedent(
    """\
    node "k8s-sync" {
      policy = "write"
    }
    partition "team" {
      mesh = "write"
      acl = "write"
      namespace "default" {
        policy = "write"
        node_prefix "" {
          policy = "read"
        }
        service_prefix "" {
          policy = "write"
        }
      }
    }
    """
)
CROSS_NAMESPACE_RULES_TEAM = CROSS_NAMESPACE_RULES.replace('partition "default"', 'partition "team"')


def set_up_partition_acls(kube, consul, partition):
    """The partition (as the chart's partition-init job makes it with the
    root token), then what server-acl-init makes in it for sync-catalog."""
    call(consul.url + "/v1/partition", "PUT", {"Name": partition})
    for sa in ["consul-auth-method", f"{RELEASE}-sync-catalog"]:
        kube_post(kube, f"/api/v1/namespaces/{RELEASE}/serviceaccounts", {"metadata": {"name": sa}})
    reviewer = kube_post(
        kube, f"/api/v1/namespaces/{RELEASE}/serviceaccounts/consul-auth-method/token", {"spec": {}}
    )["status"]["token"]
    q = f"?partition={partition}"
    call(consul.url + "/v1/acl/auth-method" + q, "PUT", {
        "Name": AUTH_METHOD, "Type": "kubernetes",
        "Config": {"Host": kube.url, "CACert": TEST_CA, "ServiceAccountJWT": reviewer},
    })
    call(consul.url + "/v1/acl/policy" + q, "PUT",
         {"Name": "sync-catalog-policy", "Rules": SYNC_RULES_TEAM})
    call(consul.url + "/v1/acl/policy" + q, "PUT",
         {"Name": "cross-namespace-policy", "Rules": CROSS_NAMESPACE_RULES_TEAM})
    call(consul.url + "/v1/acl/binding-rule" + q, "PUT", {
        "AuthMethod": AUTH_METHOD, "BindType": "policy", "BindName": "sync-catalog-policy",
        "Selector": f"serviceaccount.name=={RELEASE}-sync-catalog",
    })
    return kube_post(
        kube, f"/api/v1/namespaces/{RELEASE}/serviceaccounts/{RELEASE}-sync-catalog/token", {"spec": {}}
    )["status"]["token"]


def node_services_in(consul, partition):
    out = call(consul.url + f"/v1/catalog/node-services/k8s-sync?partition={partition}&ns=*")
    if not out:
        return []
    return sorted((s["Service"], s["Address"], s.get("Partition")) for s in out.get("Services") or [])


def test_the_chart_command_in_a_non_default_partition(kube_sandbox, consul_enterprise_acl, kubectl):
    """-partition=team with the auth method, policy and binding rule in
    partition `team`: the login is made there, every Service lands in
    `team`, nothing in `default`, and a restart writes nothing."""
    if not (port_free(8080) and port_free(20300)):
        pytest.skip("port 8080 or 20300 is taken on this machine")
    consul = consul_enterprise_acl
    kubectl("apply", "-f", "-", input=OBJECTS)
    jwt = set_up_partition_acls(kube_sandbox, consul, "team")
    want = [("cart", "10.2.0.1", "team"), ("search", "10.3.0.1", "team")]
    with tempfile.TemporaryDirectory() as tmp:
        bearer = os.path.join(tmp, "token")
        with open(bearer, "w") as f:
            f.write(jwt)
        env = chart_env(consul, kube_sandbox.kubeconfig, bearer)
        env["CONSUL_PARTITION"] = "team"
        env["CONSUL_LOGIN_PARTITION"] = "team"
        proc = run_chart_command(RENDERED_PARTITION, env, tmp)
        try:
            wait_for("the Services in partition team", lambda: node_services_in(consul, "team") == want)
            wait_for("/health/ready 204", lambda: health_ready() == 204)
            assert requests(consul, "POST /v1/acl/login") == 1
            assert proc.poll() is None
        except AssertionError as e:
            raise AssertionError(f"{e}\nmirra's log:\n{stop(proc)[-4000:]}") from e
        else:
            stderr = stop(proc)
        assert proc.returncode in (0, -signal.SIGTERM), stderr
        assert "logged out of Consul" in stderr
        assert jwt not in stderr
        # Nothing in `default`: no k8s-sync node, no synced service.
        assert node_services_in(consul, "default") == []
        default_services = call(consul.url + "/v1/catalog/services?partition=default&ns=*")
        assert sorted(default_services) == ["consul"], default_services

        writes = ["PUT /v1/txn", "PUT /v1/catalog/register", "PUT /v1/catalog/deregister",
                  "PUT /v1/namespace"]
        before = {w: requests(consul, w) for w in writes}
        applies = stats(consul)["raft_applies"]
        proc = run_chart_command(RENDERED_PARTITION, env, tmp)
        try:
            wait_for("/health/ready 204 after the restart", lambda: health_ready() == 204)
            wait_for("the first pass", lambda: metric("mirra_catalog_writes_avoided_total") >= len(want))
            assert node_services_in(consul, "team") == want
        finally:
            stderr = stop(proc)
        assert proc.returncode in (0, -signal.SIGTERM), stderr
        assert {w: requests(consul, w) for w in writes} == before
        # Only the login and the logout were applied.
        assert stats(consul)["raft_applies"] == applies + 2
        assert requests(consul, "POST /v1/acl/logout") == 2
