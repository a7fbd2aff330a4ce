"""`mirra dev` as the README promises: both sandboxes and both controllers,
driven with kubectl and the examples/ directory, checked with kubectl and
the Python Consul client."""

import base64
import json
import os
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.request

import consul
import pytest

from conftest import ROOT, mirra_bin, stop_process, wait_for




# A shell set up for some real Consul: a token, a login through an auth
# method, a namespace. `mirra dev` talks to its own embedded Consul and must
# not pick any of these up.
FOREIGN_CONSUL_ENV = {
    "CONSUL_HTTP_TOKEN": "a-token-of-another-consul",
    "CONSUL_LOGIN_AUTH_METHOD": "some-auth-method",
    "CONSUL_LOGIN_BEARER_TOKEN_FILE": "/nonexistent/token",
    "CONSUL_NAMESPACE": "team-ns",
    "CONSUL_HTTP_SSL": "true",
}


@pytest.fixture(params=["clean shell", "shell set up for another Consul"])
def dev(request):
    extra = FOREIGN_CONSUL_ENV if request.param != "clean shell" else {}
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = os.path.join(tmp, "kubeconfig")
        proc = subprocess.Popen(
            [mirra_bin(), "dev", "--kubeconfig-out", kubeconfig],
            env=dict(os.environ, **extra),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            urls = {}
            for _ in range(3):
                line = proc.stdout.readline().strip()
                for what in ("kubernetes api", "consul api", "metrics and health"):
                    prefix = f"{what} listening on " if what != "metrics and health" else f"{what} on "
                    if line.startswith(prefix):
                        urls[what] = line[len(prefix):]
            assert set(urls) == {"kubernetes api", "consul api", "metrics and health"}, urls
            env = dict(os.environ, KUBECONFIG=kubeconfig, KUBECACHEDIR=os.path.join(tmp, "cache"))
            yield proc, urls, env
        finally:
            stop_process(proc)


def test_dev_runs_both_jobs(dev):
    proc, urls, env = dev

    def kubectl(*args, check=True):
        p = subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=60)
        if check and p.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {p.stderr}")
        return p

    kubectl("apply", "-f", str(ROOT / "examples"))

    def copies():
        p = kubectl("get", "configmaps", "-A", "-l", "app.kubernetes.io/managed-by=mirra", "-o", "json")
        items = json.loads(p.stdout)["items"]
        found = sorted(i["metadata"]["namespace"] for i in items)
        return found if found == ["team-a", "team-b"] else None

    wait_for("copies in team-a and team-b", copies)

    host, port = urls["consul api"].removeprefix("http://").split(":")
    c = consul.Consul(host=host, port=int(port))

    def web_instances():
        _, nodes = c.catalog.service("web")
        return nodes if len(nodes) == 2 else None

    nodes = wait_for("two web instances in Consul", web_instances)
    assert {n["Node"] for n in nodes} == {"k8s-sync"}
    assert sorted(n["ServiceAddress"] for n in nodes) == ["10.1.0.11", "10.1.0.12"]
    assert all("k8s" in n["ServiceTags"] for n in nodes)

    # Consul's own service comes back as an ExternalName Service.
    def external_name():
        p = kubectl("get", "service", "consul", "-n", "default", "-o", "json", check=False)
        return json.loads(p.stdout) if p.returncode == 0 else None

    svc = wait_for("the consul ExternalName Service", external_name)
    assert svc["spec"]["type"] == "ExternalName"
    assert svc["spec"]["externalName"] == "consul.service.consul"

    def ready():
        try:
            with urllib.request.urlopen(urls["metrics and health"] + "/readyz", timeout=10) as r:
                return r.status == 200
        except urllib.error.HTTPError:
            return False

    wait_for("both controllers ready", ready)
    with urllib.request.urlopen(urls["metrics and health"] + "/metrics", timeout=10) as r:
        metrics = r.read().decode()
    assert "mirra_writes_total" in metrics
    assert "mirra_catalog_" in metrics
    assert proc.poll() is None


def test_dev_serves_https_with_rbac_as_a_cluster_does(dev):
    """The embedded API server authenticates and authorizes: kubectl uses
    the admin token of the written kubeconfig over HTTPS (trusting its CA),
    an anonymous caller is refused, and an impersonated user without a
    binding is refused with the server's wording."""
    proc, urls, env = dev
    assert urls["kubernetes api"].startswith("https://"), urls

    def kubectl(*args):
        return subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=60)

    who = kubectl("auth", "whoami", "-o", "json")
    assert who.returncode == 0, who.stderr
    info = json.loads(who.stdout)["status"]["userInfo"]
    assert info["username"] == "admin" and "system:masters" in info["groups"], info
    assert kubectl("auth", "can-i", "create", "syncconfigs.sync.appuio.ch").stdout.strip() == "yes"

    denied = kubectl("get", "configmaps", "-n", "default", "--as", "alice")
    assert denied.returncode != 0
    assert 'User "alice" cannot list resource "configmaps" in API group "" in the namespace "default"' \
        in denied.stderr, denied.stderr

    # No token: anonymous, and RBAC gives anonymous nothing of the API.
    kc = json.loads(kubectl("config", "view", "--raw", "-o", "json").stdout)
    ca = base64.b64decode(kc["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
    context = ssl.create_default_context(cadata=ca)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urls["kubernetes api"] + "/api/v1/namespaces", timeout=10, context=context)
    assert refused.value.code == 403
    body = json.loads(refused.value.read())
    assert body["reason"] == "Forbidden" and "system:anonymous" in body["message"], body
    assert proc.poll() is None


def test_dev_examples_apply_the_bundled_examples_from_any_directory():
    """`mirra dev --examples` applies the examples itself, from a directory
    without them: copies and Consul registrations appear with no kubectl."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [mirra_bin(), "dev", "--examples", "--kubeconfig-out", "kc"],
            cwd=tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            lines = []
            while not any(line.startswith("Press Ctrl-C") for line in lines):
                line = proc.stdout.readline()
                assert line, f"mirra dev ended early: {lines}"
                lines.append(line.strip())
            applied = [line for line in lines if line.startswith("applied ")]
            assert applied == [
                "applied Namespace team-a",
                "applied Namespace team-b",
                "applied Namespace sandbox",
                "applied SyncConfig team-defaults",
                "applied Service web",
                "applied EndpointSlice web-abc12",
                "applied Namespace platform",
                "applied Secret registry-pull",
                "applied SyncConfig pull-secret",
            ], lines
            # The hint no longer asks for a path that may not exist here.
            assert not any("kubectl apply -f examples/" in line for line in lines), lines
            consul_url = next(line for line in lines if line.startswith("consul api listening on "))
            env = dict(os.environ, KUBECONFIG=os.path.join(tmp, "kc"), KUBECACHEDIR=os.path.join(tmp, "cache"))

            def copies():
                p = subprocess.run(
                    ["kubectl", "get", "configmaps", "-A", "-l", "app.kubernetes.io/managed-by=mirra", "-o", "json"],
                    env=env, capture_output=True, text=True, timeout=60, check=True,
                )
                found = sorted(i["metadata"]["namespace"] for i in json.loads(p.stdout)["items"])
                return found if found == ["team-a", "team-b"] else None

            wait_for("copies in team-a and team-b", copies)

            def pull_secrets():
                p = subprocess.run(
                    ["kubectl", "get", "secrets", "-A", "-l", "app.kubernetes.io/managed-by=mirra", "-o", "json"],
                    env=env, capture_output=True, text=True, timeout=60, check=True,
                )
                items = json.loads(p.stdout)["items"]
                found = sorted((i["metadata"]["namespace"], i["metadata"]["name"], i["type"]) for i in items)
                want = [(ns, "registry-pull", "kubernetes.io/dockerconfigjson") for ns in ("team-a", "team-b")]
                return found if found == want else None

            # The copyItem: the pull secret of namespace platform in both.
            wait_for("the pull secret copied into team-a and team-b", pull_secrets)
            host, port = consul_url.removeprefix("consul api listening on http://").split(":")
            c = consul.Consul(host=host, port=int(port))

            def web_instances():
                _, nodes = c.catalog.service("web")
                return nodes if len(nodes) == 2 else None

            wait_for("two web instances in Consul", web_instances)
        finally:
            stop_process(proc)
