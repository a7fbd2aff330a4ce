"""Conformance of consul-sandbox with py-consul, a Consul client this project
did not write.

Each test drives the `mirra sandbox consul` process (fixture `consul_sandbox`)
through py-consul and checks what Consul's HTTP API documentation promises.
Where the sandbox and the documented behaviour disagree, the documentation
wins: the comments name the section of https://developer.hashicorp.com/consul/api-docs
that each assertion follows.
"""

import json
import subprocess
import sys
import urllib.request

import consul
import pytest

from conftest import HttpsServer, mirra_bin, wait_for, write_test_pki

# Generous bound for "soon": tests assert states, not durations.
SOON_SECONDS = 20


def client(server, token=None):
    host, port = server.addr.rsplit(":", 1)
    return consul.Consul(host=host, port=int(port), token=token)


def get_json(server, path):
    with urllib.request.urlopen(server.url + path, timeout=SOON_SECONDS) as resp:
        return json.loads(resp.read())


def stats(server):
    return get_json(server, "/v1/sandbox/stats")


def test_register_list_and_read_by_service_and_by_node(consul_sandbox):
    c = client(consul_sandbox)
    # catalog.mdx "Register Entity": PUT /v1/catalog/register; py-consul
    # returns True on 200.
    assert c.catalog.register(
        "k8s-sync",
        "127.0.0.1",
        service={"Service": "web", "ID": "web-1", "Tags": ["k8s"], "Port": 8080,
                 "Meta": {"external-source": "kubernetes"}},
        node_meta={"external-source": "kubernetes"},
    )

    # "List Services": a map of service name -> tags; every read carries
    # X-Consul-Index (py-consul raises if it is missing).
    index, services = c.catalog.services()
    assert int(index) > 0
    assert services["web"] == ["k8s"]
    # A Consul server registers itself as the "consul" service.
    assert "consul" in services

    # "List Nodes for Service": flattened ServiceNode entries.
    index, nodes = c.catalog.service("web")
    assert len(nodes) == 1
    entry = nodes[0]
    assert entry["Node"] == "k8s-sync"
    assert entry["Address"] == "127.0.0.1"
    assert entry["Datacenter"] == "dc1"
    assert entry["ServiceID"] == "web-1"
    assert entry["ServiceName"] == "web"
    assert entry["ServiceTags"] == ["k8s"]
    assert entry["ServicePort"] == 8080
    assert entry["ServiceMeta"] == {"external-source": "kubernetes"}
    # py-consul sends node_meta as a `node-meta` query parameter, which the
    # register endpoint does not read (catalog.mdx "Register Entity" takes
    # NodeMeta only in the JSON body), so Consul stores no node meta: null.
    assert entry["NodeMeta"] is None
    assert entry["ServiceWeights"] == {"Passing": 1, "Warning": 1}
    assert entry["ModifyIndex"] == int(index)

    # "Retrieve Map of Services for a Node": {Node, Services: {id: ...}}.
    _, node = c.catalog.node("k8s-sync")
    assert node["Node"]["Node"] == "k8s-sync"
    assert node["Services"]["web-1"]["Service"] == "web"
    assert node["Services"]["web-1"]["Port"] == 8080

    # "List Services for Node" (node-services): Services is a list.
    listing = get_json(consul_sandbox, "/v1/catalog/node-services/k8s-sync")
    assert listing["Node"]["Node"] == "k8s-sync"
    assert [s["ID"] for s in listing["Services"]] == ["web-1"]

    # py-consul sends lowercase JSON keys ("node", "service"); Consul's Go
    # decoder matches field names case-insensitively, and so must we.
    raw = urllib.request.Request(
        consul_sandbox.url + "/v1/catalog/register",
        data=json.dumps({"Node": "meta-node", "Address": "10.0.0.9",
                         "NodeMeta": {"zone": "a"}}).encode(),
        method="PUT",
    )
    urllib.request.urlopen(raw, timeout=SOON_SECONDS).read()
    _, meta_nodes = c.catalog.nodes(node_meta={"zone": "a"})
    assert [n["Node"] for n in meta_nodes] == ["meta-node"]

    # catalog tag filter ("tag" query parameter).
    _, tagged = c.catalog.service("web", tag="k8s")
    assert len(tagged) == 1
    _, untagged = c.catalog.service("web", tag="nope")
    assert untagged == []


def test_identical_registration_moves_no_index(consul_sandbox):
    c = client(consul_sandbox)
    svc = {"Service": "web", "ID": "web-1", "Port": 80}
    c.catalog.register("n1", "10.0.0.1", service=svc)
    first_index, first = c.catalog.service("web")
    before = stats(consul_sandbox)["raft_applies"]
    c.catalog.register("n1", "10.0.0.1", service=svc)
    second_index, second = c.catalog.service("web")
    # Each write is one Raft apply, but the state store skips identical
    # content, so ModifyIndex and X-Consul-Index stay put.
    assert stats(consul_sandbox)["raft_applies"] == before + 1
    assert second_index == first_index
    assert second[0]["ModifyIndex"] == first[0]["ModifyIndex"]


# The writer of the blocking-query test: a separate Python process with its
# own py-consul client, so the query is woken by a registration that reaches
# the sandbox over another connection from another process, as a real
# catalog change would. It waits until the query is parked on the server, so
# the answer can only come from its write, then registers once.
BLOCKING_WRITER = """
import json, sys, time, urllib.request
import consul

url, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
deadline = time.monotonic() + float(sys.argv[4])
def open_queries():
    with urllib.request.urlopen(url + "/v1/sandbox/stats", timeout=20) as resp:
        return json.loads(resp.read())["blocking_queries_open"]
while open_queries() != 1:
    if time.monotonic() > deadline:
        sys.exit("the blocking query never parked on the server")
    time.sleep(0.01)
ok = consul.Consul(host=host, port=port).catalog.register(
    "n1", "10.0.0.1", service={"Service": "web", "ID": "web-1", "Port": 81})
sys.exit(0 if ok else "register returned " + repr(ok))
"""


def test_blocking_query_returns_when_another_process_registers(consul_sandbox):
    c = client(consul_sandbox)
    c.catalog.register("n1", "10.0.0.1", service={"Service": "web", "ID": "web-1", "Port": 80})
    index, _ = c.catalog.service("web")
    applies = stats(consul_sandbox)["raft_applies"]

    host, port = consul_sandbox.addr.rsplit(":", 1)
    writer = subprocess.Popen(
        [sys.executable, "-c", BLOCKING_WRITER, consul_sandbox.url, host, port, str(SOON_SECONDS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # features/blocking.mdx: ?index=<X-Consul-Index>&wait=<duration>
        # holds the request until the index passes X or the wait ends. The
        # wait (60 s) is far longer than the writer's patience, so an answer
        # at the end of the wait fails the index assertion below.
        new_index, nodes = c.catalog.service("web", index=index, wait="60s")
    finally:
        try:
            out, err = writer.communicate(timeout=SOON_SECONDS)
        except subprocess.TimeoutExpired:
            writer.kill()
            out, err = writer.communicate()
    assert writer.returncode == 0, f"writer failed: {out}{err}"
    assert int(new_index) > int(index)
    assert nodes[0]["ServicePort"] == 81
    # The only write in between was the other process's register.
    assert stats(consul_sandbox)["raft_applies"] == applies + 1
    assert stats(consul_sandbox)["blocking_queries_open"] == 0


@pytest.fixture
def consul_https_sandbox(tmp_path):
    """A sandbox with an HTTPS listener beside the plain one (Consul's
    `ports.https` with `tls.defaults.cert_file`/`key_file`)."""
    pki = write_test_pki(str(tmp_path))
    server = HttpsServer([
        "sandbox", "consul", "--listen", "127.0.0.1:0", "--https-listen", "127.0.0.1:0",
        "--tls-cert-file", pki["cert"], "--tls-key-file", pki["key"],
    ])
    server.pki = pki
    try:
        yield server
    finally:
        server.stop()


def test_py_consul_over_https_reads_writes_and_blocks(consul_https_sandbox):
    """py-consul with `scheme="https"` and the CA as `verify`, as an operator
    would point it at Consul's port 8501; the long poll runs over TLS and is
    woken by a write on the plain port (one catalog behind both)."""
    sb = consul_https_sandbox
    host, port = sb.https_addr.rsplit(":", 1)
    c = consul.Consul(host=host, port=int(port), scheme="https", verify=sb.pki["ca"])
    assert c.catalog.register("n1", "10.0.0.1", service={"Service": "web", "ID": "web-1", "Port": 80})
    index, _ = c.catalog.service("web")

    plain_host, plain_port = sb.addr.rsplit(":", 1)
    writer = subprocess.Popen(
        [sys.executable, "-c", BLOCKING_WRITER, sb.url, plain_host, plain_port, str(SOON_SECONDS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        new_index, nodes = c.catalog.service("web", index=index, wait="60s")
    finally:
        try:
            out, err = writer.communicate(timeout=SOON_SECONDS)
        except subprocess.TimeoutExpired:
            writer.kill()
            out, err = writer.communicate()
    assert writer.returncode == 0, f"writer failed: {out}{err}"
    assert int(new_index) > int(index)
    assert nodes[0]["ServicePort"] == 81
    st = stats(sb)
    assert st["raft_applies"] == 2
    assert st["blocking_queries_total"] == 1
    assert st["tls_handshakes"] >= 1
    assert st["tls_handshakes_failed"] == 0

    # A client that trusts another CA is refused in the handshake, and the
    # sandbox counts it without answering anything.
    stranger = consul.Consul(host=host, port=int(port), scheme="https", verify=sb.pki["other_ca"])
    with pytest.raises(Exception) as refused:
        stranger.catalog.services()
    assert "certificate" in str(refused.value).lower(), refused.value
    # The client gives up as soon as it has checked the certificate; the
    # server's side of the handshake ends (and is counted) when the
    # client's alert or close reaches it, a moment later.
    wait_for("the refused handshake to be counted", lambda: stats(sb)["tls_handshakes_failed"] >= 1)
    assert stats(sb)["tls_handshakes_failed"] == 1


@pytest.mark.parametrize("which", ["cert", "key"])
@pytest.mark.parametrize("problem", ["missing", "not-pem"])
def test_bad_tls_files_stop_the_sandbox_naming_the_file(tmp_path, which, problem):
    pki = write_test_pki(str(tmp_path))
    bad = str(tmp_path / f"bad-{which}.pem")
    if problem == "not-pem":
        with open(bad, "w") as f:
            f.write("not a PEM file\n")
    files = dict(pki, **{which: bad})
    p = subprocess.run(
        [mirra_bin(), "sandbox", "consul", "--listen", "127.0.0.1:0",
         "--https-listen", "127.0.0.1:0",
         "--tls-cert-file", files["cert"], "--tls-key-file", files["key"]],
        capture_output=True, text=True, timeout=SOON_SECONDS,
    )
    assert p.returncode != 0
    assert bad in p.stderr, p.stderr
    assert "panicked" not in p.stderr, p.stderr
    # Nothing was announced: no parent waits on an address that will not answer.
    assert "listening on" not in p.stdout


def test_blocking_query_ends_with_the_same_index_when_nothing_changes(consul_sandbox):
    c = client(consul_sandbox)
    c.catalog.register("n1", "10.0.0.1", service={"Service": "web", "Port": 80})
    index, _ = c.catalog.service("web")
    # A change to another service must not wake a query on "web".
    c.catalog.register("n2", "10.0.0.2", service={"Service": "db", "Port": 5432})
    # blocking.mdx: "A blocking query ... returns when the wait time
    # elapses"; the index is then unchanged.
    new_index, nodes = c.catalog.service("web", index=index, wait="200ms")
    assert new_index == index
    assert len(nodes) == 1


def test_multi_port_registration_round_trips_through_py_consul(consul_sandbox):
    c = client(consul_sandbox)
    # The service definition reference (docs/reference/service) documents
    # `ports` as a list of {name, port, default} for service discovery
    # (Consul 1.22+); newer consul-k8s writes it with Port 0. In the
    # flattened /v1/catalog/service shape the sandbox names it ServicePorts,
    # after the Service prefix of the other instance fields there (no
    # documented example of that shape shows the field). py-consul's
    # catalog.register sends the service dict as given, so the list reaches
    # the server as a Python program would send it.
    ports = [{"Name": "http", "Port": 8080, "Default": True},
             {"Name": "grpc", "Port": 9090, "Default": False}]
    svc = {"Service": "web", "ID": "web-1", "Port": 0, "Ports": ports}
    assert c.catalog.register("k8s-sync", "127.0.0.1", service=svc)

    index, nodes = c.catalog.service("web")
    assert nodes[0]["ServicePort"] == 0
    assert nodes[0]["ServicePorts"] == ports
    _, entries = c.health.service("web")
    assert entries[0]["Service"]["Ports"] == ports
    _, node = c.catalog.node("k8s-sync")
    assert node["Services"]["web-1"]["Ports"] == ports

    # The same list again is an identical registration: one Raft apply, no
    # index moves. A changed list is a change.
    before = stats(consul_sandbox)["raft_applies"]
    assert c.catalog.register("k8s-sync", "127.0.0.1", service=svc)
    same_index, same = c.catalog.service("web")
    assert stats(consul_sandbox)["raft_applies"] == before + 1
    assert same_index == index
    assert same[0]["ModifyIndex"] == nodes[0]["ModifyIndex"]
    changed = dict(svc, Ports=ports[:1])
    assert c.catalog.register("k8s-sync", "127.0.0.1", service=changed)
    new_index, after = c.catalog.service("web")
    assert int(new_index) > int(index)
    assert after[0]["ServicePorts"] == ports[:1]

    # A malformed list is refused before Raft and changes nothing.
    bad = dict(svc, Ports=[{"Name": "http", "Port": "8080"}])
    applies = stats(consul_sandbox)["raft_applies"]
    with pytest.raises(consul.ConsulException) as err:
        c.catalog.register("k8s-sync", "127.0.0.1", service=bad)
    assert "400" in str(err.value)
    assert "Ports.Port of type int" in str(err.value)
    assert stats(consul_sandbox)["raft_applies"] == applies
    _, kept = c.catalog.service("web")
    assert kept[0]["ServicePorts"] == ports[:1]


def test_health_service_and_passing_filter(consul_sandbox):
    c = client(consul_sandbox)
    for node, status in (("n1", "passing"), ("n2", "critical")):
        c.catalog.register(
            node,
            "10.0.0.1",
            service={"Service": "web", "ID": "web", "Port": 80},
            check={"CheckID": "k8s", "Name": "Kubernetes Readiness Check",
                   "ServiceID": "web", "Status": status},
        )
    # health.mdx "List Service Instances for Service": [{Node, Service, Checks}].
    _, all_nodes = c.health.service("web")
    assert sorted(e["Node"]["Node"] for e in all_nodes) == ["n1", "n2"]
    assert all_nodes[0]["Checks"][0]["ServiceName"] == "web"
    _, passing = c.health.service("web", passing=True)
    assert [e["Node"]["Node"] for e in passing] == ["n1"]


def test_deregister_service_and_node(consul_sandbox):
    c = client(consul_sandbox)
    c.catalog.register("n1", "10.0.0.1", service={"Service": "web", "ID": "web-1"})
    c.catalog.register("n1", "10.0.0.1", service={"Service": "web", "ID": "web-2"})
    # catalog.mdx "Deregister Entity": ServiceID removes one instance.
    assert c.catalog.deregister("n1", service_id="web-1")
    _, nodes = c.catalog.service("web")
    assert [n["ServiceID"] for n in nodes] == ["web-2"]
    # Node alone removes the node with its services and checks.
    assert c.catalog.deregister("n1")
    _, nodes = c.catalog.service("web")
    assert nodes == []
    _, node = c.catalog.node("n1")
    assert node is None


def test_transaction_is_atomic_and_one_raft_apply(consul_sandbox):
    c = client(consul_sandbox)
    before = stats(consul_sandbox)["raft_applies"]
    ops = [{"Node": {"Verb": "set", "Node": {"Node": "k8s-sync", "Address": "127.0.0.1"}}}]
    ops += [
        {"Service": {"Verb": "set", "Node": "k8s-sync",
                     "Service": {"ID": f"web-{i}", "Service": "web", "Port": 8000 + i}}}
        for i in range(10)
    ]
    # txn.mdx "Create Transaction": 200 with Results and Errors null.
    result = c.txn.put(ops)
    assert result["Errors"] is None
    assert len(result["Results"]) == 11
    assert stats(consul_sandbox)["raft_applies"] == before + 1
    _, nodes = c.catalog.service("web")
    assert len(nodes) == 10

    # One stale CAS rolls the whole transaction back with 409 (py-consul
    # raises ClientError carrying the status and body).
    modify = nodes[0]["ModifyIndex"]
    with pytest.raises(consul.ConsulException) as failure:
        c.txn.put([
            {"Service": {"Verb": "delete", "Node": "k8s-sync", "Service": {"ID": "web-1", "Service": "web"}}},
            {"Service": {"Verb": "cas", "Node": "k8s-sync",
                         "Service": {"ID": "web-0", "Service": "web", "Port": 1, "ModifyIndex": modify + 999}}},
        ])
    message = str(failure.value)
    assert message.startswith("409")
    assert '"OpIndex":1' in message
    _, after = c.catalog.service("web")
    assert len(after) == 10, "the delete in the failed transaction was not applied"


def test_transaction_with_too_many_operations_is_413(consul_sandbox):
    c = client(consul_sandbox)
    # Consul 1.14 and later accept 128 operations (txn_endpoint.go maxTxnOps).
    ops = [{"Node": {"Verb": "set", "Node": {"Node": "n", "Address": "127.0.0.1"}}}]
    ops += [{"Service": {"Verb": "set", "Node": "n", "Service": {"Service": f"s{i}"}}} for i in range(128)]
    with pytest.raises(consul.ConsulException) as failure:
        c.txn.put(ops)
    assert str(failure.value).startswith("413")
    assert "Transaction contains too many operations (129 > 128)" in str(failure.value)
    assert c.txn.put(ops[:128])["Errors"] is None


def test_agent_self_and_status_leader(consul_sandbox):
    c = client(consul_sandbox)
    me = c.agent.self()
    assert me["Config"]["Datacenter"] == "dc1"
    assert me["Member"]["Name"] == me["Config"]["NodeName"]
    # status.mdx "Get Raft Leader": "<ip>:<port>" of the leader's RPC port.
    assert c.status.leader() == "127.0.0.1:8300"


ROOT_TOKEN = "py-root-secret"


@pytest.fixture
def consul_acl_sandbox():
    """A consul-sandbox with ACLs on (default deny) and a management token."""
    from conftest import Server

    server = Server([
        "sandbox", "consul", "--listen", "127.0.0.1:0",
        "--acl-default-policy", "deny",
        "--acl-initial-management-token", ROOT_TOKEN,
    ])
    try:
        yield server
    finally:
        server.stop()


def test_acl_policy_and_token_creation_and_a_denied_register(consul_acl_sandbox):
    c = client(consul_acl_sandbox)
    applies = stats(consul_acl_sandbox)["raft_applies"]
    # acl/policy.mdx "Create a Policy": py-consul sends the rules as JSON
    # text; Consul accepts JSON as well as HCL rules.
    policy = c.acl.policy.create(
        "sync-web",
        token=ROOT_TOKEN,
        description="write web on k8s-sync",
        rules={"node": {"k8s-sync": {"policy": "write"}},
               "service": {"web": {"policy": "write"}},
               "service_prefix": {"": {"policy": "read"}}},
    )
    assert policy["Name"] == "sync-web"
    assert policy["Description"] == "write web on k8s-sync"
    assert c.acl.policy.read(policy["ID"], token=ROOT_TOKEN)["Name"] == "sync-web"
    assert "sync-web" in [p["Name"] for p in c.acl.policy.list(token=ROOT_TOKEN)]

    # acl/token.mdx "Create a Token", linking the policy by ID.
    token = c.acl.token.create(token=ROOT_TOKEN, description="sync", policies_id=[policy["ID"]])
    secret = token["SecretID"]
    assert token["Policies"] == [{"ID": policy["ID"], "Name": "sync-web"}]
    me = c.acl.token.read_self(token=secret)
    assert me["AccessorID"] == token["AccessorID"]
    # Each ACL write (one policy, one token) is one Raft apply.
    assert stats(consul_acl_sandbox)["raft_applies"] == applies + 2

    scoped = client(consul_acl_sandbox, token=secret)
    assert scoped.catalog.register("k8s-sync", "10.0.0.1", service={"Service": "web"})
    # A service the token may not write: 403 with Consul's text, nothing stored.
    with pytest.raises(consul.ACLPermissionDenied) as denied:
        scoped.catalog.register("k8s-sync", "10.0.0.1", service={"Service": "db"})
    assert (f"Permission denied: token with AccessorID '{token['AccessorID']}' "
            "lacks permission 'service:write' on \"db\"") in str(denied.value)
    _, services = c.catalog.services(token=ROOT_TOKEN)
    assert "db" not in services
    assert stats(consul_acl_sandbox)["raft_applies"] == applies + 3

    # No token at all: the anonymous token, denied by default.
    anonymous = client(consul_acl_sandbox)
    with pytest.raises(consul.ACLPermissionDenied):
        anonymous.catalog.register("k8s-sync", "10.0.0.1", service={"Service": "web"})


def test_acl_bad_input_answers_like_consul(consul_acl_sandbox):
    c = client(consul_acl_sandbox)
    applies = stats(consul_acl_sandbox)["raft_applies"]
    with pytest.raises(consul.ConsulException) as bad:
        c.acl.policy.create("bad", token=ROOT_TOKEN,
                            rules={"service": {"web": {"policy": "sometimes"}}})
    assert "Invalid service policy" in str(bad.value)
    with pytest.raises(consul.ConsulException):
        c.acl.token.create(token=ROOT_TOKEN, policies_id=["00000000-0000-0000-0000-00000000abcd"])
    with pytest.raises(consul.ACLPermissionDenied):
        c.acl.policy.list(token="not-a-token")
    assert stats(consul_acl_sandbox)["raft_applies"] == applies


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


def kube_post(server, path, body):
    req = urllib.request.Request(
        server.url + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def sa_token(kube, name, audiences=None):
    spec = {"audiences": audiences} if audiences else {}
    out = kube_post(kube, f"/api/v1/namespaces/default/serviceaccounts/{name}/token", {"spec": spec})
    return out["status"]["token"]


def test_kubernetes_auth_method_login_and_logout(consul_acl_sandbox, kube_sandbox):
    """py-consul's auth-method, binding-rule, login and logout calls against
    a `kubernetes` auth method whose Host is a kube-sandbox."""
    for sa in ["web", "consul-auth"]:
        kube_post(kube_sandbox, "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": sa}})
    c = client(consul_acl_sandbox)
    root = ROOT_TOKEN
    method = c.acl.auth_method.create(
        "k8s",
        "kubernetes",
        token=root,
        config={"Host": kube_sandbox.url, "CACert": TEST_CA, "ServiceAccountJWT": sa_token(kube_sandbox, "consul-auth")},
    )
    assert method["Name"] == "k8s" and method["Config"]["Host"] == kube_sandbox.url
    assert [m["Name"] for m in c.acl.auth_method.list(token=root)] == ["k8s"]
    rule = c.acl.binding_rule.create(
        "k8s", "service", "${serviceaccount.name}", token=root, selector='serviceaccount.name == "web"'
    )
    assert rule["BindType"] == "service"
    assert [r["ID"] for r in c.acl.binding_rule.list(auth_method="k8s", token=root)] == [rule["ID"]]

    applies = stats(consul_acl_sandbox)["raft_applies"]
    login = c.acl.login("k8s", sa_token(kube_sandbox, "web"), meta={"pod": "web-0"})
    assert stats(consul_acl_sandbox)["raft_applies"] == applies + 1
    assert login["AuthMethod"] == "k8s"
    assert login["ServiceIdentities"] == [{"ServiceName": "web"}]
    secret = login["SecretID"]
    assert c.acl.token.read_self(token=secret)["AccessorID"] == login["AccessorID"]
    # The service identity may register `web`, not `db`.
    assert client(consul_acl_sandbox, token=root).catalog.register("n1", "10.0.0.1")
    assert client(consul_acl_sandbox, token=secret).catalog.register(
        "n1", "10.0.0.1", service={"Service": "web", "Port": 80}
    ) is True
    with pytest.raises(consul.ACLPermissionDenied):
        client(consul_acl_sandbox, token=secret).catalog.register(
            "n1", "10.0.0.1", service={"Service": "db", "Port": 80}
        )

    # A token for another audience: Consul's 500 with the review's error.
    tokens = len(c.acl.token.list(token=root))
    with pytest.raises(consul.ConsulException) as e:
        c.acl.login("k8s", sa_token(kube_sandbox, "web", audiences=["vault"]))
    assert "lookup failed: token audiences" in str(e.value)
    with pytest.raises(consul.ACLPermissionDenied):
        c.acl.login("k8s", sa_token(kube_sandbox, "consul-auth"))
    with pytest.raises(consul.ACLPermissionDenied):
        c.acl.logout(root)
    assert len(c.acl.token.list(token=root)) == tokens

    assert c.acl.logout(secret) is True
    with pytest.raises(consul.ACLPermissionDenied):
        c.acl.token.read_self(token=secret)
    assert c.acl.auth_method.delete("k8s", token=root) is True
    assert c.acl.binding_rule.list(token=root) == []
