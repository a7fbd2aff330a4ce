"""kube-sandbox checked with the official Python client (`kubernetes`)."""

import json
import re
import threading

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException


@pytest.fixture
def core(kube_sandbox):
    api_client = config.new_client_from_config(config_file=kube_sandbox.kubeconfig)
    yield client.CoreV1Api(api_client)
    api_client.close()


def cm(name, data=None, labels=None):
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels=labels), data=data or {}
    )


def test_list_then_watch_receives_every_change_in_order(core):
    listed = core.list_namespaced_config_map("default")
    rv = listed.metadata.resource_version
    expected = []
    for i in range(5):
        core.create_namespaced_config_map("default", cm(f"c{i}"))
        expected.append(("ADDED", f"c{i}"))
    core.patch_namespaced_config_map("c1", "default", {"data": {"k": "v"}})
    expected.append(("MODIFIED", "c1"))
    core.delete_namespaced_config_map("c3", "default")
    expected.append(("DELETED", "c3"))

    seen = []
    w = watch.Watch()
    for event in w.stream(
        core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5
    ):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == len(expected):
            w.stop()
    assert seen == expected
    # Revisions increase along the stream.


def test_watch_sees_a_change_made_concurrently(core):
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    w = watch.Watch()

    def later():
        core.create_namespaced_config_map("default", cm("late"))

    t = threading.Timer(0.2, later)
    t.start()
    try:
        for event in w.stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=10
        ):
            assert event["type"] == "ADDED"
            assert event["object"].metadata.name == "late"
            w.stop()
    finally:
        t.cancel()


def test_watch_after_compaction_gets_410(core, kube_sandbox):
    import urllib.request

    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", cm("x"))
    req = urllib.request.Request(kube_sandbox.url + "/sandbox/faults/compact", method="POST")
    urllib.request.urlopen(req).read()
    with pytest.raises(ApiException) as err:
        for _ in watch.Watch().stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5
        ):
            pass
    assert err.value.status == 410


def test_pagination_returns_every_object_once(core):
    names = {f"p{i:02d}" for i in range(23)}
    for n in names:
        core.create_namespaced_config_map("default", cm(n))
    seen = []
    token = None
    pages = 0
    while True:
        page = core.list_namespaced_config_map("default", limit=5, _continue=token)
        pages += 1
        assert len(page.items) <= 5
        seen.extend(i.metadata.name for i in page.items)
        token = page.metadata._continue
        if not token:
            break
    assert sorted(seen) == sorted(names)
    assert len(seen) == len(set(seen))
    assert pages == 5


def test_errors_are_status_objects(core):
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("missing", "default")
    assert err.value.status == 404
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", cm("Bad_Name"))
    assert err.value.status == 422
    core.create_namespaced_config_map("default", cm("dup"))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", cm("dup"))
    assert err.value.status == 409


def test_label_selectors(core):
    core.create_namespaced_config_map("default", cm("a", labels={"env": "prod", "team": "x"}))
    core.create_namespaced_config_map("default", cm("b", labels={"env": "dev"}))
    core.create_namespaced_config_map("default", cm("c"))

    def names(sel):
        return sorted(
            i.metadata.name
            for i in core.list_namespaced_config_map("default", label_selector=sel).items
        )

    assert names("env=prod") == ["a"]
    assert names("env in (prod,dev)") == ["a", "b"]
    assert names("env notin (prod)") == ["b", "c"]
    assert names("!env") == ["c"]
    assert names("team,env!=dev") == ["a"]


def test_history_window_set_on_the_command_line(start_kube_sandbox):
    server = start_kube_sandbox("--history", "3")
    api_client = config.new_client_from_config(config_file=server.kubeconfig)
    try:
        core = client.CoreV1Api(api_client)
        core.create_namespaced_config_map("default", cm("a"))
        core.create_namespaced_config_map("default", cm("b"))
        page = core.list_namespaced_config_map("default", limit=1)
        rv, token = page.metadata.resource_version, page.metadata._continue
        write = lambda i: core.patch_namespaced_config_map("a", "default", {"data": {"i": str(i)}})

        # Three writes fit the window: the watch replays them all and the
        # continue token still pages.
        for i in range(3):
            write(i)
        seen = []
        w = watch.Watch()
        for event in w.stream(
            core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5
        ):
            seen.append((event["type"], event["object"].data["i"]))
            if len(seen) == 3:
                w.stop()
        assert seen == [("MODIFIED", "0"), ("MODIFIED", "1"), ("MODIFIED", "2")]
        assert [c.metadata.name for c in core.list_namespaced_config_map(
            "default", limit=1, _continue=token).items] == ["b"]

        # A fourth moves the window past the list's revision: 410 for both.
        write(3)
        with pytest.raises(ApiException) as err:
            for _ in watch.Watch().stream(
                core.list_namespaced_config_map, "default", resource_version=rv, timeout_seconds=5
            ):
                pass
        assert err.value.status == 410
        with pytest.raises(ApiException) as err:
            core.list_namespaced_config_map("default", limit=1, _continue=token)
        assert err.value.status == 410
    finally:
        api_client.close()


def test_state_file_keeps_objects_across_a_process_restart(start_kube_sandbox, tmp_path):
    """`mirra sandbox kube --state-file` saves on SIGTERM and loads at start:
    objects come back with their uid and resourceVersion, and a watch from
    a revision older than the restart is answered 410."""
    k8s, k8s_config = client, config
    state = str(tmp_path / "kube.json")
    first = start_kube_sandbox("--state-file", state)
    api = k8s_config.new_client_from_config(config_file=first.kubeconfig)
    core = k8s.CoreV1Api(api)
    ns = core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="kept")))
    cm = core.create_namespaced_config_map(
        "kept", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="c"), data={"k": "v"})
    )
    api.close()
    first.stop()
    assert first.proc.returncode == 0

    second = start_kube_sandbox("--state-file", state)
    api = k8s_config.new_client_from_config(config_file=second.kubeconfig)
    core = k8s.CoreV1Api(api)
    again = core.read_namespaced_config_map("c", "kept")
    assert again.metadata.uid == cm.metadata.uid
    assert again.metadata.resource_version == cm.metadata.resource_version
    assert again.data == {"k": "v"}
    # A watch from before the ConfigMap was written cannot be served from a
    # history the restart did not keep: the client raises the 410 the server
    # sends inside the stream.
    with pytest.raises(ApiException) as e:
        for _ in watch.Watch().stream(
            core.list_namespaced_config_map, "kept",
            resource_version=ns.metadata.resource_version, timeout_seconds=5,
        ):
            pass
    api.close()
    assert e.value.status == 410


def test_rbac_tokens_roles_and_the_servers_refusals(start_kube_sandbox):
    """`mirra sandbox kube --rbac` with the official client: the admin of
    the written kubeconfig, a user of a static token, and a token nobody
    issued, reading the server's 401 and 403, over plain HTTP (kubectl's
    check, over HTTPS, is in test_kubectl.py)."""
    server = start_kube_sandbox("--rbac", "--token", "dev-token=dev,developers")
    admin_client = config.new_client_from_config(config_file=server.kubeconfig)
    admin = client.CoreV1Api(admin_client)
    admin.create_namespaced_config_map("default", cm("settings", {"a": "1"}))
    rbac = client.RbacAuthorizationV1Api(admin_client)
    names = [b.metadata.name for b in rbac.list_cluster_role_binding().items]
    assert "cluster-admin" in names and "system:discovery" in names

    def as_token(token):
        # The same kubeconfig with another user's token.
        with open(server.kubeconfig) as f:
            text = f.read()
        path = f"{server.kubeconfig}-{token}"
        with open(path, "w") as f:
            f.write(re.sub(r"token: \S+", f"token: {token}", text))
        return config.new_client_from_config(config_file=path)

    dev_client = as_token("dev-token")
    dev = client.CoreV1Api(dev_client)
    with pytest.raises(ApiException) as denied:
        dev.list_namespaced_config_map("default")
    assert denied.value.status == 403
    body = json.loads(denied.value.body)
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        'configmaps is forbidden: User "dev" cannot list resource "configmaps" '
        'in API group "" in the namespace "default"')

    rbac.create_namespaced_role("default", client.V1Role(
        metadata=client.V1ObjectMeta(name="cm-reader"),
        rules=[client.V1PolicyRule(api_groups=[""], resources=["configmaps"], verbs=["get", "list"])]))
    rbac.create_namespaced_role_binding("default", client.V1RoleBinding(
        metadata=client.V1ObjectMeta(name="developers"),
        role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name="cm-reader"),
        subjects=[client.RbacV1Subject(kind="Group", name="developers",
                                       api_group="rbac.authorization.k8s.io")]))
    assert [c.metadata.name for c in dev.list_namespaced_config_map("default").items] == ["settings"]
    with pytest.raises(ApiException) as elsewhere:
        dev.list_namespaced_config_map("kube-system")
    assert 'in the namespace "kube-system"' in json.loads(elsewhere.value.body)["message"]

    forged_client = as_token("nobody-issued-this")
    with pytest.raises(ApiException) as forged:
        client.CoreV1Api(forged_client).list_namespaced_config_map("default")
    assert forged.value.status == 401
    assert json.loads(forged.value.body)["reason"] == "Unauthorized"
    for c in (admin_client, dev_client, forged_client):
        c.close()
