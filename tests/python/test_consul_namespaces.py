"""consul-sandbox's Enterprise namespaces (`mirra sandbox consul --enterprise`)
driven through py-consul, a client this project did not write.

py-consul 1.8 has no namespace arguments on its catalog, health or txn
calls, so namespaces travel the ways its API leaves open: the
`Namespace` field of the service it sends as given, and the `ns` query
parameter on its own HTTP layer (`c.http.get` with `CB.json`). Sections
named are those of https://developer.hashicorp.com/consul/api-docs.
"""

import json
import urllib.error
import urllib.request

import consul
import pytest
from consul.callback import CB

from conftest import Server

SOON_SECONDS = 20


@pytest.fixture
def enterprise_sandbox():
    server = Server(["sandbox", "consul", "--listen", "127.0.0.1:0", "--enterprise"])
    try:
        yield server
    finally:
        server.stop()


def client(server):
    host, port = server.addr.rsplit(":", 1)
    return consul.Consul(host=host, port=int(port))


def request(server, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=SOON_SECONDS) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def raft_applies(server):
    return json.loads(request(server, "GET", "/v1/sandbox/stats")[1])["raft_applies"]


def services_in(c, ns):
    _, services = c.http.get(CB.json(index=True), "/v1/catalog/services", params=[("ns", ns)])
    return services


def test_services_registered_into_a_namespace_stay_there(enterprise_sandbox):
    c = client(enterprise_sandbox)
    # namespaces.mdx "Create a Namespace": PUT /v1/namespace, one write.
    before = raft_applies(enterprise_sandbox)
    status, body = request(enterprise_sandbox, "PUT", "/v1/namespace", {"Name": "team"})
    assert status == 200, body
    assert json.loads(body)["Name"] == "team"
    assert raft_applies(enterprise_sandbox) == before + 1

    # catalog.mdx "Register Entity": Service.Namespace places the instance.
    assert c.catalog.register(
        "k8s-sync", "127.0.0.1", service={"Service": "db", "ID": "db-1", "Namespace": "team"}
    )
    assert c.catalog.register("k8s-sync", "127.0.0.1", service={"Service": "web", "ID": "web-1"})
    assert raft_applies(enterprise_sandbox) == before + 3

    # Without ns the default namespace is read; ns=team reads team only,
    # ns=* every namespace.
    _, default = c.catalog.services()
    assert "web" in default and "db" not in default
    assert services_in(c, "team") == {"db": []}
    everything = services_in(c, "*")
    assert "db" in everything and "web" in everything

    # Answers carry the namespace and partition, as Consul Enterprise's do.
    _, nodes = c.http.get(CB.json(index=True), "/v1/catalog/service/db", params=[("ns", "team")])
    assert nodes[0]["Namespace"] == "team"
    assert nodes[0]["Partition"] == "default"
    _, health = c.health.service("db")
    assert health == [], "db is not in the default namespace"


def test_unknown_and_malformed_namespaces_change_nothing(enterprise_sandbox):
    c = client(enterprise_sandbox)
    before = raft_applies(enterprise_sandbox)
    with pytest.raises(consul.ConsulException):
        c.catalog.register("n1", "127.0.0.1", service={"Service": "x", "Namespace": "ghost"})
    with pytest.raises(consul.ConsulException):
        c.catalog.register("n1", "127.0.0.1", service={"Service": "x", "Namespace": "Bad_Name"})
    status, _ = request(enterprise_sandbox, "PUT", "/v1/namespace", {"Name": "bad_name"})
    assert status == 400
    status, _ = request(enterprise_sandbox, "PUT", "/v1/namespace", None)
    assert status == 400
    assert raft_applies(enterprise_sandbox) == before
    # An unknown namespace reads as empty.
    assert services_in(c, "ghost") == {}


def test_txn_service_ops_name_their_namespace(enterprise_sandbox):
    c = client(enterprise_sandbox)
    request(enterprise_sandbox, "PUT", "/v1/namespace", {"Name": "team"})
    before = raft_applies(enterprise_sandbox)
    # txn.mdx: Service ops carry the service definition, Namespace included.
    result = c.txn.put([
        {"Node": {"Verb": "set", "Node": {"Node": "n1", "Address": "10.0.0.1"}}},
        {"Service": {"Verb": "set", "Node": "n1",
                     "Service": {"ID": "db-1", "Service": "db", "Namespace": "team"}}},
    ])
    assert result["Results"][1]["Service"]["Namespace"] == "team"
    assert raft_applies(enterprise_sandbox) == before + 1
    assert services_in(c, "team") == {"db": []}


def test_without_enterprise_it_answers_as_consul_ce(consul_sandbox):
    c = client(consul_sandbox)
    # Consul CE has no namespace endpoints and refuses a namespace other
    # than default.
    status, _ = request(consul_sandbox, "GET", "/v1/namespaces")
    assert status == 404
    with pytest.raises(consul.ConsulException):
        services_in(c, "team")
    assert "consul" in services_in(c, "default")
