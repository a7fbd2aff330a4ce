"""Start-up with something missing: no CRD, RBAC refusing a watch, an API
server or Consul that cannot be reached. mirra must say what is missing and
how to fix it, stay alive and unready, keep retrying, and become ready on
its own once the problem is fixed: never exit, never a stack trace."""

import json
import os
import socket
import subprocess
import tempfile
import textwrap
import urllib.error
import urllib.request

import pytest

from conftest import Server, mirra_bin, stop_process, wait_for

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
    """
)

SYNCCONFIG = textwrap.dedent(
    """
    apiVersion: sync.appuio.ch/v1alpha1
    kind: SyncConfig
    metadata:
      name: defaults
      namespace: mirra-system
    spec:
      namespaceSelector:
        matchNames: [team-a]
      syncItems:
      - apiVersion: v1
        kind: ConfigMap
        metadata:
          name: info
        data:
          project: ${PROJECT_NAME}
    """
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_status(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


class Mirra:
    """`mirra ARGS` with its log in a file, so that a test reads the log
    while the process keeps running."""

    def __init__(self, args, env):
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [mirra_bin(), *args],
            env=dict(env, NO_COLOR="1"),
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            text=True,
        )

    def text(self):
        with open(self.log.name, encoding="utf-8") as f:
            return f.read()

    def wait_for_log(self, *needles):
        return wait_for(
            f"a log line with {needles}",
            lambda: next(
                (line for line in self.text().splitlines() if all(n in line for n in needles)),
                None,
            ),
        )

    def assert_alive_without_panic(self):
        assert self.proc.poll() is None, f"mirra exited:\n{self.text()}"
        text = self.text()
        assert "panicked" not in text and "stack backtrace" not in text, text

    def stop(self):
        stop_process(self.proc)
        os.unlink(self.log.name)


@pytest.fixture
def start_mirra():
    started = []

    def start(args, env):
        m = Mirra(args, env)
        started.append(m)
        return m

    try:
        yield start
    finally:
        for m in started:
            m.stop()


def run_args(health, metrics):
    return [
        "run", "--watch-namespace", "mirra-system",
        # Short retries, so that the fix is noticed within the test's wait.
        "--watch-retry-initial-ms", "100", "--watch-retry-max-ms", "1000",
        "--health-addr", f"127.0.0.1:{health}", "--metrics-addr", f"127.0.0.1:{metrics}",
    ]


def copy_in(kubectl, ns):
    p = kubectl("get", "configmap", "info", "-n", ns, "-o", "json", check=False)
    return json.loads(p.stdout) if p.returncode == 0 else None


def test_a_missing_crd_is_named_and_installing_it_is_enough(kubectl, start_mirra):
    kubectl("apply", "-f", "-", input=SETUP)
    health, metrics = free_port(), free_port()
    mirra = start_mirra(run_args(health, metrics), kubectl.env)

    line = mirra.wait_for_log("syncconfigs.sync.appuio.ch is not served")
    assert "install the SyncConfig CustomResourceDefinition" in line, line
    assert "deploy/crd/syncconfig.yaml" in line, line
    # Retried with a growing delay: a later attempt is logged as such.
    mirra.wait_for_log("syncconfigs.sync.appuio.ch is not served", "attempt=3")
    assert http_status(f"http://127.0.0.1:{health}/readyz") == 503
    assert http_status(f"http://127.0.0.1:{health}/healthz") == 200
    mirra.assert_alive_without_panic()

    crds = subprocess.run([mirra_bin(), "crds"], capture_output=True, text=True, check=True)
    kubectl("apply", "-f", "-", input=crds.stdout)
    wait_for("readiness once the CRD is installed",
             lambda: http_status(f"http://127.0.0.1:{health}/readyz") == 200)
    kubectl("apply", "-f", "-", input=SYNCCONFIG)
    cm = wait_for("the copy in team-a", lambda: copy_in(kubectl, "team-a"))
    assert cm["data"] == {"project": "team-a"}
    mirra.assert_alive_without_panic()


def test_a_watch_refused_by_rbac_names_the_rule_and_recovers(kube_sandbox, kubectl, start_mirra):
    crds = subprocess.run([mirra_bin(), "crds"], capture_output=True, text=True, check=True)
    kubectl("apply", "-f", "-", input=crds.stdout)
    kubectl("apply", "-f", "-", input=SETUP)
    faults = f"{kube_sandbox.url}/sandbox/faults"
    rule = {"verb": "list", "resource": "syncconfigs.sync.appuio.ch", "status": 403}
    req = urllib.request.Request(faults, data=json.dumps(rule).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=5).close()

    health, metrics = free_port(), free_port()
    mirra = start_mirra(run_args(health, metrics), kubectl.env)
    line = mirra.wait_for_log("may not list and watch syncconfigs.sync.appuio.ch")
    # The API server's own words, and where the rule is.
    assert "forbidden" in line, line
    assert "deploy/mirror/rbac.yaml" in line, line
    assert http_status(f"http://127.0.0.1:{health}/readyz") == 503
    mirra.assert_alive_without_panic()

    urllib.request.urlopen(urllib.request.Request(faults, method="DELETE"), timeout=5).close()
    wait_for("readiness once RBAC allows the list",
             lambda: http_status(f"http://127.0.0.1:{health}/readyz") == 200)
    mirra.assert_alive_without_panic()


def test_an_unreachable_api_server_is_named_and_retried(start_mirra, tmp_path):
    closed = free_port()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(textwrap.dedent(f"""
        apiVersion: v1
        kind: Config
        clusters:
        - name: gone
          cluster: {{server: "http://127.0.0.1:{closed}"}}
        contexts:
        - name: gone
          context: {{cluster: gone, user: gone}}
        current-context: gone
        users:
        - name: gone
          user: {{token: unused}}
    """))
    health, metrics = free_port(), free_port()
    mirra = start_mirra(run_args(health, metrics), dict(os.environ, KUBECONFIG=str(kubeconfig)))
    line = mirra.wait_for_log("cannot reach the Kubernetes API server", "attempt=3")
    # The cause under kube's "client error (Connect)" is in the line.
    assert "Connection refused" in line or "connection refused" in line, line
    assert "check KUBECONFIG" in line, line
    assert http_status(f"http://127.0.0.1:{health}/readyz") == 503
    assert http_status(f"http://127.0.0.1:{health}/healthz") == 200
    # kube's own one-line-per-request error is not repeated beside it.
    assert "kube_client" not in mirra.text()
    mirra.assert_alive_without_panic()


def test_sync_catalog_waits_for_consul_and_says_where_it_looked(kube_sandbox, kubectl, start_mirra):
    consul_port = free_port()
    listen = free_port()
    env = dict(kubectl.env, CONSUL_HTTP_ADDR=f"127.0.0.1:{consul_port}")
    mirra = start_mirra(
        ["sync-catalog", f"-listen=127.0.0.1:{listen}", "-metrics-port", str(free_port()),
         "-k8s-write-namespace", "default"],
        env,
    )
    line = mirra.wait_for_log("cannot connect to Consul")
    assert f"127.0.0.1:{consul_port}" in line, line
    # consul-k8s's answers: 500 while not ready, 204 once ready.
    assert http_status(f"http://127.0.0.1:{listen}/health/ready") == 500
    mirra.assert_alive_without_panic()

    consul = Server(["sandbox", "consul", "--listen", f"127.0.0.1:{consul_port}"])
    try:
        wait_for("readiness once Consul answers",
                 lambda: http_status(f"http://127.0.0.1:{listen}/health/ready") == 204)
        mirra.assert_alive_without_panic()
    finally:
        consul.stop()


def test_sync_catalog_names_the_rbac_rule_of_a_refused_watch(kube_sandbox, kubectl, consul_sandbox,
                                                            start_mirra):
    faults = f"{kube_sandbox.url}/sandbox/faults"
    rule = {"verb": "list", "resource": "endpointslices.discovery.k8s.io", "status": 403}
    req = urllib.request.Request(faults, data=json.dumps(rule).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=5).close()
    listen = free_port()
    env = dict(kubectl.env, CONSUL_HTTP_ADDR=consul_sandbox.addr)
    mirra = start_mirra(
        ["sync-catalog", f"-listen=127.0.0.1:{listen}", "-metrics-port", str(free_port())],
        env,
    )
    line = mirra.wait_for_log("may not list and watch endpointslices.discovery.k8s.io")
    assert "deploy/catalog/rbac.yaml" in line, line
    assert http_status(f"http://127.0.0.1:{listen}/health/ready") == 500
    mirra.assert_alive_without_panic()
    urllib.request.urlopen(urllib.request.Request(faults, method="DELETE"), timeout=5).close()
    wait_for("readiness once RBAC allows the list",
             lambda: http_status(f"http://127.0.0.1:{listen}/health/ready") == 204, timeout=90)
