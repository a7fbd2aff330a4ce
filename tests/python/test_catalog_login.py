"""`mirra sync-catalog` with its Consul token from an auth-method login,
configured as consul-k8s's Helm chart configures it (CONSUL_LOGIN_*
variables): a consul-sandbox with ACLs on (default deny) whose `kubernetes`
auth method reviews the bearer token at the kube-sandbox, and whose binding
rule grants the sync policy to the `sync-catalog` ServiceAccount only.

Counts logins, logouts and tokens as the sandbox saw them, never time."""

import json
import os
import signal
import subprocess
import tempfile
import textwrap
import urllib.request

import pytest

from conftest import Server, mirra_bin, stop_process, wait_for

ROOT_TOKEN = "login-e2e-root"

# Any PEM certificate: Consul requires one; the sandbox reaches its
# Kubernetes host over plain HTTP and never uses it.
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


def sa_token(kube, name):
    """A ServiceAccount token from the TokenRequest API, as kubelet mounts it."""
    out = kube_post(kube, f"/api/v1/namespaces/default/serviceaccounts/{name}/token", {"spec": {}})
    return out["status"]["token"]


@pytest.fixture
def consul_acl_sandbox():
    server = Server([
        "sandbox", "consul", "--listen", "127.0.0.1:0",
        "--acl-default-policy", "deny",
        "--acl-initial-management-token", ROOT_TOKEN,
    ])
    try:
        yield server
    finally:
        server.stop()


def requests(consul, key):
    return call(consul.url + "/v1/sandbox/stats")["requests"].get(key, 0)


def login_tokens(consul):
    return [t for t in call(consul.url + "/v1/acl/tokens") if t.get("AuthMethod") == "k8s"]


def cart_addresses(consul):
    return sorted(
        n["ServiceAddress"] for n in call(consul.url + "/v1/catalog/service/cart")
    )


def test_sync_catalog_logs_in_logs_in_again_and_logs_out(kube_sandbox, consul_acl_sandbox, kubectl):
    consul = consul_acl_sandbox
    for sa in ["consul-auth", "sync-catalog"]:
        kube_post(kube_sandbox, "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": sa}})
    reviewer = sa_token(kube_sandbox, "consul-auth")
    call(consul.url + "/v1/acl/auth-method", "PUT", {
        "Name": "k8s", "Type": "kubernetes",
        "Config": {"Host": kube_sandbox.url, "CACert": TEST_CA, "ServiceAccountJWT": reviewer},
    })
    call(consul.url + "/v1/acl/policy", "PUT", {
        "Name": "sync-catalog",
        "Rules": 'node_prefix "" { policy = "write" }\nservice_prefix "" { policy = "write" }',
    })
    call(consul.url + "/v1/acl/binding-rule", "PUT", {
        "AuthMethod": "k8s", "BindType": "policy", "BindName": "sync-catalog",
        "Selector": "serviceaccount.name==sync-catalog",
    })

    with tempfile.TemporaryDirectory() as tmp:
        bearer = os.path.join(tmp, "token")
        with open(bearer, "w") as f:
            f.write(sa_token(kube_sandbox, "sync-catalog") + "\n")
        env = dict(kubectl.env)
        for name in list(env):
            if name.startswith("CONSUL_"):
                del env[name]
        env.update({
            "CONSUL_HTTP_ADDR": consul.url,
            "CONSUL_LOGIN_AUTH_METHOD": "k8s",
            "CONSUL_LOGIN_BEARER_TOKEN_FILE": bearer,
            "CONSUL_LOGIN_META": "component=sync-catalog,pod=default/sync-catalog-0",
            # Ignored next to a login, as in consul-k8s.
            "CONSUL_ACL_TOKEN": "not-a-token",
        })
        proc = subprocess.Popen(
            [
                mirra_bin(), "sync-catalog",
                "-allow-k8s-namespace=*",
                "-to-k8s=false",
                "-listen=127.0.0.1:0",
                "-metrics-port=0",
                "-log-json",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            kubectl("apply", "-f", "-", input=SERVICE)
            wait_for("cart in Consul", lambda: cart_addresses(consul) == ["10.2.0.1"])
            assert requests(consul, "POST /v1/acl/login") == 1
            tokens = login_tokens(consul)
            assert len(tokens) == 1, tokens
            assert tokens[0]["Description"] == (
                'token created via login: {"component":"sync-catalog","pod":"default/sync-catalog-0"}'
            )

            # The token disappears server-side: the next write is refused
            # with "ACL not found", mirra logs in once more and writes.
            call(consul.url + "/v1/acl/token/" + tokens[0]["AccessorID"], "DELETE")
            kubectl("patch", "endpointslice", "cart-1", "-n", "shop", "--type=json", "-p",
                    json.dumps([{"op": "add", "path": "/endpoints/-",
                                 "value": {"addresses": ["10.2.0.2"], "conditions": {"ready": True}}}]))
            wait_for("the second cart instance", lambda: cart_addresses(consul) == ["10.2.0.1", "10.2.0.2"])
            assert requests(consul, "POST /v1/acl/login") == 2
            second = login_tokens(consul)
            assert len(second) == 1 and second[0]["AccessorID"] != tokens[0]["AccessorID"], second
            assert proc.poll() is None
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                _, stderr = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                stop_process(proc)
                raise
        # A graceful stop logs the token out.
        assert proc.returncode == 0, stderr
        assert requests(consul, "POST /v1/acl/logout") == 1
        assert login_tokens(consul) == []
        # Neither the bearer token nor the Consul token reached the log.
        jwt = open(bearer).read().strip()
        assert jwt not in stderr
        assert second[0]["SecretID"] not in stderr
